"""The fast paths (C parse, parse cache, quick schema check, section rewrite, direct
emitter) must give exactly what the slow paths give: same records byte for byte, same
verdict on every document, same errors with line numbers."""

from __future__ import annotations

import contextlib
import datetime
import functools
import io
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tests.conftest import REFERENCE, ROOT, Invoke, Project, ensemble_yaml, examples
from unfurl_lite.load import emit, parsecache, schema_problems, schemacheck, yamlio
from unfurl_lite.load.guard import MAX_DEPTH
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.record import sections

SETTINGS = settings(max_examples=examples(100))


def ruamel_dump(data: Any) -> str:
    stream = io.StringIO()
    yamlio.round_trip().dump(data, stream)
    return stream.getvalue()


WORDS = ["ok", "create", "::db", "A6BMIY9e0001", "a: b", "it's", "#x", "a #b", "a#b", "123",
         "yes", "true", "null", "~", "", " lead", "trail ", "@x", "-x", "- x", "?x", ":x",
         "key:", "2020-01-01", "1.5", "0x1f", "---x", "...y", "=", "<<", "[x]", "x" * 90,
         "echo creating db", "(type tosca.nodes.Root, status ok)", "é", "tab\there", "a\nb"]
text = st.one_of(
    st.sampled_from(WORDS),
    st.lists(st.sampled_from([*WORDS[:20], "word", "configurator"]), min_size=2,
             max_size=30).map(" ".join),
)
scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.sampled_from([0.004, 1.5, 123.0, 1e-05, 1e20, -2.25]), text)
key = st.sampled_from(["template", "readyState", "local", "x-y", "a.b", "k1", "summary"])
records = st.recursive(
    scalar,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(key, children, max_size=4)),
    max_leaves=25,
)


@SETTINGS
@given(st.dictionaries(key, records, min_size=1, max_size=5))
def test_direct_emitter_writes_what_ruamel_writes(data: dict[str, Any]) -> None:
    fast = emit.dump(data)
    if fast is not None:  # None: outside its subset, ruamel writes it
        assert fast == ruamel_dump(data)


@SETTINGS
@given(key, st.integers(0, 4), st.sampled_from(["x", "it's", "a b", "ok "]),
       st.integers(-3, 3), st.booleans())
def test_a_scalar_at_the_edge_of_the_width_is_folded_as_ruamel_folds_it(
    name: str, depth: int, word: str, slack: int, listed: bool
) -> None:
    """A pair laid out on one line (``key: value``) exactly when it fits: a value a few
    characters either side of the line's width, plain or quoted, at any depth."""
    indent = 2 * depth + (2 if listed else 0)
    room = 80 - indent - len(name) - 2
    value = (word * 80)[: max(1, room + slack)]
    data: Any = {name: value}
    for _ in range(depth):
        data = {"k1": data}
    document = {"changes": [data]} if listed else data
    assert emit.dump(document) == ruamel_dump(document)


@SETTINGS
@given(st.lists(st.text(alphabet="ab:#(),.-", min_size=1, max_size=14).filter(str.strip),
                min_size=2, max_size=40),
       st.sampled_from([" ", "  ", ": "]), st.integers(0, 3))
def test_a_long_quoted_value_is_folded_as_ruamel_folds_it(
    words: list[str], separator: str, depth: int
) -> None:
    """A record's long single-quoted value (a task's ``summary``): folded word by word at
    the width, whether single spaces separate its words (the joined-lines road) or runs
    of them do."""
    data: Any = {"summary": separator.join(w.strip() for w in words) + ": x"}
    for _ in range(depth):
        data = {"k1": data}
    document = {"changes": [data]}
    assert emit.dump(document) == ruamel_dump(document)


@SETTINGS
@given(st.lists(st.dictionaries(key, records, min_size=1, max_size=6), min_size=1, max_size=5),
       st.sets(key))
def test_entries_emitted_once_for_two_files_read_as_emitted_twice(
    entries: list[dict[str, Any]], dropped: set[str]
) -> None:
    """A job's file and its changes file share their task entries (the second without some
    keys): with each changes entry declared a part of its job entry, each entry's text is
    made once, and both files are still byte for byte what a separate dump of each gives."""
    job = {"manifest": "../ensemble.yaml", "changes": entries}
    parts = [{k: v for k, v in e.items() if k not in dropped} for e in entries]
    changes = {"manifest": "../ensemble.yaml", "changes": parts}
    shared = emit.Shared()
    assert [shared.view(p, e) for p, e in zip(parts, entries, strict=True)] == \
        [bool(p) for p in parts]
    assert emit.dump(job, shared) == emit.dump(job)
    assert emit.dump(changes, shared) == emit.dump(changes)


def test_a_part_is_written_from_its_wholes_text_without_a_pair_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The changes file's entries are not written again: dumping it writes only its own
    pairs (``manifest``, ``changes``). A part that is not its whole's pairs (another object
    for a value, keys in another order, a key the whole lacks) is refused, and written as
    any other."""
    summary = "create on instance db (type tosca.nodes.Root, status ok) using configurator " * 2
    whole = {"changeId": "A6BMIY9e0001", "target": "::db", "readyState": {"local": "ok"},
             "result": {"returncode": 0, "duration": 0.002}, "summary": summary,
             "status": "ok", "attempts": 1}
    part = {k: v for k, v in whole.items() if k not in ("result", "status", "attempts")}
    assert emit.Shared().view(whole, whole)  # the job's own entry: in both files
    shared = emit.Shared()
    assert shared.view(part, whole)
    equal = "".join(["A6BMIY9e", "0001"])  # equal to the whole's, another object
    assert equal == whole["changeId"] and equal is not whole["changeId"]
    assert not shared.view({"changeId": equal}, whole)
    assert not shared.view({"target": "::db", "changeId": whole["changeId"]}, whole)
    assert not shared.view({"changeId": whole["changeId"], "other": 1}, whole)
    job = {"manifest": "../ensemble.yaml", "changes": [whole]}
    changes = {"manifest": "../ensemble.yaml", "changes": [part]}
    assert emit.dump(job, shared) == emit.dump(job)
    written: list[str] = []
    one_line, pair = emit._one_line, emit._pair

    def counted_line(key: Any, *args: Any) -> Any:
        written.append(key)
        return one_line(key, *args)

    def counted_pair(w: Any, key: Any, *args: Any) -> None:
        written.append(key)
        pair(w, key, *args)

    monkeypatch.setattr(emit, "_one_line", counted_line)
    monkeypatch.setattr(emit, "_pair", counted_pair)
    text = emit.dump(changes, shared)
    assert set(written) <= {"manifest", "changes"}  # (a repeated line may be kept made)
    monkeypatch.undo()
    assert text == emit.dump(changes) == ruamel_dump(changes)


@SETTINGS
@given(st.text(alphabet="0123456789-+._:eExXoObTtZ nafNulrsI~<=!&*", min_size=1, max_size=14))
def test_emitter_quotes_exactly_the_strings_ruamel_would_read_back_as_another_type(
    value: str,
) -> None:
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver

    tag = VersionedResolver().resolve(ScalarNode, value, (True, False))
    assert emit._resolves_to_str(value) == (tag == "tag:yaml.org,2002:str")


def test_direct_emitter_matches_unfurls_own_job_file() -> None:
    reference = REFERENCE / "changes-job.yaml"
    written = reference.read_text()
    assert emit.dump(yamlio.to_plain(yamlio.parse(written, str(reference)))) == written


# ------------------------------------------------------------------ quick schema check


def yaml_texts(pattern: str = "**/*.yaml") -> dict[str, Path]:
    """Each distinct text of the repository's YAML files (examples/, tests/data/) once, with
    one file that holds it: the captured runs repeat many documents word for word, and the
    same text gets the same verdict. tests/data/hostile is left out: bombs the loader's
    text checks refuse before any parser or schema sees them."""
    files = [*ROOT.glob(f"examples/{pattern}"), *ROOT.glob(f"tests/data/{pattern}")]
    texts: dict[str, Path] = {}
    for path in files:
        if "hostile" not in path.parts:
            texts.setdefault(path.read_text(), path)
    return texts


@functools.cache
def ensemble_documents() -> list[Any]:
    """Every mapping document in the repository, parsed once per worker when a test first
    asks (not at import: collection in every worker would pay for it)."""
    docs = []
    for text in yaml_texts():
        try:
            docs.append(yamlio.parse_plain(text))
        except Exception:  # deliberately broken test data: not a document to check
            continue
    return [d for d in docs if isinstance(d, dict)]


def jsonschema_verdict(doc: Any) -> bool:
    return jsonschema.Draft202012Validator(schema_problems._schema()).is_valid(doc)


@pytest.mark.slow  # every distinct YAML text of the repository, parsed: about 3 s of CPU
def test_quick_check_agrees_with_jsonschema_on_every_ensemble_we_have() -> None:
    quick = schemacheck.compile_schema(schema_problems._schema())
    documents = ensemble_documents()
    assert len(documents) > 10
    assert [quick(d) for d in documents] == [jsonschema_verdict(d) for d in documents]


@functools.cache
def _texts() -> tuple[str, ...]:
    return tuple(sorted(yaml_texts()))


@functools.cache
def _document(text: str) -> Any:
    """A text of :func:`_texts` parsed when a test first draws it (parsing all of them is
    two seconds of CPU; a run draws a few dozen); None when it is no document."""
    try:
        return yamlio.parse_plain(text)
    except Exception:  # deliberately broken test data: not a document to check
        return None


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@SETTINGS
@given(st.data())
def test_quick_check_agrees_with_jsonschema_on_mutated_ensembles(data: st.DataObject) -> None:
    """Replace any one value anywhere with something else: both must give one verdict."""
    drawn = _document(data.draw(st.sampled_from(_texts())))
    assume(isinstance(drawn, dict))
    doc = json.loads(json.dumps(drawn, default=str))
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    replacement = data.draw(st.one_of(
        scalar, st.just({}), st.just([]), st.just({"bogus": 1}), st.just([{"x": 1}]),
        st.just({"type": "tosca.nodes.Root"}), st.just("unfurl/v1alpha1")))
    replacement = json.loads(json.dumps(replacement))  # st.just gives the same object again
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = replacement
    quick = schemacheck.compile_schema(schema_problems._schema())
    assert quick(doc) == jsonschema_verdict(doc)


def test_one_quick_check_remembers_accepted_interfaces_by_their_exact_values() -> None:
    """The compiled check remembers the interfaces it accepted: an interfaces value Python
    calls equal but JSON does not (``timeout: true`` against ``timeout: 1``) is still
    refused, by the same check, after the first was accepted; a date is judged each time."""
    quick = schemacheck.compile_schema(schema_problems._schema())

    def ensemble(timeout: Any) -> dict[str, Any]:
        operation = {"implementation": {"className": "Shell", "timeout": timeout}}
        templates = {f"t{i}": {"type": "tosca.nodes.Root", "interfaces": {
            "Standard": {"operations": {"create": operation}}}} for i in range(3)}
        return {"apiVersion": "unfurl/v1alpha1", "kind": "Ensemble", "spec": {
            "service_template": {"topology_template": {"node_templates": templates}}}}

    for timeout, valid in [(1, True), (True, False), (1.0, True), (False, False),
                           ("1", True), (None, False), (datetime.date(2026, 1, 1), False),
                           (1, True), (True, False)]:
        doc = ensemble(timeout)
        assert quick(doc) is valid, timeout
        if not isinstance(timeout, datetime.date):
            assert jsonschema_verdict(doc) is valid


# ------------------------------------------------------------------- section rewrite


USER_SPEC = """\
# my ensemble: hand-written, keep my layout
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
    service_template:       # four-space indentation, on purpose
        topology_template:
            node_templates:
                web:
                    type: tosca.nodes.Root
                    interfaces:
                        Standard:
                            operations:
                                create:
                                    implementation: {className: Shell}
                                    inputs: {command: "echo a rather long line ruamel refolds"}
                                delete:
                                    implementation: {className: Shell}
                                    inputs: {command: "true"}
"""


def test_a_job_leaves_every_byte_of_the_users_spec_alone(project: Project, invoke: Invoke) -> None:
    project.write(USER_SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    written = project.ensemble.read_text()
    assert written.startswith(USER_SPEC)
    assert project.local("web") == "ok"
    assert invoke("undeploy", "--approve").exit_code == 0
    assert project.ensemble.read_text().startswith(USER_SPEC)
    assert project.local("web") == "absent"


def test_comments_in_the_status_section_survive_through_the_round_trip(
    project: Project, invoke: Invoke
) -> None:
    project.write(USER_SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    commented = project.ensemble.read_text().replace(
        "  instances:\n", "  instances:   # reviewed by ops\n", 1)
    project.write(commented)
    assert invoke("deploy", "--approve", "--force").exit_code == 0
    assert "# reviewed by ops" in project.ensemble.read_text()
    assert project.local("web") == "ok"


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("a: 1\nstatus:\n  x: 1\n# a comment\n", ["a", "status"]),  # comment in the section
        ("a: &s 1\nstatus: &t\n  x: 1\nb: *t\n", ["a", "status", "b"]),  # anchored
        ('"a": 1\nstatus: {}\n', ["a", "status"]),  # a quoted key the scan cannot see
        ("a: 1\r\nstatus: {}\n", ["a", "status"]),  # mixed line ends
        ("a: 1\rstatus: {}\n", ["a", "status"]),  # a lone carriage return
        ("a: 1\n...\n", ["a"]),  # a document end: a section after it would be lost
    ],
)
def test_section_rewrite_declines_what_it_cannot_do_exactly(text: str, keys: list[str]) -> None:
    assert sections.replace(text, keys, {"status": "status: {}\n"}) is None


def test_section_rewrite_keeps_crlf_line_ends() -> None:
    text = "a: 1\r\nstatus:\r\n  old: 1\r\nb: 2\r\n"
    new = sections.replace(text, ["a", "status", "b"], {"status": "status:\n  new: 2\n"})
    assert new == "a: 1\r\nstatus:\r\n  new: 2\r\nb: 2\r\n"


def test_section_rewrite_replaces_in_place_and_appends_new_sections() -> None:
    text = "# head\na: 1\nstatus:\n  old: 1\n\nb: 2\n"
    new = sections.replace(text, ["a", "status", "b"],
                           {"status": "status:\n  new: 2\n", "lastJob": "lastJob: {}\n"})
    assert new == "# head\na: 1\nstatus:\n  new: 2\n\nb: 2\nlastJob: {}\n"


# ------------------------------------------------------------------------ parse cache


def test_the_cache_holds_what_a_fresh_parse_of_the_written_file_gives(
    project: Project, invoke: Invoke, parse_cache: Path
) -> None:
    project.write(USER_SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    written = project.ensemble.read_text()
    cached = parsecache.get(project.ensemble.resolve(), written)
    assert cached is not None and cached["raw"] is None  # no directives: data is the file's
    assert cached["data"] == yamlio.to_plain(yamlio.parse(written, "ensemble.yaml"))


def test_an_edited_ensemble_misses_the_cache(project: Project, invoke: Invoke) -> None:
    project.write(USER_SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    load_ensemble(project.ensemble)  # warm
    project.write(project.ensemble.read_text().replace("echo a rather", "echo quite a"))
    ensemble = load_ensemble(project.ensemble)
    command = ensemble.topology.templates["web"].interfaces["Standard"]["create"].inputs
    assert command["command"].startswith("echo quite a")


def test_a_cached_ensemble_made_invalid_still_reports_its_line(
    project: Project, invoke: Invoke
) -> None:
    project.write(USER_SPEC)
    assert invoke("plan").exit_code == 0  # cached now
    project.write(USER_SPEC.replace("type: tosca.nodes.Root", "typo: tosca.nodes.Root"))
    result = invoke("plan")
    assert result.exit_code == 1
    assert "ensemble.yaml:9:21: unknown key 'typo'" in result.output.replace("\n", "")
    assert "Traceback" not in result.output


def test_cache_off_writes_nothing(
    project: Project, invoke: Invoke, parse_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNFURL_LITE_CACHE", "off")
    project.write(USER_SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.local("web") == "ok"
    assert list(parse_cache.iterdir()) == []


def test_cache_files_are_private_to_the_user(
    project: Project, invoke: Invoke, parse_cache: Path
) -> None:
    project.write(USER_SPEC)
    assert invoke("plan").exit_code == 0
    entries = list(parse_cache.glob("*.marshal"))
    assert entries
    assert all(entry.stat().st_mode & 0o077 == 0 for entry in entries)


# ------------------------------------------------------------------ the plain loader


def ruamel_safe_load(text: str) -> Any:
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=False).load(text)


@pytest.mark.slow  # every distinct YAML text, read twice: about 3 s of CPU
def test_plain_loader_reads_every_yaml_file_we_have_as_ruamel_does() -> None:
    from unfurl_lite.load import blockyaml, plainyaml

    compared = by_lines = 0
    for text, path in yaml_texts().items():
        try:
            expected = ruamel_safe_load(text)
        except Exception:  # deliberately broken test data: both must refuse
            with pytest.raises(Exception):  # noqa: B017
                plainyaml.load(text)
            with pytest.raises(Exception):  # noqa: B017
                blockyaml.load(text, plainyaml._scalar, plainyaml.implicit_type)
            continue
        try:
            assert _comparable(plainyaml.load(text)) == _comparable(expected), path
            compared += 1
        except plainyaml.NeedsFullLoader:
            pass
        try:  # the line reader of everyday block YAML, too
            assert _comparable(blockyaml.load(text, plainyaml._scalar, plainyaml.implicit_type)[0]
                               ) == _comparable(expected), path
            by_lines += 1
        except blockyaml.NeedsFullLoader:
            pass
    assert compared > 20
    assert by_lines > 20


scalar_text = st.one_of(
    st.text(alphabet="0123456789-+._:eExXoObTtZ nafNulrsI~<=yYw", min_size=0, max_size=10),
    st.sampled_from(WORDS),
)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["a", "b", "c-d", "e.f"]),
                       st.one_of(scalar_text, st.lists(scalar_text, max_size=3),
                                 st.dictionaries(st.sampled_from(["x", "y"]), scalar_text)),
                       min_size=1, max_size=4))
@example({"a": ".nan", "b": [".NaN", "x"]})  # NaN is never equal to itself
def test_plain_loader_types_every_plain_scalar_as_ruamel_does(data: dict[str, Any]) -> None:
    """Write the values unquoted where YAML allows it, then read them back both ways."""
    from unfurl_lite.load import plainyaml

    def plain(value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(plain(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {plain(v)}" for k, v in value.items()) + "}"
        return json.dumps(value) if any(c in value for c in ":#,[]{}'\"\\\n\t") or \
            value.strip() != value or not value else value

    text = "".join(f"{key}: {plain(value)}\n" for key, value in data.items())
    try:
        expected = ruamel_safe_load(text)
    except Exception:  # e.g. "-_", which ruamel cannot read either
        return
    with contextlib.suppress(plainyaml.NeedsFullLoader):
        assert _comparable(plainyaml.load(text)) == _comparable(expected)


def _comparable(value: Any) -> Any:
    """``.nan`` reads as NaN both ways, and NaN is never equal to itself: compare it as a
    marker (its type, float, is still compared)."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


guarded_key = st.sampled_from(["a", "attributes", "+include", "b\\u0007", "c", "+d"])


def _guarded_text(draw: Any, depth: int, anchors: list[str]) -> str:
    """Flow YAML with keys that are names or data, control characters, merge directives,
    anchors and aliases (some recursive): what the guard and the directive check judge."""
    choice = draw(st.integers(0, 4 if depth < 4 else 1))
    if choice == 0:
        return draw(st.sampled_from(["1", "x", '"q"', "null", "[]", "{}"]))
    if choice == 1 and anchors:
        return "*" + draw(st.sampled_from(anchors))
    anchor = ""
    if draw(st.booleans()):
        name = f"a{len(anchors)}"
        anchors.append(name)
        anchor = f"&{name} "
    if choice == 2:
        items = [_guarded_text(draw, depth + 1, anchors) for _ in range(draw(st.integers(0, 3)))]
        return anchor + "[" + ", ".join(items) + "]"
    keys = draw(st.lists(guarded_key, max_size=3, unique=True))
    pairs = [f'"{k}": {_guarded_text(draw, depth + 1, anchors)}' for k in keys]
    return anchor + "{" + ", ".join(pairs) + "}"


@SETTINGS
@given(st.data())
def test_one_walk_guard_agrees_with_the_guard_and_the_directive_check(data: st.DataObject) -> None:
    """The fast road's single walk either declines (the full road then judges) or gives
    the data, the guard's verdict and the directive check exactly as the separate walks."""
    from unfurl_lite.errors import InputError
    from unfurl_lite.load import guard, merge, plainyaml

    text = _guarded_text(data.draw, 0, [])
    try:
        found = plainyaml.load_guarded(text)
    except plainyaml.NeedsFullLoader:
        return
    except Exception:  # broken YAML: ruamel must refuse it too
        with pytest.raises(Exception):  # noqa: B017
            ruamel_safe_load(text)
        return
    expected = ruamel_safe_load(text)
    assert found.data == expected
    guard.check(expected, "x.yaml")  # passes: load_guarded declines what the guard refuses
    assert found.directives == merge.has_directives(expected)
    with contextlib.suppress(InputError):
        guard.check(plainyaml.load(text), "x.yaml")


def test_one_walk_guard_declines_what_the_guard_refuses() -> None:
    from unfurl_lite.load import plainyaml

    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(6))
    deep = "x: " + "[" * (MAX_DEPTH + 20) + "]" * (MAX_DEPTH + 20) + "\n"
    for text in [bomb, '"na\\u0007me": 1\n', deep]:
        with pytest.raises(plainyaml.NeedsFullLoader):
            plainyaml.load_guarded(text)
    kept = plainyaml.load_guarded('attributes: {"na\\u0007me": 1}\nn: {+include: x}\n')
    assert kept.data == {"attributes": {"na\x07me": 1}, "n": {"+include": "x"}}
    assert kept.directives


def test_the_fast_road_refuses_what_the_guard_refuses_with_its_line(tmp_path: Path) -> None:
    from unfurl_lite.errors import InputError

    path = tmp_path / "ensemble.yaml"
    path.write_text(ensemble_yaml('"bad\\u0007name":\n  type: tosca.nodes.Root\n'))
    with pytest.raises(InputError) as refused:
        load_ensemble(path)
    [problem] = refused.value.problems
    assert "control character" in problem.message and problem.line == 7


# ------------------------------------------------- merge directives: cached with their files


def test_an_ensemble_with_includes_is_cached_until_an_included_file_changes(
    project: Project, invoke: Invoke, parse_cache: Path
) -> None:
    for name in ("ensemble.yaml", "types.yaml"):
        project.write((ROOT / "examples" / "three-tier" / name).read_text(), name=name)
    assert invoke("plan").exit_code == 0
    entry = parsecache.get(project.ensemble.resolve(), project.ensemble.read_text())
    assert entry is not None and entry["raw"] is not None  # the merged data, and the file's own
    assert str((project.root / "types.yaml").resolve()) in entry["deps"]

    types = project.root / "types.yaml"
    types.write_text(types.read_text().replace("default: service", "default: renamed"))
    stale = parsecache.get(project.ensemble.resolve(), project.ensemble.read_text())
    assert stale is None  # an include changed
    ensemble = load_ensemble(project.ensemble)
    assert ensemble.topology.types["example.Service"].properties["role"]["default"] == "renamed"


def test_a_job_on_an_ensemble_with_includes_rewrites_only_its_status(
    project: Project, invoke: Invoke
) -> None:
    for name in ("ensemble.yaml", "types.yaml"):
        project.write((ROOT / "examples" / "three-tier" / name).read_text(), name=name)
    before = project.ensemble.read_text()
    assert invoke("deploy", "--approve").exit_code == 0
    after = project.ensemble.read_text()
    assert after.startswith(before.rstrip("\n") + "\n")  # the spec, comments and +include kept
    assert "+include: types.yaml" in after
    assert project.local("web") == "ok"
    again = invoke("deploy", "--approve")  # loads from the cache the job left... or merges
    assert again.exit_code == 0 and "Nothing to do" in again.output


def test_an_optional_include_that_appears_later_is_noticed(project: Project) -> None:
    project.write(ensemble_yaml("""\
web:
  type: tosca.nodes.Root
  +?include: extra.yaml
"""))
    assert load_ensemble(project.ensemble).topology.templates["web"].properties == {}
    (project.root / "extra.yaml").write_text("properties: {colour: blue}\n")
    assert load_ensemble(project.ensemble).topology.templates["web"].properties == {
        "colour": "blue"}


# ------------------------------------------------------------- failure paths and limits


def test_a_value_ruamel_cannot_read_is_a_clear_error_not_a_traceback(
    project: Project, invoke: Invoke
) -> None:
    project.write(ensemble_yaml("web:\n  type: tosca.nodes.Root\n  metadata: {size: -_}\n"))
    result = invoke("plan")
    assert result.exit_code == 1
    assert "a value could not be read" in result.output and "quote" in result.output
    assert "Traceback" not in result.output


def test_the_cache_keeps_only_the_newest_entries(parse_cache: Path, tmp_path: Path) -> None:
    file = tmp_path / "ensemble.yaml"
    most = parsecache.KEEP + parsecache.SLACK
    for n in range(most + 1):
        parsecache.put(file, f"a: {n}\n", {"a": n})
        assert len(list(parse_cache.glob("*.marshal"))) == (n + 1 if n < most else
                                                            parsecache.KEEP)
    last = parsecache.get(file, f"a: {most}\n")
    assert last["data"] == {"a": most}


def test_journal_events_reach_the_disk_even_when_no_transition_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group commit: events, then silence; the log's syncing thread still syncs them
    within the interval, and each line is readable at once (written before the transition takes
    effect); the appending thread never waits for an fsync."""
    import os
    import threading
    import time

    from unfurl_lite.record.journal_format import EventLog

    monkeypatch.delenv("UNFURL_LITE_FSYNC", raising=False)  # conftest turns syncing off
    log = EventLog(tmp_path / "journal.yaml", sync_interval=0.05)
    synced_by: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced_by.append(threading.current_thread().name)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log.append({"state": "started"}, 1)
    appended = time.monotonic()
    log.append({"state": "cancelling"}, 2)
    assert '"state":"cancelling"' in log.path.read_text()
    deadline = time.monotonic() + 5
    while (log.pending or log.synced < appended) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log.synced >= appended and not log.pending
    assert synced_by and threading.current_thread().name not in synced_by
    log.close()
