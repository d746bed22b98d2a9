"""A job command with the everyday options (``unfurl deploy --approve --dirty=ok -q``)
answered without click (``cli/quick.py``): the command line is read as click's command
reads it (the same job options, ensemble and workflow parameters, for any mix of the
answered options, repeated or not, with values click takes or refuses), and the job runs,
shows and exits as click's road does it (the same output and exit code, step by step, for
jobs that succeed, fail, have nothing to do, are not approved, or have no ensemble)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Project, ensemble_yaml, entry_point, shell_node
from unfurl_lite.cli import jobflow, quick
from unfurl_lite.cli.commands.jobs import command_for, given_parameters
from unfurl_lite.model.builtin_workflows import WORKFLOWS, workflow_of_command

SPELLINGS = sorted({s for w in WORKFLOWS for s in w.commands})
WORDS = ["-a", "--approve", "-q", "--quiet", "--commit", "--no-commit", "--dryrun",
         "--dry-run", "--dirty", "--dirty=ok", "--dirty=abort", "--dirty=nope", "ok", "auto",
         "--jobexitcode", "--jobexitcode=never", "degraded", "-j", "-j=2", "--jobs",
         "--jobs=3", "--jobs=0", "2", "x", "ensemble.yaml", "other.yaml", "", "--json",
         "-v", "--", "-aq", "--force", "-e", "--instance", "--output=none"]


class NotATerminal:
    def isatty(self) -> bool:
        return False


def clicks_reading(args: list[str]) -> tuple[jobflow.JobChoice, str | None, dict[str, Any]]:
    """The job choice, ensemble and workflow parameters click's command reads from args."""
    spelling = args[0]
    workflow = workflow_of_command(spelling)
    assert workflow is not None
    ctx = command_for(spelling).make_context(spelling, args[1:])
    values = dict(ctx.params)
    flag, ensemble = values.pop("ensemble_flag", None), values.pop("ensemble", None)
    job = jobflow.JobChoice.take(values)
    values.pop("custom_workflow", None)
    return job, flag or ensemble, given_parameters(ctx, workflow, spelling, values, job)


@settings(max_examples=300)
@given(spelling=st.sampled_from(SPELLINGS), words=st.lists(st.sampled_from(WORDS), max_size=7))
def test_a_job_line_is_read_as_clicks_command_reads_it(
        spelling: str, words: list[str]) -> None:
    args = [spelling, *words]
    saved = sys.stdin
    sys.stdin = NotATerminal()  # type: ignore[assignment]
    try:
        line = quick.job_line(args)
    finally:
        sys.stdin = saved
    if line is None:
        return  # click's road, whatever it makes of it
    try:
        job, ensemble, parameters = clicks_reading(args)
    except click.UsageError as exc:  # (BadParameter too)
        pytest.fail(f"the quick road answers {args}, which click refuses: {exc}")
    assert jobflow.JobChoice.take(quick.job_values(line)) == job
    assert line.ensemble == ensemble
    assert quick.job_parameters(line) == parameters


@pytest.mark.parametrize(("args", "answered"), [
    (["deploy", "--approve", "--dirty=ok", "-q", "ensemble.yaml"], True),
    (["deploy", "-a", "--jobs", "2", "--no-commit"], True),
    (["undeploy", "-a", "-q"], True), (["install", "-a"], True),
    (["deploy", "-aq"], False),  # combined short flags: click's
    (["deploy", "-a", "--json"], False), (["deploy", "-a", "-v"], False),
    (["deploy", "-a", "--jobs=0"], False), (["deploy", "-a", "-j=2"], False),
    (["deploy", "-a", "--dirty"], False), (["deploy", "-a", "a.yaml", "b.yaml"], False),
    (["deploy", "-a", "--"], False), (["run", "-a"], False), (["deploy", "--help"], False),
    (["-q", "deploy", "-a"], False), (["nonsense", "-a"], False),
])
def test_which_job_lines_take_the_quick_road(
        args: list[str], answered: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", NotATerminal())
    assert quick.answers(args) is answered


def test_a_job_that_may_ask_on_a_terminal_goes_to_click(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(NotATerminal):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    assert not quick.answers(["deploy"]) and not quick.answers(["deploy", "-q"])
    assert quick.answers(["deploy", "--approve"])


#: what differs between two runs of the same job: ids, commits, times
_VARYING = re.compile(r"\b[A-Za-z0-9]{12}\b|\b[0-9a-f]{7,40}\b|\d+\.\d+s?\b")


def _said(capsys: pytest.CaptureFixture[str], code: Any) -> tuple[int, str, str]:
    out, err = capsys.readouterr()
    return (code or 0, _VARYING.sub("#", out), _VARYING.sub("#", err))


NODES = shell_node("web", "exit 0") + shell_node("db", "exit 0")
STEPS: list[tuple[str, list[str]]] = [
    ("a deploy not approved, stdin not a terminal", ["deploy"]),
    ("a deploy, every line shown", ["deploy", "--approve", "--dirty=ok", "--jobs=1"]),
    ("nothing to do", ["deploy", "-a", "-q"]),
    ("a failing operation, exit 64", ["deploy", "-a", "-j", "1"]),
    ("the same, --jobexitcode never", ["deploy", "-a", "--jobexitcode", "never", "-q"]),
    ("a dry run", ["undeploy", "-a", "--dryrun"]),
    ("undeploy, two at a time, no commit", ["undeploy", "-a", "-j", "2", "--no-commit"]),
    ("no such ensemble", ["deploy", "-a", "nowhere.yaml"]),
]


def test_jobs_run_and_show_as_clicks_road_runs_them(
        project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    project.write(ensemble_yaml(NODES))
    twin = tmp_path / "twin"
    shutil.copytree(project.root, twin, symlinks=True)
    monkeypatch.setattr("sys.stdin", NotATerminal())
    codes = []
    for name, args in STEPS:
        if name.startswith("a failing"):  # the next deploy has a failing operation in both
            for root in (project.root, twin):
                Project(root).write(ensemble_yaml(NODES + shell_node("bad", "exit 3")))
        assert quick.answers(args), name
        capsys.readouterr()
        monkeypatch.chdir(project.root)
        fast = _said(capsys, quick.run(args))
        monkeypatch.chdir(twin)
        slow = _said(capsys, entry_point(args))
        assert fast == slow, name
        codes.append(fast[0])
    assert codes == [1, 0, 0, 64, 0, 0, 0, 1]
    assert Project(twin).jobs_tsv() and len(project.jobs_tsv()) == len(Project(twin).jobs_tsv())
