"""Unfurl's query language and expression functions, against what Unfurl 1.2.0 gave for
the same expressions on the same ensemble (tests/data/unfurl120/queries: probe.py deployed
each case with Unfurl 1.2.0 and evaluated every probe with its own evaluator).

Every probe must give Unfurl's value, or be one of the differences listed here, each
documented in docs/differences-from-unfurl.md."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.expressions.unfurl_probes import Probes, case_names, copy_case, recorded

#: probe -> why it differs on purpose (docs/differences-from-unfurl.md)
DELIBERATE: dict[str, str] = {}


def _deliberate(reason: str, *probes: dict[str, Any]) -> None:
    for probe in probes:
        DELIBERATE[json.dumps(probe, sort_keys=True)] = reason


_AT = (None, "server", "app", "web", "config")
_deliberate("later Unfurl's keys: .owner and .super are here",
            *({"q": ".owner", **({"at": at} if at else {})} for at in _AT),
            *({"q": ".super", "at": at} for at in _AT[1:]),
            {"at": "app~db", "q": ".owner"}, {"at": "app~host", "q": ".owner"})
_deliberate("Unfurl's internal Python objects are refused by name",
            *({"q": key, **({"at": at} if at else {})}
              for at in _AT for key in (".template", ".__class__")))
_deliberate("a query ending in .names gives the mapping (Unfurl fails)",
            *({"q": ".names", "at": at} for at in _AT[1:]))
_deliberate("the root has no requirements here (Unfurl lists its own `_default_provider`)",
            {"q": ".requirements"})
_deliberate("query results serialize with to_json here (Unfurl fails)",
            {"at": "app", "v": "{{ '::app::nested' | eval | to_json }}"},
            {"at": "web", "v": "{{ '::app::nested' | eval | to_json }}"})
_deliberate("files and paths stay in the project (docs/security.md)",
            {"at": "app", "v": {"eval": {"file": "/etc/hostname"}, "select": "contents"}})
_deliberate("TOSCA's join is refused by name (Unfurl 1.2.0 keeps {join: ...} as data)",
            {"at": "app", "v": {"join": [["a", "b"], "-"]}})
_deliberate("binary file contents are refused by name",
            {"at": "app", "v": {"eval": {"file": "data.txt", "encoding": "binary"},
                                "select": "contents"}})
_deliberate("`secret` reads a topology input here (there are no Unfurl environments)",
            {"at": "app", "v": {"eval": {"secret": "pw"}}})
_deliberate("a sensitive mapping or list is a secret item by item",
            {"at": "app", "v": {"eval": {"sensitive": {"a": 1}}}},
            {"at": "app", "v": {"eval": {"sensitive": [1]}}})
_deliberate("a sensitive number or boolean is secret text (Unfurl leaves it plain, in clear)",
            {"at": "app", "v": {"eval": {"sensitive": 5}}},
            {"at": "app", "v": {"eval": {"sensitive": True}}})
_deliberate("a template's lookup('env') reads what operations get and what the spec "
            "declares (docs/security.md)",
            *({"at": "app", "v": v} for v in (
                "{{ lookup('env', 'PROBE_PLAIN') }}",
                "{{ lookup('env', 'PROBE_PLAIN', 'NOPE_X') }}",
                "{{ query('env', 'PROBE_PLAIN') }}", "{{ lookup('env', 'NOPE_X', default='d') }}")))
_deliberate("map_value in a template gives each expression's results, as in a task's "
            "inputs (tests/data/unfurl-cases/39-filters); the probe ran outside a task",
            {"at": "app", "v": "{{ {'a': {'eval': '::app::port'}} | map_value }}"},
            {"at": "app", "v": "{{ {'a': {'get_input': 'region'}} | map_value }}"})
_deliberate("every template has `inputs` here (the operation's, empty outside one)",
            {"at": "app", "v": "{{ inputs }}"}, {"at": "test", "v": " {{[inputs]}} "})
_deliberate("a node template's `attributes:` values are its instance's attributes here "
            "(Unfurl 1.2.0 ignores them: only the type's defaults count)",
            *({"at": "test", "q": q} for q in (
                "simple", "listy", "overridden", "undeclared", ".attributes")),
            {"at": "test", "v": "{{ SELF.simple }}"})
_deliberate("every task has its operation and workflow folders here",
            {"at": "app", "v": {"eval": {"get_dir": "operation"}}},
            {"at": "app", "v": {"eval": {"get_dir": "workflow"}}})


_NAMES = "names-probes"
_FS_TESTS = (("'data.txt'", "file"), ("'data.txt'", "exists"), ("'.'", "directory"),
             ("'data.txt'", "is_file"), ("'.'", "is_dir"), ("'data.txt'", "link"),
             ("'data.txt'", "is_link"), ("'/'", "mount"), ("'/'", "is_mount"),
             ("'data.txt'", "link_exists"), ("'data.txt'", "same_file('data.txt')"),
             ("'data.txt'", "is_same_file('./data.txt')"))
_deliberate("Ansible's file-system tests are refused by name (templates do not read the "
            "machine's files)", *({"at": "app", "v": f"{{{{ {path} is {test} }}}}"}
                                  for path, test in _FS_TESTS))
_deliberate("Ansible's filters and lookups that read the machine, its configuration, its "
            "variables or Vault, run commands or change every render are refused by name",
            *({"at": "app", "v": v} for v in (
                "{{ '~' | expanduser }}", "{{ '$HOME' | expandvars }}", "{{ '.' | realpath }}",
                "{{ '*.txt' | fileglob }}", "{{ 'pw' | password_hash('sha512', 'saltsalt') }}",
                "{{ 'a' | vault('pw') }}", "{{ 'a' | unvault('pw') }}",
                "{{ lookup('random_choice', 'a') }}", "{{ lookup('fileglob', '*.txt') }}",
                "{{ lookup('first_found', ['data.txt']) }}",
                "{{ lookup('csvfile', 'a file=data.csv delimiter=,') }}",
                "{{ lookup('ini', 'key section=main file=data.ini') }}",
                "{{ lookup('vars', 'SELF') }}", "{{ lookup('varnames', '^S') }}",
                "{{ lookup('lines', 'echo hi') }}", "{{ lookup('pipe', 'echo hi') }}",
                "{{ lookup('config', 'DEFAULT_TIMEOUT') }}",
                "{{ lookup('unvault', 'data.txt') }}")))
_deliberate("Unfurl's internal Python objects are refused by name", {"q": ".tmp_dir"})
_deliberate("Jinja2's lipsum is refused by name (random text: every deploy would reconfigure)",
            {"at": "app", "v": "{{ lipsum(1) | length > 0 }}"})
_deliberate("`is filter` of a name nobody defines is false, as in Jinja2 (Ansible fails)",
            {"at": "app", "v": "{{ 'nosuch' is filter }}"})
_deliberate("map_value in a template gives each expression's results, as in a task's "
            "inputs (tests/data/unfurl-cases/39-filters); the probe ran outside a task",
            {"at": "app", "v": "{{ {'a': {'eval': '::app::.name'}} | mapValue }}"})
_deliberate("`file(path)` is a template function here (docs/security.md; Unfurl 1.2.0 has "
            "only the `file` eval function)", {"at": "app", "v": "{{ file('data.txt') }}"})
_PROBE_VARS = {"d": {"copy": "c", "get": "g", "items": [1, 2], "keys": "k", "name": "n",
                     "pop": "p", "update": "u", "values": "v"}, "l": [1, 2], "s": "text"}
_deliberate("a method that changes a value is refused by the sandbox (Unfurl gives the "
            "method)", *({"at": "app", "v": v, "vars": _PROBE_VARS}
                         for v in ("{{ d.pop }}", "{{ d.update }}", "{{ l.append }}")))

_deliberate("an option the label functions do not have is refused by name, at validate too "
            "(Unfurl ignores it)",
            {"at": "app", "v": "{{ 'abc' | to_label(foo=1) }}"},
            {"at": "app", "v": "{{ 'a bc' | to_dns_label(foo=1) }}"},
            {"at": "app", "v": {"eval": {"foo": 1, "to_label": "a b"}}},
            {"at": "app", "v": {"eval": {"to_dns_label": "a b", "to_label": "x"}}})
_deliberate("a label's character class may not end early with ']' (it would make the "
            "option a whole regular expression)",
            {"at": "app", "v": "{{ 'ab' | to_label(start='a-z]') }}"})

_deliberate("`$collection` in foreach is the list walked (Unfurl 1.2.0 gives its own "
            "iterator: no length, empty once walked)",
            {"at": "app", "v": {"eval": "::*::.name", "foreach": "{{ collection | length }}"}},
            {"at": "app", "v": {"eval": "::*::.name", "foreach": "$collection"}})
_deliberate("groupby's groups as a template's value are [grouper, items] pairs (Unfurl 1.2.0 "
            "fails copying them)",
            {"at": "app", "v": "{{ [{'a': 1, 'b': 2}, {'a': 1, 'b': 3}] | groupby('a') | list }}"},
            {"at": "app", "v": "{{ [{'a': 1}, {'b': 3}] | groupby('a', default=0) | list }}"})
_deliberate("a missing name written out as text inside a value is `Undefined` (Unfurl "
            "writes Ansible's Python repr)",
            {"at": "app", "v": "{{ [nosuch] | string }}"},
            {"at": "app", "v": "{{ [nosuch] | pprint }}"})

_deliberate("an instance's name, type, template, status and state are readable from its "
            "values when it has no property or attribute of that name (Unfurl fails)",
            *({"at": at, "v": v} for at, v in (
                ("app", "{{ HOST.name }}"), ("db", "{{ HOST.name }}"),
                ("app", "{{ SELF.type }}"), ("app", "{{ SELF.status }}"),
                ("app", "{{ SELF.state }}"), ("app", "{{ SELF.template }}"),
                ("server", "{{ SELF.state }}"), ("app", "{{ NODES.app.name }}"))))

_deliberate("is_function_defined is false for a function refused here (python)",
            {"at": "app", "v": {"eval": {"is_function_defined": "python"}}})


def key(probe: dict[str, Any]) -> str:
    return json.dumps({k: probe[k] for k in ("at", "q", "v", "vars") if k in probe},
                      sort_keys=True)


def comparable(value: Any) -> Any:
    """Secrets are wrapped here (redacted in records) and plain values in Unfurl; an
    error's text is each tool's own; a method is known by its name (its owner's Python
    class and address are each tool's own)."""
    if isinstance(value, dict):
        if set(value) == {"error"}:
            return "<error>"
        if set(value) == {"object", "repr"} and " method " in str(value["repr"]):
            return {"method": str(value["repr"]).split(" method ")[1].split()[0]
                    .rsplit(".", 1)[-1]}
        if set(value) == {"sensitive"}:
            return value["sensitive"]
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def _random(probe: dict[str, Any]) -> bool:
    text = json.dumps(probe.get("v"))
    return "tempfile" in text or "generate" in text


def results_here(case: str, tmp_path: Path, listed_only: bool = False
                 ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    theirs = recorded(case)
    deployment = next((r["one"] for r in theirs if r.get("q") == ".deployment"), "project")
    folder = tmp_path / str(deployment)
    folder.mkdir()
    probes = Probes(copy_case(case, folder))
    return [(probe, probes.evaluate(probe)) for probe in theirs
            if not listed_only or key(probe) in DELIBERATE]


@pytest.mark.parametrize("case", case_names())
def test_expressions_give_unfurls_values(case: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    differ = []
    for probe, ours in results_here(case, tmp_path):
        if _random(probe):
            continue
        theirs = {k: probe[k] for k in ("one", "list", "value") if k in probe}
        if comparable(ours) != comparable(theirs) and key(probe) not in DELIBERATE:
            differ.append(f"{key(probe)}\n  Unfurl: {json.dumps(theirs)[:300]}\n"
                          f"  here:   {json.dumps(ours)[:300]}")
    assert not differ, f"{len(differ)} probes differ:\n" + "\n".join(differ[:20])


@pytest.mark.parametrize("case", case_names())
def test_each_listed_difference_still_differs(case: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for probe, ours in results_here(case, tmp_path, listed_only=True):
        if key(probe) in DELIBERATE:
            theirs = {k: probe[k] for k in ("one", "list", "value") if k in probe}
            assert comparable(ours) != comparable(theirs), (key(probe), DELIBERATE[key(probe)])


def test_temporary_files_hold_what_unfurl_writes(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for probe, ours in results_here("functions", tmp_path):
        if "tempfile" not in json.dumps(probe.get("v")):
            continue
        path = ours["value"]
        assert os.path.isfile(path), probe
        assert Path(path).read_text() == probe["file_contents"], probe
        assert os.path.splitext(path)[1] == probe["suffix"]
        assert os.stat(path).st_mode & 0o077 == 0  # private to the user


def test_generated_strings_have_unfurls_shape(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for probe, ours in results_here("functions", tmp_path):
        if "generate_string" in json.dumps(probe.get("v")):
            assert len(ours["value"]) == len(probe["value"]) == 8
            assert ours["value"].startswith("uv")
