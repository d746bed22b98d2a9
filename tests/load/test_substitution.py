"""Unfurl 1.2.0's nested topologies (TOSCA substitution), probed with the examples of its own
tests (tests/test_substitutions_mappings.py) in tests/data/unfurl120/51-substitution (its
README.md): a template with the ``substitute`` directive is replaced by the topology of an
imported file whose ``substitution_mappings`` names its type (instances ``nested1:inner``
recorded under its ``substitution:``), and an ensemble's own ``substitution_mappings:
{node_type: T}`` deploys only a made-up template ``_substitution_mapping``. unfurl-lite has
no nested topologies: both are refused by name at validate, at their line, with what to
do; an imported file's ``substitution_mappings`` that no template uses is ignored, as Unfurl
1.2.0 ignores it (the templates deploy as plain ones)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import git, run_in_process
from unfurl_lite.load.jobslog import parse_tsv_line

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "51-substitution"
#: scenario -> what validate says here (None: valid)
REFUSED = {
    "imported-node-type": "template directive 'substitute' on 'nested1'",
    "imported-node": "template directive 'substitute' on 'nested1'",
    "directive-without-mapping": "template directive 'substitute' on 'nested1'",
    "own-node-type": "TOSCA `substitution_mappings` (a topology standing in for a node) is "
                     "not supported beyond `{node: NAME}`",
    "imported-no-directive": None,
}


def repo(tmp_path: Path, scenario: str) -> Path:
    for source in (DATA / scenario).glob("*.yaml"):
        if not source.name.endswith(".after.yaml"):
            shutil.copy(source, tmp_path / source.name)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def rows(tsv: str) -> list[tuple[str, str, str]]:
    lines = map(parse_tsv_line, tsv.splitlines())
    return [(r["target"], r["operation"], r["status"]) for r in lines if "target" in r]


def test_the_scenarios_are_unfurls() -> None:
    assert sorted(p.name for p in DATA.iterdir() if p.is_dir()) == sorted(REFUSED)
    # Unfurl deploys all but the directive naming no nested topology
    assert {p: (DATA / p / "deploy.exitcode.txt").read_text().strip() for p in REFUSED} == {
        **dict.fromkeys(REFUSED, "0"), "directive-without-mapping": "64"}


@pytest.mark.parametrize("scenario", sorted(REFUSED))
def test_validate_refuses_by_name_what_it_cannot_do_and_accepts_the_rest(
        tmp_path: Path, scenario: str) -> None:
    result = run_in_process(repo(tmp_path, scenario), "validate")
    refused = REFUSED[scenario]
    if refused is None:
        assert result.returncode == 0, result.stdout + result.stderr
        return
    out = result.stdout + result.stderr
    assert result.returncode == 1 and refused in out, out
    assert "ensemble.yaml:" in out and "hint:" in out  # file, line, what to do


def test_an_imported_mapping_no_template_uses_is_ignored_as_unfurl_ignores_it(
        tmp_path: Path) -> None:
    root = repo(tmp_path, "imported-no-directive")
    result = run_in_process(root, "deploy", "--approve")
    assert result.returncode == 0, result.stdout + result.stderr
    unfurl = (DATA / "imported-no-directive" / "jobs.tsv").read_text()
    assert rows((root / "jobs.tsv").read_text()) == rows(unfurl) == [
        ("::external", "create", "ok"), ("::nested1", "create", "ok"),
        ("::nested2", "create", "ok")]
