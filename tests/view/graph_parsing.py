"""Readers of the DOT and Mermaid that ``unfurl graph`` writes, for the tests: each reads
the text back the way Graphviz or Mermaid would (quotes, escapes, entities), so a test
asserts on what a person would see, not on the characters written."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

DOT_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|->|[{}\[\];,=]|[^\s{}\[\];,="]+', re.S)


@dataclass
class Parsed:
    #: node name (as shown) -> its attributes (label lines, colours...)
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    #: (source, target, attributes), names as shown
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    #: cluster/subgraph title -> the node names inside it
    clusters: dict[str, list[str]] = field(default_factory=dict)

    def label_lines(self, name: str) -> list[str]:
        return self.nodes[name]["label"].split("\n")

    def edge(self, source: str, target: str) -> dict[str, str]:
        found = [attrs for s, t, attrs in self.edges if (s, t) == (source, target)]
        assert len(found) == 1, (source, target, self.edges)
        return found[0]


def _dot_id(token: str) -> str:
    """An id as Graphviz reads it: in a quoted id only \\" is an escape."""
    if token.startswith('"'):
        return token[1:-1].replace('\\"', '"')
    return token


def _dot_label(token: str) -> str:
    """A label (escString) as Graphviz shows it: \\\\ \\" \\n decoded, then entities."""
    body = token[1:-1] if token.startswith('"') else token
    out, i = [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "l": "\n", "r": "\n"}.get(nxt, nxt))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return html.unescape("".join(out))


def parse_dot(text: str) -> Parsed:
    tokens = DOT_TOKEN.findall(text)
    assert tokens[:2] == ["digraph", "topology"] and tokens[2] == "{", tokens[:3]
    parsed = Parsed()
    ids: dict[str, str] = {}  # DOT id -> name shown (the label's first line)
    raw_edges: list[tuple[str, str, dict[str, str]]] = []
    stack: list[str | None] = []
    i = 3
    while i < len(tokens):
        token = tokens[i]
        if token == "}":
            stack.pop() if stack else None
            i += 1
            continue
        if token == "subgraph":
            i += 2
            assert tokens[i] == "{"
            stack.append(None)
            i += 1
            continue
        if token in ("graph", "node", "edge"):
            attrs, i = _attrs(tokens, i + 1)
            if token == "graph" and stack and "label" in attrs:
                stack[-1] = attrs["label"]
                parsed.clusters[attrs["label"]] = []
            continue
        if token == ";":
            i += 1
            continue
        first = _dot_id(token)
        if tokens[i + 1] == "->":
            second = _dot_id(tokens[i + 2])
            attrs, i = _attrs(tokens, i + 3)
            raw_edges.append((first, second, attrs))
            continue
        attrs, i = _attrs(tokens, i + 1)
        name = attrs["label"].split("\n")[0]
        ids[first] = name
        parsed.nodes[name] = attrs
        for title in stack:
            if title is not None:
                parsed.clusters[title].append(name)
    parsed.edges = [(ids[s], ids[t], a) for s, t, a in raw_edges]
    return parsed


def _attrs(tokens: list[str], i: int) -> tuple[dict[str, str], int]:
    attrs: dict[str, str] = {}
    if i < len(tokens) and tokens[i] == "[":
        i += 1
        while tokens[i] != "]":
            if tokens[i] == ",":
                i += 1
                continue
            key, eq, value = tokens[i], tokens[i + 1], tokens[i + 2]
            assert eq == "=", tokens[i: i + 3]
            attrs[key] = _dot_label(value)
            i += 3
        i += 1
    if i < len(tokens) and tokens[i] == ";":
        i += 1
    return attrs, i


MERMAID_NODE = re.compile(r'^\s*(n\d+)(?:\["(.*)"\]|\("(.*)"\))\s*$')
MERMAID_EDGE = re.compile(r'^\s*(n\d+) (==>|-\.->|-->)\|"(.*)"\| (n\d+)\s*$')
MERMAID_SUBGRAPH = re.compile(r'^\s*subgraph (\S+) \["(.*)"\]\s*$')
MERMAID_CLASSDEF = re.compile(r"^\s*classDef (\S+) (.*)$")
MERMAID_CLASS = re.compile(r"^\s*class (\S+) (\S+)$")


def mermaid_text(label: str) -> str:
    """A quoted Mermaid label as shown: <br/> breaks, #code; entities (then HTML's)."""
    label = label.replace("<br/>", "\n")
    label = re.sub(r"#(\w+);", lambda m: f"&#{m[1]};" if m[1].isdigit() else f"&{m[1]};", label)
    return html.unescape(label)


def parse_mermaid(text: str) -> Parsed:
    lines = text.splitlines()
    assert lines[0] == "flowchart TB"
    parsed = Parsed()
    names: dict[str, str] = {}
    class_styles: dict[str, str] = {}
    stack: list[str] = []
    for line in lines[1:]:
        if m := MERMAID_SUBGRAPH.match(line):
            title = mermaid_text(m[2])
            stack.append(title)
            parsed.clusters[title] = []
        elif line.strip() == "end":
            stack.pop()
        elif m := MERMAID_NODE.match(line):
            label = mermaid_text(m[2] if m[2] is not None else m[3])
            name = label.split("\n")[0]
            names[m[1]] = name
            parsed.nodes[name] = {"label": label, "shape": "box" if m[2] is not None else "round"}
            for title in stack:
                parsed.clusters[title].append(name)
        elif m := MERMAID_EDGE.match(line):
            parsed.edges.append(
                (names[m[1]], names[m[4]], {"label": mermaid_text(m[3]), "arrow": m[2]})
            )
        elif m := MERMAID_CLASSDEF.match(line):
            class_styles[m[1]] = m[2]
        elif m := MERMAID_CLASS.match(line):
            style = dict(part.split(":", 1) for part in class_styles[m[2]].split(","))
            for member in m[1].split(","):
                parsed.nodes[names[member]]["fillcolor"] = style["fill"]
                parsed.nodes[names[member]]["class"] = m[2]
        elif line.strip().startswith("linkStyle"):
            continue
        else:
            raise AssertionError(f"unexpected Mermaid line: {line!r}")
    return parsed
