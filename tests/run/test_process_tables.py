"""Each job's executor kills only its own operations: two jobs in one process (a library
user running jobs through the API) do not share a table of running commands."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import ensemble_yaml, shell_node
from tests.execution_helpers import wait_for
from unfurl_lite import api
from unfurl_lite.run.observer import JobState, TaskState
from unfurl_lite.run.operations.processes import ProcessTable
from unfurl_lite.run.options import JobOptions
from unfurl_lite.run.outcome import JobResult
from unfurl_lite.run.signals import JobControl


def _ensemble(root: Path, command: str) -> Path:
    root.mkdir()
    path = root / "ensemble.yaml"
    path.write_text(ensemble_yaml(shell_node("node", repr(command))))
    return path


def _start(path: Path, control: JobControl) -> tuple[threading.Thread, list[JobResult | None]]:
    request = api.JobRequest(ensemble=path, workflow="deploy",
                             options=JobOptions(commit=False), dirty="ok")
    results: list[JobResult | None] = []
    thread = threading.Thread(target=lambda: results.append(api.run_job(request, cancel=control)))
    thread.start()
    return thread, results


def test_kill_cancelling_one_job_leaves_another_jobs_operation_running(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    doomed = _ensemble(tmp_path / "a", f"touch {marks}/a.start; sleep 60; touch {marks}/a.end")
    other = _ensemble(tmp_path / "b", f"touch {marks}/b.start; "
                      f"while [ ! -e {marks}/release ]; do sleep 0.02; done; touch {marks}/b.end")
    kill_a, control_b = JobControl(), JobControl()
    thread_a, result_a = _start(doomed, kill_a)
    wait_for(lambda: (marks / "a.start").exists())
    thread_b, result_b = _start(other, control_b)
    try:
        wait_for(lambda: (marks / "b.start").exists())
        kill_a.kill()
        thread_a.join(timeout=60)
        [job_a] = result_a
        assert job_a is not None and job_a.state == JobState.cancelled
        assert "killed by signal" in (job_a.runs[0].message or "")
        assert thread_b.is_alive() and not (marks / "b.end").exists()
    finally:
        (marks / "release").touch()
        thread_b.join(timeout=60)
        kill_a.kill()
        thread_a.join(timeout=60)
    [job_b] = result_b
    assert job_b is not None and job_b.state == JobState.succeeded
    assert [r.state for r in job_b.runs] == [TaskState.succeeded]
    assert (marks / "b.end").exists() and not (marks / "a.end").exists()


@pytest.mark.parametrize("kill", ["every task", "every task, not waiting", "its task"])
def test_a_command_added_after_its_kill_is_killed_too(kill: str) -> None:
    """A command's thread may have started it and not yet added it when a kill-cancel
    (a job's, or a Celery revoke of its task) stops the commands: it is killed as it is
    added, not left running (a job killed at that instant waited a minute for `sleep 60`).
    Another task's command added later is left alone."""
    table = ProcessTable()
    killed = {"every task": table.terminate_all, "every task, not waiting": table.terminate,
              "its task": lambda: table.terminate({"late"})}[kill]()
    assert killed == []
    late = subprocess.Popen(["sleep", "60"], start_new_session=True)
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        table.add("late", late)
        assert late.wait(timeout=30) == -15
        if kill == "its task":
            table.add("other", other)
            with pytest.raises(subprocess.TimeoutExpired):
                other.wait(timeout=0.5)
    finally:
        for process in (late, other):
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()
