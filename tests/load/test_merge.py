"""Merge directives on real files in a temporary project."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from unfurl_lite.cli.main import cli
from unfurl_lite.errors import InputError
from unfurl_lite.load import merge, positions, yamlio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def expand(root: Path, text: str, name: str = "ensemble.yaml") -> tuple[object, object]:
    file = write(root, name, text)
    doc = yamlio.load_file(file)
    return doc, merge.expand(doc, file, root)


def plain(node: object) -> object:
    return yamlio.to_plain(node)


def expand_error(root: Path, text: str) -> InputError:
    with pytest.raises(InputError) as info:
        expand(root, text)
    return info.value


def test_include_string_merges_and_own_keys_win(project: Path) -> None:
    write(project, "base.yaml", "a: 1\nb: {x: 1, y: 2}\n")
    _, merged = expand(project, """\
        top:
          +include: base.yaml
          b: {y: 3}
          c: 4
        """)
    assert plain(merged) == {"top": {"a": 1, "b": {"x": 1, "y": 3}, "c": 4}}


def test_input_document_is_not_mutated(project: Path) -> None:
    write(project, "base.yaml", "a: 1\n")
    text = "top:\n  +include: base.yaml\n  own: {+%: whiteout}\n"
    doc, _ = expand(project, text)
    assert yamlio.dump(doc) == text


def test_include_dict_form_and_fragment(project: Path) -> None:
    write(project, "lib.yaml", "section:\n  inner: {v: 1}\n")
    _, merged = expand(project, """\
        whole:
          +include: {file: lib.yaml}
        part:
          +include: lib.yaml#/section/inner
        """)
    assert plain(merged) == {"whole": {"section": {"inner": {"v": 1}}}, "part": {"v": 1}}


def test_include_list_merges_in_order(project: Path) -> None:
    write(project, "one.yaml", "a: 1\nb: 1\n")
    write(project, "two.yaml", "b: 2\n")
    _, merged = expand(project, "top:\n  +include: [one.yaml, two.yaml]\n")
    assert plain(merged) == {"top": {"a": 1, "b": 2}}


def test_optional_include_may_be_missing(project: Path) -> None:
    _, merged = expand(project, "top:\n  +?include: nothere.yaml\n  a: 1\n")
    assert plain(merged) == {"top": {"a": 1}}


def test_nested_include_is_relative_to_the_including_file(project: Path) -> None:
    write(project, "sub/a.yaml", "from_a: 1\n+include: deeper/b.yaml\n")
    write(project, "sub/deeper/b.yaml", "from_b: 2\n+include-up: ../../c.yaml\n")
    write(project, "c.yaml", "from_c: 3\n")
    _, merged = expand(project, "top:\n  +include: sub/a.yaml\n")
    assert plain(merged) == {"top": {"from_a": 1, "from_b": 2, "from_c": 3}}


def test_absolute_pointer(project: Path) -> None:
    _, merged = expand(project, """\
        defaults: {x: 1, y: {z: 2}}
        thing:
          +/defaults:
          y: {w: 3}
        """)
    assert plain(merged)["thing"] == {"x": 1, "y": {"z": 2, "w": 3}}


def test_relative_pointers(project: Path) -> None:
    _, merged = expand(project, """\
        group:
          common: {port: 80}
          web:
            +../common:
          same:
            value: 5
            copy:
              +../value:
          self:
            inner: {a: 1}
            +./inner:
        """)
    data = plain(merged)
    assert data["group"]["web"] == {"port": 80}
    assert data["group"]["same"]["copy"] == 5
    assert data["group"]["self"] == {"a": 1, "inner": {"a": 1}}


def test_merge_anchor_and_yaml_anchor(project: Path) -> None:
    _, merged = expand(project, """\
        base:
          +&: common
          a: 1
        yaml_base: &yb {b: 2}
        one:
          +*common:
          c: 3
        two:
          +*yb:
        """)
    data = plain(merged)
    assert data["base"] == {"a": 1}
    assert data["one"] == {"a": 1, "c": 3}
    assert data["two"] == {"b": 2}


def test_whiteout_and_nullout(project: Path) -> None:
    write(project, "base.yaml", "a: 1\nb: {x: 1}\nc: {y: 1}\n")
    _, merged = expand(project, """\
        top:
          +include: base.yaml
          b: {+%: whiteout}
          c: {+%: nullout}
        """)
    assert plain(merged) == {"top": {"a": 1, "c": None}}


def test_non_map_result_replaces_a_map_with_no_other_keys(project: Path) -> None:
    _, merged = expand(project, "value: 7\ncopy:\n  +/value:\n")
    assert plain(merged)["copy"] == 7


def test_non_map_result_with_other_keys_is_an_error(project: Path) -> None:
    error = expand_error(project, "value: 7\ncopy:\n  +/value:\n  other: 1\n")
    assert "cannot merge" in error.problems[0].message


def test_list_result_splices_into_list(project: Path) -> None:
    _, merged = expand(project, """\
        more: [b, c]
        items:
          - a
          - +/more:
          - d
        """)
    assert plain(merged)["items"] == ["a", "b", "c", "d"]


def test_included_lists_append_and_merge_single_key_items(project: Path) -> None:
    write(project, "base.yaml", "requirements:\n  - host: a\n  - dependency: x\n")
    _, merged = expand(project, """\
        app:
          +include: base.yaml
          requirements:
            - host: b
            - connect: y
        """)
    assert plain(merged)["app"]["requirements"] == [
        {"host": "b"}, {"dependency": "x"}, {"connect": "y"}
    ]


@pytest.mark.parametrize("target", ["../outside.yaml", "ABSOLUTE", "link.yaml"])
def test_include_escaping_the_project_is_refused(project: Path, target: str) -> None:
    outside = write(project.parent, "outside.yaml", "secret: 1\n")
    if target == "ABSOLUTE":
        target = str(outside)
    if target == "link.yaml":
        os.symlink(outside, project / "link.yaml")
    error = expand_error(project, f"top:\n  +include: {target}\n")
    (problem,) = error.problems
    assert "escapes the project" in problem.message
    assert problem.file and problem.file.endswith("ensemble.yaml")
    assert (problem.line, problem.column) == (2, 3)
    assert problem.path == "top.+include"
    assert problem.hint


def test_missing_include_is_an_error(project: Path) -> None:
    error = expand_error(project, "a: 1\ntop:\n  +include: nothere.yaml\n")
    (problem,) = error.problems
    assert "not found" in problem.message
    assert problem.line == 3
    assert "+?include" in (problem.hint or "")


def test_include_cycle_is_an_error(project: Path) -> None:
    write(project, "a.yaml", "+include: b.yaml\n")
    write(project, "b.yaml", "+include: a.yaml\n")
    error = expand_error(project, "top:\n  +include: a.yaml\n")
    (problem,) = error.problems
    assert "include cycle: ensemble.yaml -> a.yaml -> b.yaml -> a.yaml" in problem.message
    assert problem.file and problem.file.endswith("b.yaml")


def test_unresolvable_pointer_and_anchor_are_reported_together(project: Path) -> None:
    error = expand_error(project, "one:\n  +/no/such:\ntwo:\n  +*nope:\n")
    messages = [p.message for p in error.problems]
    assert len(messages) == 2
    assert "does not point at anything" in messages[0]
    assert "anchor 'nope' not found" in messages[1]
    assert [p.line for p in error.problems] == [2, 4]


def test_pointer_to_own_ancestor_is_an_error(project: Path) -> None:
    error = expand_error(project, "top:\n  inner:\n    +/top:\n")
    assert "contains it" in error.problems[0].message


def test_syntax_error_in_included_file_names_it(project: Path) -> None:
    write(project, "bad.yaml", "a: [1, 2\n")
    error = expand_error(project, "top:\n  +include: bad.yaml\n")
    assert error.problems[0].file and error.problems[0].file.endswith("bad.yaml")


def test_merged_nodes_keep_line_info_and_source_file(project: Path) -> None:
    write(project, "inc.yaml", "# comment\nfrom_inc: {x: 1}\n")
    _, merged = expand(project, "top:\n  +include: inc.yaml\n  own: 1\n")
    top = merged["top"]  # type: ignore[index]
    assert merge.source_file(top, "from_inc").endswith("inc.yaml")
    assert positions.location(top, "from_inc") == (2, 1)
    assert merge.source_file(top, "own").endswith("ensemble.yaml")
    assert positions.location(top, "own") == (3, 3)
    assert merge.source_file(top["from_inc"]).endswith("inc.yaml")


def test_format_path() -> None:
    assert merge.format_path(["spec", "reqs", 0, "host"]) == "spec.reqs[0].host"


def test_plus_keys_that_are_not_directives_are_data(project: Path) -> None:
    _, merged = expand(project, "a:\n  +note: one\n")
    assert plain(merged) == {"a": {"+note": "one"}}


# --- Unfurl 1.2.0's documents, through `unfurl export` ----------------------------------

UNFURL_CASES = Path(__file__).parent.parent / "data" / "merge-directives"


def export(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["export", *args, str(root)], catch_exceptions=False)


@pytest.mark.parametrize(
    "case", sorted(p.name for p in UNFURL_CASES.iterdir() if (p / "ensemble.yaml").exists())
)
def test_export_gives_unfurls_expanded_document(tmp_path: Path, case: str) -> None:
    root = tmp_path / case
    shutil.copytree(UNFURL_CASES / case, root)
    expected = json.loads((root / "unfurl-expanded.json").read_text())
    result = export(root, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected


def test_export_yaml_and_file(tmp_path: Path) -> None:
    root = tmp_path / "p"
    shutil.copytree(UNFURL_CASES / "relative-into-root-include", root)
    expected = json.loads((root / "unfurl-expanded.json").read_text())
    result = export(root, "--format", "yaml")
    assert result.exit_code == 0
    assert yamlio.parse_plain(result.stdout) == expected
    assert export(root, "--file", str(tmp_path / "out.json")).stdout == ""
    assert json.loads((tmp_path / "out.json").read_text()) == expected


def test_export_of_an_ensemble_without_directives_is_the_file(tmp_path: Path) -> None:
    text = ("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
            "    topology_template:\n      node_templates: {a: {type: tosca.nodes.Root}}\n")
    write(tmp_path, "ensemble.yaml", text)
    assert json.loads(export(tmp_path, "--json").stdout) == yamlio.parse_plain(text)


def test_export_of_a_missing_pointer_names_it(tmp_path: Path) -> None:
    write(tmp_path, "ensemble.yaml", "apiVersion: unfurl/v1alpha1\nkind: Ensemble\n"
          "spec: {}\nx:\n  +/a/nothere:\n")
    result = export(tmp_path)
    assert result.exit_code == 1
    assert "+/a/nothere" in result.output and "ensemble.yaml:5" in result.output


def test_export_refuses_a_merge_into_a_mapping_marked_error(tmp_path: Path) -> None:
    # Unfurl 1.2.0: "merging a is not allowed, +%: error was set"
    write(tmp_path, "ensemble.yaml", "apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec: {}\n"
          "t: {a: {b: 1}}\nx:\n  +/t:\n  a:\n    +%: error\n    c: 1\n")
    result = export(tmp_path)
    assert result.exit_code == 1
    assert "merging 'a' is not allowed" in result.output and "ensemble.yaml:6" in result.output


def test_export_names_unfurls_formats_as_not_supported(tmp_path: Path) -> None:
    write(tmp_path, "ensemble.yaml", "apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec: {}\n")
    result = CliRunner().invoke(cli, ["export", "--format", "deployment", str(tmp_path)])
    assert result.exit_code == 2 and "--format deployment" in result.output
    assert "not supported" in result.output


def test_including_python_is_refused_by_name(project: Path) -> None:
    write(project, "types.py", "from tosca import *\n")
    error = expand_error(project, "spec:\n  +include: types.py\n")
    [problem] = error.problems
    assert "types.py" in problem.message and "TOSCA Python DSL" in problem.message
    assert "not supported" in problem.message
