"""Hypothesis strategies for ensembles written in the many YAML layouts users write:
block and flow collections, every quoting style, comments, anchors, aliases and merge
keys, plain scalars holding ``:`` and ``#``, unicode escapes, document markers, CRLF, a
byte order mark.

A document is drawn as a small tree (:class:`Map`, :class:`Seq`, :class:`Scalar`,
:class:`Alias`) together with the data it means, then laid out as text; the test checks
that the text reads back as that data, so a generator bug shows up as one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

#: plain scalars that stay strings under YAML 1.2 in block context (``:`` and ``#``
#: inside, URLs, unicode); those without , [ ] { } are plain in flow context too
PLAIN_BLOCK = ["https://example.com/a?b=c", "tosca:Root", "a#b", "a:b:c", "C# and F#",
               "::root::inputs::cpus", "50%", "x=y", "café", "日本語", "key::value",
               "yes", "on", "no-way", "v1.2.3", "a, b", "x[y]", "https://"]
PLAIN_FLOW = [s for s in PLAIN_BLOCK if not any(c in s for c in ",[]{}")]
KEYS = ["urls", "c", "x-y", "a:b", "key with space", "name", "ünï", "k#1", "port"]
TEXTS = ["it's", 'say "hi"', "back\\slash", "tab\there", "line\nbreak", " lead", "trail ",
         "# not a comment", ": colon", "- dash", "", "null", "123", "true", "é😀",
         "https://x, y", "{braces}", "&amp", "*star", "!bang", "%pct", "@at", "`tick`"]


@dataclass
class Scalar:
    value: Any
    style: str  # plain, single, double, escaped (double with \\u escapes), literal
    anchor: str | None = None


@dataclass
class Map:
    items: list[tuple[str, Any]]
    flow: bool = False
    anchor: str | None = None
    comments: bool = False
    merge: str | None = None  # ``<<: *merge`` first (block maps only)
    merged: dict[str, Any] = field(default_factory=dict)


@dataclass
class Seq:
    items: list[Any]
    flow: bool = False
    anchor: str | None = None


@dataclass
class Alias:
    name: str
    data: Any


def data(node: Any) -> Any:
    """What the node means once read."""
    if isinstance(node, Scalar):
        return node.value
    if isinstance(node, Alias):
        return node.data
    if isinstance(node, Seq):
        return [data(i) for i in node.items]
    return {**node.merged, **{k: data(v) for k, v in node.items}}


# ------------------------------------------------------------------------------ drawing


@st.composite
def scalars(draw: st.DrawFn, flow: bool) -> Scalar:
    kind = draw(st.sampled_from(["plain", "plain", "single", "double", "escaped", "number",
                                 "bool", "literal"]))
    if kind == "number":
        return Scalar(draw(st.integers(-10**6, 10**6)), "plain")
    if kind == "bool":
        return Scalar(draw(st.booleans()), "plain")
    if kind == "plain":
        return Scalar(draw(st.sampled_from(PLAIN_FLOW if flow else PLAIN_BLOCK)), "plain")
    if kind == "literal" and not flow:
        lines = draw(st.lists(st.sampled_from(["first", "a: b", "# x", "é", "x  y"]),
                              min_size=1, max_size=3))
        return Scalar("\n".join(lines) + "\n", "literal")
    text = draw(st.sampled_from(TEXTS) | st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn", "Co", "Zl", "Zp")),
        max_size=12))
    if kind == "escaped" and draw(st.booleans()):
        text += "\ud800"  # not valid text: YAML's escape of a lone surrogate
    style = "single" if kind == "single" and "\n" not in text and "\t" not in text \
        else "escaped" if kind == "escaped" else "double"
    return Scalar(text, style)


def values(flow: bool, depth: int) -> st.SearchStrategy[Any]:
    leaf = scalars(flow)
    if depth <= 0:
        return leaf
    return st.one_of(leaf, leaf, maps(flow, depth - 1), seqs(flow, depth - 1))


@st.composite
def maps(draw: st.DrawFn, flow: bool, depth: int) -> Map:
    flow = flow or draw(st.booleans())
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=3))
    return Map([(k, draw(values(flow, depth))) for k in keys], flow=flow,
               comments=not flow and draw(st.booleans()))


@st.composite
def seqs(draw: st.DrawFn, flow: bool, depth: int) -> Seq:
    flow = flow or draw(st.booleans())
    return Seq(draw(st.lists(values(flow, depth), max_size=3)), flow=flow)


@dataclass
class Layout:
    indent: int  # 2 or 4
    indent_sequences: bool  # ``- `` under a key indented, or at the key's column
    spaces_in_flow: bool  # ``{ a: b }`` or ``{a: b}``
    crlf: bool
    markers: str  # "", "---" or "%YAML"
    comments: bool
    top: str  # "block"; "flow": the whole document is one flow mapping
    tail: str  # "", "..." (a document end marker) or "status" (a commented status: {})
    bom: bool  # a byte order mark first, as Windows editors write


layouts = st.builds(Layout, st.sampled_from([2, 4]), st.booleans(), st.booleans(),
                    st.booleans(), st.sampled_from(["", "---", "%YAML"]), st.booleans(),
                    st.sampled_from(["block", "block", "flow"]),
                    st.sampled_from(["", "", "...", "status"]), st.booleans())


@dataclass
class Topology:
    names: list[str]
    document: Map
    layout: Layout


def _command(name: str, verb: str) -> Any:
    if verb == "create":
        return f"mkdir -p state; echo {name} > state/{name}"
    return f"rm -f state/{name}"


@st.composite
def topologies(draw: st.DrawFn) -> Topology:
    """An ensemble of 1 to 3 nodes whose create writes ``state/NAME`` and whose delete
    removes it, every part in a layout of its own."""
    layout = draw(layouts)
    names = [f"n{i}" for i in range(draw(st.integers(1, 3)))]
    templates: list[tuple[str, Any]] = []
    anchored: tuple[str, Any] | None = None
    for index, name in enumerate(names):
        flow = draw(st.booleans())
        ops = Map([(verb, Scalar(_command(name, verb), draw(st.sampled_from(
            ["plain", "single", "double"])))) for verb in ("create", "delete")],
            flow=flow or draw(st.booleans()))
        if draw(st.booleans()):  # the long form
            ops = Map([("operations", ops)], flow=flow)
        properties = draw(maps(flow, 2))
        if anchored is not None and draw(st.booleans()):
            properties.items.append(("shared", Alias(anchored[0], anchored[1])))
        elif index == 0 and properties.items and not properties.flow and draw(st.booleans()):
            value = properties.items[0][1]
            if isinstance(value, Map) and not value.flow and value.items:
                value.anchor = "base"
                anchored = ("base", data(value))
        if anchored is not None and index and not properties.flow and draw(st.booleans()) \
                and isinstance(anchored[1], dict):
            properties.merge, properties.merged = anchored[0], dict(anchored[1])
        if draw(st.booleans()):  # Unfurl's docs write expressions in flow style
            properties.items.append(("cpus", Map([("eval", Scalar(
                "::root::inputs::cpus", "plain"))], flow=True)))
        fields: list[tuple[str, Any]] = [
            ("type", Scalar(draw(st.sampled_from(["tosca:Root", "tosca.nodes.Root"])),
                            draw(st.sampled_from(["plain", "single", "double"])))),
            ("properties", properties),
        ]
        if index:
            fields.append(("requirements", Seq([Map([("dependency", Scalar(
                names[index - 1], "plain"))], flow=flow)], flow=flow)))
        fields.append(("interfaces", Map([("Standard", ops)], flow=flow)))
        templates.append((name, Map(fields, flow=flow, comments=layout.comments)))
    inputs = Map([("cpus", Map([("type", Scalar("integer", "plain")),
                                ("default", Scalar(2, "plain"))], flow=draw(st.booleans())))])
    topology = Map([("inputs", inputs),
                    ("node_templates", Map(templates, comments=layout.comments))])
    document = Map([
        ("apiVersion", Scalar("unfurl/v1alpha1", "plain")),
        ("kind", Scalar("Ensemble", draw(st.sampled_from(["plain", "single", "double"])))),
        ("spec", Map([("service_template", Map([("topology_template", topology)]))],
                     comments=layout.comments)),
    ], comments=layout.comments)
    return Topology(names, document, layout)


# ----------------------------------------------------------------------------- laying out


def text(topology: Topology) -> str:
    layout = topology.layout
    lines: list[str] = []
    if layout.markers == "%YAML":
        lines += ["%YAML 1.2", "---"]
    elif layout.markers == "---":
        lines.append("--- # an ensemble" if layout.comments else "---")
    if layout.comments:
        lines.append("# written by hand")
    if layout.top == "flow":
        document = Map([*topology.document.items, *(
            [("status", Map([("instances", Map([]))]))] if layout.tail == "status" else [])])
        lines.append(_inline(document, layout))
    else:
        lines += _block_map(topology.document, 0, layout)
        if layout.tail == "status":
            lines.append("status: {} # jobs record the instances here")
    if layout.tail == "...":
        lines.append("...")
    out = ("\ufeff" if layout.bom else "") + "\n".join(lines) + "\n"
    return out.replace("\n", "\r\n") if layout.crlf else out


def _block_map(node: Map, indent: int, layout: Layout) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}<<: *{node.merge}"] if node.merge else []
    for number, (key, value) in enumerate(node.items):
        if node.comments and number:
            lines.append(f"{pad}# about {_plain_key(key)}")
        head = f"{pad}{_key(key)}:"
        if isinstance(value, Map | Seq) and not value.flow and value.items:
            anchor = f" &{value.anchor}" if value.anchor else ""
            lines.append(head + anchor + (" # block" if node.comments else ""))
            if isinstance(value, Map):
                lines += _block_map(value, indent + layout.indent, layout)
            else:
                shift = layout.indent if layout.indent_sequences else 0
                lines += _block_seq(value, indent + shift, layout)
        elif isinstance(value, Scalar) and value.style == "literal":
            lines.append(head + " |")
            lines += [f"{pad}{' ' * layout.indent}{line}" if line else ""
                      for line in value.value.rstrip("\n").split("\n")]
        else:
            comment = " # inline" if node.comments and _commentable(value) else ""
            lines.append(f"{head} {_inline(value, layout)}{comment}")
    return lines


def _block_seq(node: Seq, indent: int, layout: Layout) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for item in node.items:
        if isinstance(item, Map) and not item.flow and item.items and not item.merge:
            inner = _block_map(item, indent + 2, layout)
            lines.append(pad + "- " + inner[0].lstrip(" "))
            lines += inner[1:]
        elif isinstance(item, Seq) and not item.flow and item.items:
            inner = _block_seq(item, indent + 2, layout)
            lines.append(pad + "- " + inner[0].lstrip(" "))
            lines += inner[1:]
        elif isinstance(item, Scalar) and item.style == "literal":
            lines.append(f"{pad}- |")
            lines += [f"{pad}  {line}" if line else ""
                      for line in item.value.rstrip("\n").split("\n")]
        elif isinstance(item, Map | Seq) and not item.flow and item.items:
            lines.append(f"{pad}- {_inline(_as_flow(item), layout)}")
        else:
            lines.append(f"{pad}- {_inline(item, layout)}")
    return lines


def _as_flow(node: Any) -> Any:
    if isinstance(node, Map):
        return Map([(k, _as_flow(v)) for k, v in node.items], flow=True, anchor=node.anchor,
                   merged=node.merged, merge=node.merge)
    if isinstance(node, Seq):
        return Seq([_as_flow(i) for i in node.items], flow=True, anchor=node.anchor)
    if isinstance(node, Scalar) and (node.style == "literal" or (
            node.style == "plain" and isinstance(node.value, str)
            and node.value not in PLAIN_FLOW)):
        return Scalar(node.value, "double", node.anchor)
    return node


def _inline(value: Any, layout: Layout) -> str:
    value = _as_flow(value)
    if isinstance(value, Alias):
        return f"*{value.name}"
    anchor = f"&{value.anchor} " if getattr(value, "anchor", None) else ""
    space = " " if layout.spaces_in_flow else ""
    if isinstance(value, Map):
        parts = [f"<<: *{value.merge}"] if value.merge else []
        parts += [f"{_key(k)}: {_inline(v, layout)}" for k, v in value.items]
        return anchor + ("{" + space + ", ".join(parts) + space + "}" if parts else "{}")
    if isinstance(value, Seq):
        parts = [_inline(i, layout) for i in value.items]
        return anchor + ("[" + space + ", ".join(parts) + space + "]" if parts else "[]")
    return anchor + _scalar(value)


def _scalar(node: Scalar) -> str:
    value = node.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if node.style == "plain":
        return value
    if node.style == "single":
        return "'" + value.replace("'", "''") + "'"
    escaped = node.style == "escaped"
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif escaped and (ord(char) > 0x7E or "\ud800" <= char <= "\udfff"):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _commentable(value: Any) -> bool:
    """A comment may follow: not after a plain scalar ending in ``#``-like text."""
    return not (isinstance(value, Scalar) and value.style == "literal")


def _plain_key(key: str) -> str:
    return key.replace("#", "")


def _key(key: str) -> str:
    return key if key.replace("-", "").replace(" ", "").isalnum() else f"'{key}'"
