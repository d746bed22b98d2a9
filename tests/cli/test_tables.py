"""``status`` and ``history`` at 80 columns and narrower: changeIds, commits and times are
never split across lines (people copy them); other text is cut with an ellipsis."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Project, ensemble_yaml, git, run_in_process, shell_node
from unfurl_lite.cli.tables import cut, fit_widths, wrap

TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def deployed_once(tmp_path_factory, template_repo) -> Path:
    """Three jobs of history, made once: every test here only reads it (from a copy)."""
    root = tmp_path_factory.mktemp("tables") / "project"
    shutil.copytree(template_repo, root, symlinks=True)
    project = Project(root)
    git(project.root, "config", "user.name", "Ada Lovelace of the Analytical Engine Works")
    nodes = "".join(
        shell_node(name, "echo ok") for name in ("database-primary", "application-server", "web")
    )
    project.write(ensemble_yaml(nodes))
    cache = {"UNFURL_LITE_CACHE": str(tmp_path_factory.mktemp("parse-cache"))}
    for args in (("deploy", "--approve"), ("undeploy", "--approve"), ("deploy", "--approve")):
        result = run_in_process(project.root, *args, env=cache)
        assert result.returncode == 0, result.stderr
    return root


@pytest.fixture
def deployed(deployed_once: Path, tmp_path: Path) -> Project:
    root = tmp_path / "project"
    shutil.copytree(deployed_once, root, symlinks=True)
    return Project(root)


def _on_terminal(cwd, columns: int, *args: str) -> str:
    """Run unfurl with a pseudo-terminal of the given width as stdout."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    process = subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", *args], cwd=cwd, stdin=subprocess.DEVNULL,
        stdout=follower, stderr=follower, close_fds=True,
        env={**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "NO_COLOR": "1"},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _outputs(project, columns: int, *args: str) -> list[str]:
    piped = run_in_process(project.root, *args, env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert piped.returncode == 0, piped.stderr
    return [piped.stdout, _on_terminal(project.root, columns, *args)]


@pytest.mark.parametrize("columns", [80, 60])
def test_history_never_splits_changeids_commits_or_times(deployed, columns):
    jobs = json.loads(run_in_process(deployed.root, "history", "--json").stdout)
    for output in _outputs(deployed, columns, "history"):
        lines = output.splitlines()
        for job in jobs:
            (line,) = [li for li in lines if job["changeId"] in li]
            assert job["commit"][:10] in line
            assert job["time"].replace("T", " ")[:19] in line
        assert "Ada Lovelace of the Analytical Engine Works" not in output  # cut or left out
        assert len(lines) == 1 + len(jobs)
        assert max(len(li) for li in lines) <= columns, output
        if columns == 80:
            assert "…" in output  # the summary and the author are cut, not wrapped


@pytest.mark.parametrize("columns", [80, 60])
def test_status_never_splits_changeids_or_times(deployed, columns):
    report = json.loads(run_in_process(deployed.root, "status", "--json").stdout)
    for output in _outputs(deployed, columns, "status"):
        for row in report["instances"]:
            (line,) = [li for li in output.splitlines() if li.startswith(row["name"] + " ")]
            assert row["lastChange"] in line
            assert TIME.search(line), line
        below_title = output.splitlines()[1:]
        assert max(len(li) for li in below_title) <= columns, output
        last_job = output.split("Last job: ", 1)[1]
        assert report["lastJob"]["changeId"] in last_job.splitlines()[0]
        assert report["lastJob"]["time"].replace("T", " ")[:19] in last_job.splitlines()[0]


def test_kept_columns_stay_whole_even_when_wider_than_the_width(deployed):
    """At 40 columns the ids and times alone do not fit: the rows stay whole, wider."""
    result = run_in_process(deployed.root, "status", env={"COLUMNS": "40", "NO_COLOR": "1"})
    report = json.loads(run_in_process(deployed.root, "status", "--json").stdout)
    for row in report["instances"]:
        (line,) = [li for li in result.stdout.splitlines() if li.startswith(row["name"] + " ")]
        assert row["lastChange"] in line and TIME.search(line)


def test_without_a_width_a_pipe_gets_whole_cells(deployed):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    result = subprocess.run(
        [sys.executable, "-m", "unfurl_lite", "history"], cwd=deployed.root,
        env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=True,
    )
    assert "Ada Lovelace of the Analytical Engine Works" in result.stdout
    assert "…" not in result.stdout


def test_fitting_cuts_the_widest_text_first_and_never_a_kept_column():
    assert fit_widths([12, 40, 19], [True, False, True], 60) == [12, 25, 19]
    assert fit_widths([12, 40, 19], [True, False, True], 20) == [12, 4, 19]
    assert fit_widths([12, 40, 19], [True, False, True], None) == [12, 40, 19]
    assert cut("configured", 5) == "conf…" and cut("ok", 5) == "ok"
    assert wrap("Last job: A6BN1oKL0000 at 2026-11-23 01:50:20: done", 40) == (
        "Last job: A6BN1oKL0000 at\n  2026-11-23 01:50:20: done")
