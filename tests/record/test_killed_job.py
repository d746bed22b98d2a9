"""One notion of a killed job: a job whose process died while it wrote its records is
killed for ``status`` (and the stale-lock advice) exactly as it is for ``resume``."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import ensemble_yaml, shell_node
from unfurl_lite.record import interrupted, resume
from unfurl_lite.record.journal import list_journals
from unfurl_lite.record.journal_format import write_journal


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _killed_while_recording(project) -> str:
    """A finished job's journal as its process leaves it when killed before the journal
    is marked recorded."""
    [journal] = list_journals(project.root)
    write_journal(journal.path, {**journal.data, "recorded": False, "pid": _dead_pid()})
    return journal.change_id


def test_a_job_killed_while_writing_its_records_is_interrupted_for_status_and_resume(
    project, invoke
):
    project.write(ensemble_yaml(shell_node("app", "echo app")))
    assert invoke("deploy", "--approve").exit_code == 0
    change_id = _killed_while_recording(project)

    status = invoke("status")
    assert f"Job {change_id} (deploy) was interrupted" in status.output
    assert "finish it with: unfurl resume" in status.output
    report = json.loads(invoke("status", "--json").output)
    assert report["interrupted"]["changeId"] == change_id

    [journal] = list_journals(project.root)
    assert interrupted.killed(journal)
    assert resume.find_job(project.root).change_id == change_id

    resumed = invoke("resume")
    assert resumed.exit_code == 0, resumed.output
    assert interrupted.find(project.root) is None
    assert "interrupted" not in invoke("status").output


def test_a_running_job_is_never_killed(project, invoke):
    project.write(ensemble_yaml(shell_node("app", "echo app")))
    assert invoke("deploy", "--approve").exit_code == 0
    [journal] = list_journals(project.root)
    alive = {**journal.data, "recorded": False, "state": "started"}  # this process: alive
    write_journal(journal.path, alive)
    [journal] = list_journals(project.root)
    assert interrupted.running(journal) and not interrupted.killed(journal)
    assert interrupted.find(project.root) is None
