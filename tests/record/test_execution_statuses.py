"""Cloudify's execution statuses (pending, queued, started, cancelling, force_cancelling,
kill_cancelling, cancelled, terminated, failed), shown live in history, show and --json."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ensemble_yaml, run_in_process, run_unfurl
from tests.execution_helpers import count, start_unfurl, wait_for
from tests.run.test_execution import gated, setup
from unfurl_lite.record.journal import list_journals
from unfurl_lite.run.observer import EXECUTION_STATUSES, JobState, execution_status


def _history(project) -> list[dict]:
    listed = run_in_process(project.root, "history", "--json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def _one_stubborn_operation(project) -> Path:
    """One node whose operation ignores SIGTERM and runs until ``marks/go`` exists; its
    start is marked in ``marks/a.start``. Returns the marks folder."""
    body = ("a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
            "        configure: 'trap \"\" TERM; echo $$ >> marks/a.start; "
            "while [ ! -e marks/go ]; do sleep 0.02; done'\n")
    setup(project, ["a"], {}, sleep=0)
    project.write(ensemble_yaml(body))
    return project.root / "marks"


def test_finished_jobs_are_terminated_failed_or_cancelled(project):
    setup(project, ["a", "b"], {"b": ["a"]}, sleep=0, failing={"b": "[ -e marks/broken ]"})
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0
    (project.root / "marks" / "broken").write_text("")
    assert run_in_process(project.root, "deploy", "--approve", "--force").returncode == 64
    failed, terminated = _history(project)
    assert (terminated["execution"], terminated["status"]) == ("terminated", "ok")
    assert (failed["execution"], failed["status"]) == ("failed", "error")
    table = run_in_process(project.root, "history").stdout
    assert "EXECUTION" in table.splitlines()[0]
    assert "terminated" in table and "failed" in table
    shown = run_in_process(project.root, "show", failed["changeId"], "--no-diff")
    assert "execution: failed" in shown.stdout
    again = json.loads(run_in_process(project.root, "show", failed["changeId"], "--json").stdout)
    assert again["job"]["execution"] == "failed"


def test_every_state_has_cloudifys_name():
    assert {execution_status(str(s), "") for s in JobState} <= set(EXECUTION_STATUSES)
    assert execution_status("succeeded", "degraded") == "terminated"
    assert execution_status("", "error") == "failed" and execution_status("", "ok") == "terminated"
    assert [execution_status(s) for s in ("pending", "queued")] == ["pending", "queued"]


@pytest.mark.parametrize("how", ["cancel", "force", "kill"])
def test_each_kind_of_cancel_reports_its_own_state(project, how):
    """The job tells its observers (the journal, the dashboard) which cancel it is in."""
    from unfurl_lite import api
    from unfurl_lite.run.observer import Observer
    from unfurl_lite.run.signals import JobControl

    marks = gated(project, ["a", "b"])
    states: list[str] = []

    class Seen(Observer):
        def job_changed(self, state: JobState) -> None:
            states.append(str(state))

    control = JobControl()
    request = api.JobRequest(ensemble=project.ensemble, workflow="deploy",
                             options=api.JobOptions(commit=False))
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(
        api.run_job(request, observer=Seen(), cancel=control)))
    worker.start()
    wait_for(lambda: count(marks, "start") >= 1)
    getattr(control, how)()
    if how == "cancel":
        wait_for(lambda: "cancelling" in states)
        control.kill()  # a plain cancel may escalate: a new state is reported
    (marks / "go").write_text("")
    worker.join(timeout=60)
    expected = {"cancel": ["cancelling", "kill_cancelling"], "force": ["force_cancelling"],
                "kill": ["kill_cancelling"]}[how]
    assert states == expected
    assert str(outcome[0].state) == "cancelled"


@pytest.mark.parametrize(("how", "state"), [("kill", "kill_cancelling"),
                                           ("force", "force_cancelling")])
def test_a_slow_cancel_signal_handler_still_wakes_the_job_at_once(project, how, state):
    """On a loaded machine the handler of ``unfurl cancel --kill``'s signal can outlast what
    is left of the job's 0.2 s wait, and CPython 3.11 then waits for the running operation
    to end: kill_cancelling was announced only after the kill's 5 s. A handler made slow
    here must still be answered before the operation ends."""
    import signal

    from unfurl_lite import api
    from unfurl_lite.run.observer import Observer
    from unfurl_lite.run.signals import JobControl

    marks = _one_stubborn_operation(project)
    events: list[str] = []

    class Seen(Observer):
        def job_changed(self, state: JobState) -> None:
            events.append(str(state))

        def task_finished(self, run) -> None:
            events.append("task ended")

    control = JobControl()

    def slow_handler(signum, frame) -> None:
        time.sleep(0.4)  # longer than the job's wait has left
        getattr(control, how)()

    def signaller() -> None:
        wait_for(lambda: count(marks, "start") >= 1)
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 3
        while state not in events and time.monotonic() < deadline:
            time.sleep(0.01)
        (marks / "go").write_text("")

    previous = signal.signal(signal.SIGUSR1, slow_handler)
    helper = threading.Thread(target=signaller)
    try:
        helper.start()
        request = api.JobRequest(ensemble=project.ensemble, workflow="deploy",
                                 options=api.JobOptions(commit=False))
        api.run_job(request, observer=Seen(), cancel=control)
    finally:
        helper.join(timeout=10)
        signal.signal(signal.SIGUSR1, previous)
    assert events.index(state) < events.index("task ended"), events


@pytest.mark.slow  # real processes, signalled
def test_running_and_cancelling_jobs_show_live(project):
    marks = _one_stubborn_operation(project)
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    [running] = _history(project)
    assert running["execution"] == "started" and running["changeId"]
    shown = run_unfurl(project.root, "show", running["changeId"], "--json")
    assert json.loads(shown.stdout)["job"]["execution"] == "started", shown.stderr
    assert run_unfurl(project.root, "cancel").returncode == 0
    wait_for(lambda: _history(project)[0]["execution"] == "cancelling", job)
    assert " cancelling " in run_unfurl(project.root, "history").stdout
    assert run_unfurl(project.root, "cancel", "--kill").returncode == 0
    # the operation ignores SIGTERM: the kill waits 5 s before SIGKILL, visibly
    wait_for(lambda: list_journals(project.root)[0].state == "kill_cancelling", job)
    assert _history(project)[0]["execution"] in ("kill_cancelling", "cancelled")
    job.communicate(timeout=60)
    assert job.returncode == 64
    [done] = _history(project)
    assert (done["execution"], done["status"]) == ("cancelled", "cancelled")


def test_a_job_holding_the_lock_before_its_first_task_is_pending(project):
    """Between taking the lock and starting its journal a job is Cloudify's pending."""
    setup(project, ["a"], {}, sleep=0)
    holder = subprocess.Popen(["sleep", "60"])
    try:
        (project.root / ".unfurl-lite.lock").write_text(json.dumps({
            "pid": holder.pid, "changeId": None, "command": "deploy",
            "host": os.uname().nodename, "since": time.time()}))
        [pending] = _history(project)
        assert pending["execution"] == "pending" and pending["workflow"] == "deploy"
        assert pending["changeId"] is None
    finally:
        holder.kill()
        holder.wait()
    (project.root / ".unfurl-lite.lock").unlink()
    assert _history(project) == []


def test_each_task_goes_through_cloudifys_task_states(project):
    """pending -> sending -> sent -> started -> succeeded | failed | rescheduled."""
    from unfurl_lite import api
    from unfurl_lite.run.observer import Observer

    setup(project, ["a", "b"], {"b": ["a"]}, sleep=0,
          failing={"b": "[ ! -e marks/b.tried ] && touch marks/b.tried"})
    seen: dict[str, list[str]] = {}

    class Seen(Observer):
        def job_started(self, job_id, instances, runs) -> None:
            for run in runs:
                seen.setdefault(run.task.target, []).append(str(run.state))

        def task_changed(self, run) -> None:
            states = seen.setdefault(run.task.target, [])
            if not states or states[-1] != str(run.state):
                states.append(str(run.state))

    request = api.JobRequest(ensemble=project.ensemble, workflow="deploy",
                             options=api.JobOptions(retries=1,
                                                    retry_interval=0.01))
    result = api.run_job(request, observer=Seen())
    assert str(result.state) == "succeeded"
    assert seen["a"] == ["pending", "sending", "sent", "started", "succeeded"]
    assert seen["b"] == ["pending", "sending", "sent", "started", "rescheduled",
                         "sending", "sent", "started", "succeeded"]


@pytest.mark.slow  # a real process, killed
def test_a_killed_job_stays_in_history_as_started_until_resumed(project):
    """Cloudify: an execution whose dispatcher died stays ``started`` (resumable); it does
    not vanish from the list of executions."""
    setup(project, ["a", "b"], {"b": ["a"]}, sleep=0)
    body = ("a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
            "        configure: 'echo $$ >> marks/a.start; "
            "while [ ! -e marks/go ]; do sleep 0.05; done'\n")
    project.write(ensemble_yaml(body))
    marks = project.root / "marks"
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    from tests.execution_helpers import kill9

    kill9(job)
    [killed] = _history(project)
    assert (killed["execution"], killed["changeId"]) == ("started", list_journals(
        project.root)[0].change_id)
    assert "interrupted" in killed["summary"] and "unfurl resume" in killed["summary"]
    table = run_unfurl(project.root, "history").stdout
    assert killed["changeId"] in table and "interrupted" in table
    shown = run_unfurl(project.root, "show", killed["changeId"], "--json")
    assert json.loads(shown.stdout)["job"]["execution"] == "started", shown.stderr
    (marks / "go").write_text("")
    resumed = run_unfurl(project.root, "resume", "--force")
    assert resumed.returncode == 0, resumed.stderr
    executions = [(j["changeId"], j["execution"]) for j in _history(project)]
    assert (killed["changeId"], "failed") in executions  # recorded as it stood
    assert executions[0][1] == "terminated"

