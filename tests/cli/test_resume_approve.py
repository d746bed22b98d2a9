"""`unfurl resume` takes --approve/-a as every job command does; on a terminal it shows
what is left to run and asks first; without one it goes on (the job was approved when it
started)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, InvokeIn, Project
from tests.view.dashboard_helpers import cancelled


def test_resume_a_finishes_a_cancelled_job(project: Project, invoke_in: InvokeIn):
    job = cancelled(project)
    for flag in ("-a", "--approve"):
        result = invoke_in(project.root, "resume", flag)
        if flag == "-a":
            assert result.exit_code == 0, result.output
            assert f"Resuming job {job}" in result.output
            assert "deploy succeeded" in result.output
        else:  # nothing is left to resume
            assert result.exit_code == 1 and "no failed, cancelled or killed job" in result.output


def test_resume_in_a_pipe_goes_on_without_asking(project: Project, invoke_in: InvokeIn):
    cancelled(project)
    result = invoke_in(project.root, "resume")
    assert result.exit_code == 0, result.output
    assert "Plan for deploy (what is left to run):" in result.output
    assert "Run this job?" not in result.output


@pytest.mark.parametrize("where", ["resume -q", "-q resume"])
def test_resume_q_says_only_the_result_as_every_job_command(
        project: Project, invoke_in: InvokeIn, where: str):
    cancelled(project)
    result = invoke_in(project.root, *where.split())
    assert result.exit_code == 0, result.output
    assert "deploy succeeded" in result.output
    assert "what is left to run" not in result.output and "Resuming job" not in result.output


def test_resume_v_is_taken_as_every_job_command_takes_it(project: Project, invoke_in: InvokeIn):
    cancelled(project)
    result = invoke_in(project.root, "resume", "-v")
    assert result.exit_code == 0, result.output
    assert "Resuming job" in result.output and "deploy succeeded" in result.output


@pytest.mark.slow  # a pseudo-terminal and a process of its own
def test_resume_on_a_terminal_asks_and_no_runs_nothing(project: Project, invoke_in: InvokeIn):
    import pty

    job = cancelled(project)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", "resume"], cwd=project.root,
        stdin=follower, stdout=follower, stderr=follower, close_fds=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color",
             "COLUMNS": "100", "NO_COLOR": "1"})
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 120
    while b"Run this job?" not in seen and time.monotonic() < deadline:
        seen += os.read(leader, 65536)
    os.write(leader, b"n\n")
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the process closed the terminal
            break
        if not data:
            break
        seen += data
    process.wait(timeout=60)
    os.close(leader)
    text = seen.decode(errors="replace")
    assert "what is left to run" in text and "Run this job?" in text
    assert process.returncode == 1 and "Cancelled: nothing was run." in text
    again = invoke_in(project.root, "resume", "-a")  # still resumable
    assert again.exit_code == 0 and f"Resuming job {job}" in again.output
