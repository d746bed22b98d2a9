"""One row per name Unfurl 1.2.0's expression language defines: every eval function, Jinja2
filter, test and global, Ansible lookup plugin, query key and `eval:` key, as
tests/data/unfurl120/queries/names.json lists them (names.py read them out of Unfurl 1.2.0
itself: its function registry, its Jinja2 environment and Ansible's plugin loaders, the
properties of its instance classes).

Each name is either implemented here, with at least one probe that Unfurl 1.2.0 evaluated
(tests/data/unfurl120/queries/*/results.json; test_unfurl_expressions.py checks that each
probe gives Unfurl's value here, or is a listed deliberate difference), or refused by
`validate` with its name, before any job runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.expressions.test_unfurl_expressions import DELIBERATE, key
from tests.expressions.unfurl_probes import CASES, case_names, recorded
from tests.load.test_validate import problems_in, templates
from unfurl_lite.expressions import catalog
from unfurl_lite.expressions.checks import query_problems
from unfurl_lite.expressions.keys import INTERNAL_KEYS, SPECIAL_KEYS
from unfurl_lite.expressions.sandbox import _environment

NAMES: dict[str, Any] = json.loads((CASES / "names.json").read_text())

#: implemented names no probe can compare, with why
UNPROBED = {
    ("function", "secret"): "reads a topology input here (docs/differences-from-unfurl.md)",
}


def _rows() -> Iterator[tuple[str, str]]:
    for kind, section in (("function", "functions"), ("filter", "filters"),
                          ("filter", "jinja_filters"), ("test", "tests"),
                          ("test", "jinja_tests"), ("global", "globals"),
                          ("lookup", "lookups"), ("query_key", "query_keys"),
                          ("ref_key", "ref_keys")):
        for name in NAMES[section]:
            yield kind, name


ROWS = sorted(set(_rows()))


@cache
def _probes() -> list[tuple[str, dict[str, Any], str, frozenset[str]]]:
    """Each probe Unfurl evaluated, not a listed deliberate difference, with its text (its
    templates and query) and the mapping keys of its value."""
    found = []
    for case in case_names():
        for probe in recorded(case):
            if key(probe) in DELIBERATE:
                continue
            texts = [*_texts(probe.get("v")), *([probe["q"]] if "q" in probe else [])]
            found.append((case, probe, "\n".join(texts), frozenset(_keys(probe.get("v")))))
    return found


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(k)
            yield from _texts(v)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def _uses(kind: str, name: str, probe: dict[str, Any], text: str,
          keys: frozenset[str]) -> bool:
    word = re.escape(name)
    patterns = {
        "filter": rf"\|\s*(ansible\.builtin\.)?{word}\b",
        "test": rf"(\bis\s+(not\s+)?{word}\b|(select|reject)(attr)?\(.*'{word}')",
        "global": rf"(?<![\w.|'\"]){word}\s*\(",
        "lookup": rf"\b(lookup|query|q)\(\s*['\"]{word}['\"]",
        "query_key": rf"(^|::|\[|')\.{word}\b",
    }
    if kind == "function":
        return name in keys or f"__unfurl.{name}(" in text
    if kind == "ref_key":
        return name in keys or (name == "vars" and "vars" in probe)
    if kind == "lookup" and any(isinstance(v, dict) and name in v
                                for v in _lookup_arguments(probe.get("v"))):
        return True
    return name in text and re.search(patterns[kind], text, re.MULTILINE) is not None


def _lookup_arguments(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "lookup":
                yield v
            yield from _lookup_arguments(v)
    elif isinstance(value, list):
        for item in value:
            yield from _lookup_arguments(item)


def _compared(kind: str, name: str) -> list[str]:
    """The probes Unfurl 1.2.0 evaluated with this name that are compared with ours (not
    a listed deliberate difference)."""
    return [f"{case}: {key(probe)}" for case, probe, text, keys in _probes()
            if _uses(kind, name, probe, text, keys)]


def _implemented(kind: str, name: str) -> bool:
    if kind == "query_key":
        return name in SPECIAL_KEYS
    if kind == "ref_key":
        return name in ("eval", "ref") or catalog.known("query_key", name)
    environment = _environment()
    builtins = {"filter": environment.filters, "test": environment.tests,
                "global": environment.globals}.get(kind, {})
    return catalog.known(kind, name) or (  # type: ignore[arg-type]
        name in builtins and not catalog.entry(kind, name))  # type: ignore[arg-type]


_USE = {
    "function": lambda n: f"properties:\n  p: {{eval: {{{n}: x}}}}\n",
    "filter": lambda n: f"properties:\n  p: \"{{{{ 'x' | {n} }}}}\"\n",
    "test": lambda n: f"properties:\n  p: \"{{{{ 'x' is {n} }}}}\"\n",
    "global": lambda n: f"properties:\n  p: \"{{{{ {n}('x') }}}}\"\n",
    "lookup": lambda n: f"properties:\n  p: \"{{{{ lookup('{n}', 'x') }}}}\"\n",
}


def _refused_at_validate(tmp_path: Path, kind: str, name: str) -> list[str]:
    if kind == "query_key":
        return [message for _, message, _ in query_problems(f"::app::.{name}")]
    body = "app:\n  type: tosca.nodes.Root\n" + "\n".join(
        "  " + line for line in _USE[kind](name).splitlines())
    return [p.format() for p in problems_in(tmp_path, templates(body))]


@pytest.mark.parametrize("kind, name", ROWS, ids=[f"{k}:{n}" for k, n in ROWS])
def test_each_name_behaves_as_unfurl_or_is_refused_by_validate(
        kind: str, name: str, request: pytest.FixtureRequest) -> None:
    if _implemented(kind, name):
        if (kind, name) in UNPROBED:
            return
        assert _compared(kind, name), (
            f"{kind} {name!r} is implemented but no probe evaluated by Unfurl 1.2.0 uses it: "
            "add one to tests/data/unfurl120/queries/names-probes/probes.yaml and re-run "
            "probe.py")
        return
    if kind == "ref_key":
        pytest.fail(f"the eval: key {name!r} is neither implemented nor refused")
    if kind == "query_key":
        assert name in INTERNAL_KEYS, f"query key .{name} is neither implemented nor refused"
    else:
        found = catalog.entry(kind, name)  # type: ignore[arg-type]
        assert found is not None and found.refused, f"{kind} {name!r} is unknown here"
    problems = _refused_at_validate(request.getfixturevalue("tmp_path"), kind, name)
    assert any(f"'{name}'" in p or f"`.{name}`" in p for p in problems), problems


@pytest.mark.parametrize("name", sorted(NAMES["functions"]))
def test_functions_evaluated_alone_are_unfurls(name: str) -> None:
    """``{get_input: x}`` without ``eval:``: the same functions as Unfurl's ``_FuncsTop``."""
    assert (name in catalog.top_level_functions()) == NAMES["functions"][name]["top"]


def test_the_list_is_unfurls_own() -> None:
    """names.json holds what names.py found in Unfurl 1.2.0 (not a hand-written list)."""
    assert NAMES["unfurl"] == "1.2.0"
    assert {"if", "eval", "to_label", "get_dir"} <= set(NAMES["functions"]) | set(
        NAMES["ref_keys"])
    assert len(NAMES["filters"]) >= 80 and len(NAMES["tests"]) >= 45
    assert {"parents", "sources", "hosted_on", "configured_by"} <= set(NAMES["query_keys"])
    assert len(ROWS) > 300
