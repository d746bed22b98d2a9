"""``unfurl check`` skips the check of an instance whose required dependencies are not
operational, as Unfurl 1.2.0's entry test does (``Skipping operation "check" on instance
"app" ...: required dependencies not operational: dependency is error``): checks run after
their dependencies' checks, and one skipped has no jobs.tsv line, takes no changeId and is
not counted; its instance keeps its status (``effective`` then says why). Each scenario is
run here step by step as Unfurl 1.2.0 ran it (tests/data/unfurl120/50-check-skips, its
README.md) and compared: the check job's task rows, its summary, each instance's
readyState."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import git, run_in_process
from unfurl_lite.load.jobslog import parse_tsv_line
from unfurl_lite.model.status_layout import flatten

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "50-check-skips"
#: each scenario's steps as Unfurl ran them: a job command, or a shell command (``!``)
SCENARIOS = {
    "fresh-dep-check-fails": ["check"],
    "fresh-dep-no-check": ["check"],
    "deployed-dep-check-fails": ["deploy", "!touch fail", "check", "redeploy"],
    "deployed-host-check-fails": ["deploy", "!touch fail", "check", "redeploy"],
    "deployed-dep-check-ok": ["deploy", "check"],
}
COMMANDS = {"check": ("check",), "deploy": ("deploy", "--approve"),
            "redeploy": ("deploy", "--approve")}


def ready_states(text: str) -> dict[str, dict[str, str]]:
    doc = YAML(typ="safe").load(text)
    nested = (doc.get("status") or {}).get("instances") or {}
    return {name: record.get("readyState") for name, (record, _) in flatten(nested).items()}


def rows(tsv: str) -> list[tuple[str, str, str]]:
    """(target, operation, status) of each task row; the job rows' summaries apart."""
    lines = map(parse_tsv_line, tsv.splitlines())
    return [(r["target"], r["operation"], r["status"]) for r in lines if "target" in r]


def job_summaries(tsv: str) -> list[str]:
    return [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)["summary"]
            for line in tsv.splitlines() if "\ttarget=" not in line]


def unfurl_step(scenario: str, step: str) -> tuple[str, str]:
    """(jobs.tsv, ensemble.yaml) after Unfurl's step ("" for a jobs.tsv not written)."""
    where = DATA / scenario / step
    tsv = where / "jobs.tsv"
    return (tsv.read_text() if tsv.exists() else "",
            (where / "ensemble.after.yaml").read_text())


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_check_skips_as_unfurl_does(tmp_path: Path, scenario: str) -> None:
    (tmp_path / "ensemble.yaml").write_text((DATA / f"{scenario}.yaml").read_text())
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "init")
    for step in SCENARIOS[scenario]:
        if step.startswith("!"):
            subprocess.run(step[1:], shell=True, cwd=tmp_path, check=True)
            git(tmp_path, "add", "-A")
            git(tmp_path, "commit", "-qm", step)
            continue
        name = "check" if step == "check" else step
        result = run_in_process(tmp_path, *COMMANDS[step], "--jobexitcode", "never")
        assert result.returncode == 0, result.stdout + result.stderr
        tsv, ensemble = unfurl_step(scenario, name)
        ours = tmp_path / "jobs.tsv"
        our_tsv = ours.read_text() if ours.exists() else ""
        assert rows(our_tsv) == rows(tsv), (step, result.stdout)
        assert job_summaries(our_tsv) == job_summaries(tsv), step
        assert ready_states((tmp_path / "ensemble.yaml").read_text()) == \
            ready_states(ensemble) or not tsv, step  # a job that ran nothing: no record here
        if step == "check":
            said = [line for line in (DATA / scenario / step / "console.txt").read_text()
                    .splitlines() if "Skipping operation" in line]
            for line in said:  # the same words, said once
                why = line.split(": ", 1)[1]
                assert f"app Install.check: skipped: {why}" in result.stdout
            assert result.stdout.count("skipped: required") == len(said)


def test_a_chain_through_an_instance_without_a_check_still_waits(tmp_path: Path) -> None:
    """app -> mid -> db, mid has no check: app's check follows db's, and is skipped when
    db's failed (mid's effective status is then error)."""
    text = (DATA / "fresh-dep-check-fails.yaml").read_text().replace(
        "        app:\n", "        mid:\n          type: tosca.nodes.Root\n"
        "          requirements:\n            - dependency: db\n        app:\n").replace(
        "            - dependency: db\n          interfaces:\n            Install:\n"
        "              check: \"echo checked app\"",
        "            - dependency: mid\n          interfaces:\n            Install:\n"
        "              check: \"echo checked app\"")
    (tmp_path / "ensemble.yaml").write_text(text)
    git(tmp_path, "init", "-q")
    plan = run_in_process(tmp_path, "plan", "--workflow", "check")
    assert "2. Install.check [check] after 1" in plan.stdout, plan.stdout
    result = run_in_process(tmp_path, "check", "--no-commit", "--jobexitcode", "never")
    assert "app Install.check: skipped: required dependencies not operational: " \
           "dependency is error" in result.stdout, result.stdout
    assert [r[:2] for r in rows((tmp_path / "jobs.tsv").read_text())] == [("::db", "check")]
