"""The query language over generated topologies: each generated query gives what a
simple reference walk of the same topology (plain dicts, written from Unfurl's rules
in docs/expressions.md) gives. The real engine walks instances through the views
operations see; the reference walks the data it was generated from."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.context import make_context
from unfurl_lite.expressions.entities import NodeEntity, RootEntity
from unfurl_lite.expressions.resolve import Scope, resolve
from unfurl_lite.load.loader import build
from unfurl_lite.model.entities import Instance

NAMES = ["a", "b", "c", "d", "e"]
KEYS = ["p", "k", "r"]  # (a mapping {q: ...} would be the `q` function, as in Unfurl)
SPECIAL = [".name", ".parents", ".ancestors", ".instances", ".descendants", ".targets",
           ".sources", ".hosted_on", ".root", "..", "."]
VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", "1"]),
                   st.lists(st.integers(0, 2), max_size=3),
                   st.dictionaries(st.sampled_from(KEYS), st.integers(0, 2), max_size=2))


@st.composite
def topologies(draw: Any) -> dict[str, dict[str, Any]]:
    count = draw(st.integers(1, len(NAMES)))
    nodes: dict[str, dict[str, Any]] = {}
    for index, name in enumerate(NAMES[:count]):
        parent = draw(st.sampled_from([None, *NAMES[:index]]))
        deps = draw(st.lists(st.sampled_from(NAMES[:count]), max_size=2))
        props = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3))
        nodes[name] = {"parent": parent, "deps": [d for d in deps if d != name],
                       "props": props}
    return nodes


def segments() -> st.SearchStrategy[str]:
    text = st.sampled_from(["x", "y", "1", "0", "a", "b"])
    return st.one_of(
        st.sampled_from(KEYS), st.sampled_from(SPECIAL), st.sampled_from(["0", "1", "-1", "*"]),
        st.builds(lambda k: f"[{k}]", st.sampled_from([*KEYS, ".name"])),
        st.builds(lambda k, v: f"[{k}={v}]", st.sampled_from([*KEYS, ".name"]), text),
        st.builds(lambda k: f"[!{k}]", st.sampled_from(KEYS)),
    )


@st.composite
def queries(draw: Any) -> str:
    start = draw(st.sampled_from(["::*", ".", *(f"::{n}" for n in NAMES), "::root"]))
    parts = draw(st.lists(segments(), max_size=3))
    text = start
    for part in parts:
        text += part if part.startswith("[") else "::" + part
    return text


# --- the reference walk -------------------------------------------------------------------

class Ref:
    def __init__(self, name: str | None) -> None:
        self.name = name  # None: the root


class Reference:
    def __init__(self, nodes: dict[str, dict[str, Any]]) -> None:
        self.nodes = nodes
        self.order: list[str] = []

        def visit(name: str) -> None:
            self.order.append(name)
            for child in self.children(name):
                visit(child)

        for top in self.children(None):
            visit(top)

    def children(self, name: str | None) -> list[str]:
        return [n for n, d in self.nodes.items() if d["parent"] == name]

    def ancestors(self, name: str | None) -> list[Ref]:
        found = []
        while name is not None:
            found.append(Ref(name))
            name = self.nodes[name]["parent"]
        return [*found, Ref(None)]

    def requirements(self, name: str) -> list[tuple[str, str]]:
        node = self.nodes[name]
        found = [("host", node["parent"])] if node["parent"] else []
        return found + [(f"dep{i}", d) for i, d in enumerate(node["deps"])]

    def special(self, ref: Ref, key: str) -> Any:
        name = ref.name
        if key == ".":
            return ref
        if key in ("..", ".parent"):
            return None if name is None else Ref(self.nodes[name]["parent"])
        if key == ".name":
            return name or "root"
        if key == ".ancestors":
            return self.ancestors(name)
        if key == ".parents":
            return list(reversed(self.ancestors(name)))[:-1]
        if key == ".root":
            return Ref(None)
        if key == ".instances":
            return [Ref(c) for c in self.children(name)]
        if key == ".descendants":
            below = self.order if name is None else self._below(name)
            return [ref, *(Ref(n) for n in below)]
        if name is None:
            raise ExpressionError("the root has no " + key)
        if key == ".targets":
            return self._grouped([(r, Ref(t)) for r, t in self.requirements(name)])
        if key == ".sources":
            return self._grouped([(r, Ref(s)) for s in self.nodes
                                  for r, t in self.requirements(s) if t == name])
        if key == ".hosted_on":
            found: list[Ref] = []
            seen: set[str] = set()

            def walk(current: str) -> None:
                for r, target in self.requirements(current):
                    if target in seen:
                        continue
                    seen.add(target)
                    if r == "host":
                        found.append(Ref(target))
                    walk(target)

            walk(name)
            return found
        raise ExpressionError(key)

    def _below(self, name: str) -> list[str]:
        found = []
        for child in self.children(name):
            found += [child, *self._below(child)]
        return found

    @staticmethod
    def _grouped(pairs: list[tuple[str, Ref]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, ref in pairs:
            if key not in out:
                out[key] = ref
            elif isinstance(out[key], list):
                out[key].append(ref)
            else:
                out[key] = [out[key], ref]
        return out

    def lookup(self, value: Any, key: Any) -> Any:
        if isinstance(value, Ref):
            if isinstance(key, str) and key.startswith("."):
                return self.special(value, key)
            if value.name is None:
                if key == "inputs":
                    return {}
                raise KeyError(key)
            return self.nodes[value.name]["props"][key]
        if isinstance(value, dict | list | str):
            return value[key]
        raise KeyError(key)


MISSING = object()


def predicate(text: str) -> tuple[str, str | None, bool]:
    inner = text[1:-1]
    negate = inner.startswith("!")
    inner = inner.lstrip("!")
    key, _, value = inner.partition("=")
    return key, value if "=" in inner else None, negate


def coerce(value: Any, text: str) -> Any:
    for kind in (bool, int, float):
        if isinstance(value, kind):
            return kind(text)
    if isinstance(value, str):
        return text
    raise TypeError  # a property's list or mapping is Unfurl's ResultsList/Map: no text is


def as_key(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def reference_query(ref: Reference, text: str, at: str) -> list[Any]:
    """Unfurl's walk (docs/expressions.md), restated over plain data."""
    if text.startswith("::"):
        pieces = text[2:].replace("[", "::[").split("::")
        first, rest = pieces[0], pieces[1:]
        mapping = {"root": Ref(None), **{n: Ref(n) for n in ref.order}}
        values: list[Any] = (list(mapping.values()) if first == "*"
                             else [mapping.get(first)])
    else:
        rest = text[1:].replace("[", "::[").split("::")[1:]
        values = [Ref(at)]
    if text.startswith("::*"):  # predicates on the `*` itself are ignored, as in Unfurl
        while rest and rest[0].startswith("["):
            rest = rest[1:]
    steps: list[tuple[str, list[Any]]] = []
    for part in rest:
        if part.startswith("[") and steps and steps[-1][1]:
            # a key's second predicate holds the rest: `p[a][b][c]` is p[a][[b][[c]]]
            # (Unfurl's parse: a step of no key after `]`, holding the next predicate)
            innermost = steps[-1][1]
            while isinstance(innermost[-1], list):
                innermost = innermost[-1]
            innermost.append([part])
        elif part.startswith("[") and steps:
            steps[-1][1].append(part)
        elif part.startswith("["):
            steps.append(("", [part]))
        else:
            steps.append((part, []))
    return walk(ref, values, steps)


def walk(ref: Reference, values: list[Any], steps: list[tuple[str, list[Any]]]) -> list[Any]:
    if not steps:
        return values
    (key_text, predicates), rest = steps[0], steps[1:]
    key = as_key(key_text)
    out: list[Any] = []
    for value in values:
        if key == "*":
            if isinstance(value, dict):
                out += walk(ref, list(value.values()), rest)
            continue
        if isinstance(value, list) and not isinstance(key, int):
            out += walk(ref, value, steps)
            continue
        found = value
        if key != "":
            try:
                found = ref.lookup(value, key)
            except (KeyError, IndexError, TypeError):
                continue
        if all(passes(ref, found, p) for p in predicates):
            out += walk(ref, [found], rest)
    return out


def leaves(value: Any) -> list[Any]:
    """A value's items, lists flattened (a step of no key walks a list's items)."""
    if not isinstance(value, list):
        return [value]
    return [leaf for item in value for leaf in leaves(item)]


def passes(ref: Reference, value: Any, text: str | list[Any]) -> bool:
    if isinstance(text, list):  # predicates held by a step of no key: some item passes all
        return any(all(passes(ref, leaf, p) for p in text) for leaf in leaves(value))
    key, compare, negate = predicate(text)
    candidates = value if isinstance(value, list) else [value]
    matched = False
    for candidate in candidates:
        for found in walk(ref, [candidate], [(key, [])]):
            if compare is None:
                matched = True
            else:
                try:
                    matched = matched or found == coerce(found, compare)
                except (TypeError, ValueError):
                    continue
    return not matched if negate else matched


def plain(value: Any) -> Any:
    if isinstance(value, Ref):
        return f"<{value.name or 'root'}>"
    if isinstance(value, NodeEntity):
        return f"<{value.name}>"
    if isinstance(value, RootEntity):
        return "<root>"
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# --- the real engine ------------------------------------------------------------------------

def ensemble(nodes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    templates = {}
    for name, node in nodes.items():
        requirements = ([{"host": {"node": node["parent"],
                                   "relationship": "tosca.relationships.HostedOn"}}]
                        if node["parent"] else [])
        requirements += [{f"dep{i}": {"node": d, "relationship": "tosca.relationships.DependsOn"}}
                         for i, d in enumerate(node["deps"])]
        templates[name] = {"type": "tosca.nodes.Root", "properties": node["props"],
                           "requirements": requirements}
    return {"apiVersion": "unfurl/v1alpha1", "kind": "Ensemble",
            "spec": {"service_template": {"topology_template": {"node_templates": templates}}}}


def ours(nodes: dict[str, dict[str, Any]], text: str, at: str) -> Any:
    data = ensemble(nodes)
    loaded = build(Path("/nonexistent/ensemble.yaml"), "", data)
    instances = {n: Instance(n, n) for n in nodes}
    ctx = make_context(loaded.topology, instances, at)
    return resolve(text, Scope(ctx, None, {}), "list")


def same(nodes: dict[str, dict[str, Any]], text: str, at: str) -> None:
    ref = Reference(nodes)
    try:
        expected: Any = plain(reference_query(ref, text, at))
    except ExpressionError:
        expected = "error"
    try:
        got: Any = plain(ours(nodes, text, at))
    except ExpressionError:
        got = "error"
    assert got == expected, (text, at, nodes)


@settings(max_examples=examples(150))
@given(nodes=topologies(), text=queries(), at=st.sampled_from(NAMES))
@example(nodes={"a": {"parent": None, "deps": [], "props": {"p": [1, 2]}},
                "b": {"parent": "a", "deps": ["a"], "props": {"p": 1}}},
         text="::*[p=1]::.name", at="a")
@example(nodes={"a": {"parent": None, "deps": [], "props": {"p": {"k": 1}}}},
         text="::a::p::*", at="a")
@example(nodes={"a": {"parent": None, "deps": [], "props": {}},
                "d": {"parent": None, "deps": [], "props": {"p": []}}},
         text="::*::p[!p][!p]", at="a")  # the second predicate: some item passes [!p]
@example(nodes={"a": {"parent": None, "deps": [], "props": {}},
                "b": {"parent": "a", "deps": ["a"], "props": {}}},
         text="::a::.sources::dep0::.name", at="a")
def test_queries_walk_as_the_reference_does(nodes: dict[str, dict[str, Any]], text: str,
                                            at: str) -> None:
    if at not in nodes:
        at = next(iter(nodes))
    same(nodes, text, at)
