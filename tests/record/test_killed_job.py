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


def test_a_torn_jobs_tsv_append_is_repaired_from_the_journal_on_resume(project, invoke):
    """Power lost mid-append: the job's line is whole, its second task's line is torn and
    the third's is missing. Resume completes them from the journal, writing none twice."""
    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b")
                                + shell_node("c", "echo c")))
    assert invoke("deploy", "--approve").exit_code == 0
    tsv = project.root / "jobs.tsv"
    whole = tsv.read_bytes().splitlines(keepends=True)
    assert len(whole) == 4
    tsv.write_bytes(b"".join(whole[:2]) + whole[2][:25])  # torn inside the third line
    change_id = _killed_while_recording(project)

    resumed = invoke("resume")
    assert resumed.exit_code == 0, resumed.output
    from unfurl_lite.load.jobslog import read_jobs_tsv

    ids = [r["changeId"] for r in read_jobs_tsv(tsv)]
    assert ids == [change_id, *(change_id[:8] + f"000{n}" for n in (1, 2, 3))]
    assert sorted(ids) == sorted(set(ids))
    assert "Nothing to do" in invoke("deploy", "--approve").output


def test_temp_files_of_killed_writers_are_removed_by_the_next_job(project, invoke):
    project.write(ensemble_yaml(shell_node("a", "echo a")))
    dead = _dead_pid()
    (project.root / "jobs").mkdir()
    left = [project.root / f".ensemble.yaml.{dead}-140000-3.tmp",
            project.root / "jobs" / f".journal2026-11-26-04-30-41-A6BQ4UfD.yaml.{dead}-1-7.tmp",
            project.root / f".unfurl-lite.lock.{dead}-2-0.tmp"]
    live = project.root / ".ensemble.yaml.1-140000-3.tmp"  # pid 1 is alive: being written
    mine = project.root / "notes.123.tmp"  # not one of ours
    for path in [*left, live, mine]:
        path.write_text("partial")
    assert invoke("deploy", "--approve").exit_code == 0
    assert [p for p in left if p.exists()] == []
    assert live.exists() and mine.exists()
