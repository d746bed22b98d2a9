"""Cloudify's execution model with real processes: resume lineages, cancelled and running
jobs in history and status."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_in_process, run_unfurl
from tests.execution_helpers import count, start_unfurl, wait_for
from tests.run.test_execution import gated, setup
from unfurl_lite.record.journal import list_journals


def test_only_the_newest_job_of_a_resume_lineage_resumes(project):
    marks = setup(project, ["a", "b"], {"b": ["a"]}, sleep=0,
                  failing={"a": "[ ! -e marks/fixed ]"})
    assert run_in_process(project.root, "deploy", "--approve").returncode == 64
    first = list_journals(project.root)[0].change_id
    assert run_in_process(project.root, "resume", first).returncode == 64  # still failing
    second = list_journals(project.root)[-1].change_id
    assert second != first
    starts = len((marks / "a.start").read_text().split())
    refused = run_in_process(project.root, "resume", first)
    assert refused.returncode == 1
    assert f"already resumed by job {second}" in refused.stderr
    assert f"unfurl resume {second}" in refused.stderr
    assert len((marks / "a.start").read_text().split()) == starts  # nothing ran again
    (marks / "fixed").write_text("")
    assert run_in_process(project.root, "resume", second).returncode == 0
    refused = run_in_process(project.root, "resume", second)
    assert refused.returncode == 1 and "already resumed" in refused.stderr


@pytest.mark.slow  # a real process, signalled or killed
def test_cancelled_job_shows_cancelled_and_running_job_is_listed(project):
    marks = gated(project, ["a", "b"])
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    listed = run_unfurl(project.root, "history", "--json")
    assert listed.returncode == 0, listed.stderr
    [running] = json.loads(listed.stdout)
    assert running["state"] == "started" and running["workflow"] == "deploy"
    assert "started" in run_unfurl(project.root, "history").stdout
    assert run_unfurl(project.root, "cancel").returncode == 0
    wait_for(lambda: list_journals(project.root)[0].state == "cancelling", job)
    (marks / "go").write_text("")
    job.communicate(timeout=60)
    assert job.returncode == 64
    [cancelled] = json.loads(run_unfurl(project.root, "history", "--json").stdout)
    assert cancelled["status"] == "cancelled" and cancelled["state"] == "cancelled"
    table = run_unfurl(project.root, "history").stdout
    assert "cancelled" in table
    status = run_unfurl(project.root, "status")
    assert "Last job: " in status.stdout and " cancelled " in status.stdout, status.stdout


@pytest.mark.slow  # a real process, signalled or killed
def test_a_second_plain_cancel_does_not_escalate(project):
    marks = gated(project, ["a", "b"])
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    assert run_unfurl(project.root, "cancel").returncode == 0
    wait_for(lambda: list_journals(project.root)[0].state == "cancelling", job)
    again = run_unfurl(project.root, "cancel")
    assert again.returncode == 0 and "already cancelling" in again.stdout
    (marks / "go").write_text("")
    job.communicate(timeout=60)
    assert job.returncode == 64
    assert count(marks, "end") == 1 and count(marks, "start") == 1  # a finished, b never began
    assert project.local("a") == "ok"


@pytest.mark.slow  # a real process, signalled or killed
def test_force_cancel_records_the_job_cancelled_at_once(project):
    marks = setup(project, ["a"], {}, sleep=4)
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    assert run_unfurl(project.root, "cancel", "--force").returncode == 0
    # recorded while the operation still runs: nothing waited for it
    wait_for(lambda: not (project.root / ".unfurl-lite.lock").exists())
    assert count(marks, "end") == 0
    [journal] = list_journals(project.root)
    assert journal.state == "cancelled"
    [entry] = json.loads(run_unfurl(project.root, "history", "--json").stdout)
    assert entry["status"] == "cancelled"
    assert project.local("a") == "unknown"
    job.communicate(timeout=60)
    assert job.returncode == 64
    wait_for(lambda: count(marks, "end") == 1)  # left to finish on its own


@pytest.mark.slow  # a real process, signalled or killed
def test_second_job_is_refused_with_a_hint_or_queued(project, tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    marks = gated(project, ["a"])
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    refused = run_unfurl(project.root, "execute-operation", "Standard.configure", "--approve")
    assert refused.returncode == 1 and "--queue" in refused.stderr
    log = tmp_path / "queued.err"
    with open(log, "w") as err:
        queued = subprocess.Popen(
            [sys.executable, "-m", "unfurl_lite", "execute-operation", "Standard.configure",
             "--approve", "--queue"],
            cwd=project.root, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
        wait_for(lambda: "Queued: waiting for job" in log.read_text(), queued)
        # Cloudify's queued execution, listed until its turn (with no changeId yet)
        jobs = json.loads(run_unfurl(project.root, "history", "--json").stdout)
        assert [(j["execution"], j["workflow"]) for j in jobs] == [
            ("queued", "execute_operation"), ("started", "deploy")]
        assert jobs[0]["changeId"] is None
        assert " queued " in run_unfurl(project.root, "history").stdout
        (marks / "go").write_text("")
        job.communicate(timeout=60)
        queued.wait(timeout=60)
    assert job.returncode == 0
    assert queued.returncode == 0, log.read_text()
    assert len((marks / "a.start").read_text().split()) == 2  # the deploy's, then the queued run
    assert len((marks / "a.end").read_text().split()) == 2
    jobs = json.loads(run_unfurl(project.root, "history", "--json").stdout)
    assert [j["execution"] for j in jobs] == ["terminated", "terminated"]
    assert not list(project.root.glob(".unfurl-lite.queue-*"))
