"""What a job says when it ends: check names what it found in every output mode, the
summary's partition adds up, each task that did not simply succeed is said once."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import InvokeIn, Project, init_example, run_in_process
from tests.view.dashboard_helpers import ENSEMBLE
from unfurl_lite.run.outcome import (
    CANCELLING,
    OUTCOMES,
    partition,
    partition_text,
    task_outcome,
)

STATES = ["pending", "sending", "sent", "started", "succeeded", "failed", "rescheduled",
          "blocked", "skipped"]
JOB_STATES = ["succeeded", "failed", "cancelled", "cancelling", "started", "force_cancelling",
              "kill_cancelling"]
PARTITION = re.compile(r"^(\d+) tasks?: (\d+) ok, (\d+) failed, (\d+) blocked, (\d+) cancelled, "
                       r"(\d+) skipped, (\d+) not run$", re.M)


def test_check_in_a_pipe_names_the_instance_it_found_absent(invoke_in: InvokeIn,
                                                            tmp_path: Path):
    root = init_example(invoke_in, tmp_path, "check-discover")
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    (root / "state" / "server").unlink()  # the server is gone
    piped = run_in_process(root, "check")  # stdout is no terminal, as in `unfurl check | cat`
    assert piped.returncode == 0, piped.stderr
    table = piped.stdout[piped.stdout.index("INSTANCE"):].splitlines()
    assert table[0].split() == ["INSTANCE", "STATUS", "STATE", "CHANGE"]
    # as Unfurl: a check that finds a deployed instance absent finds it deleted
    assert table[1].split() == ["server", "absent", "deleted", "ok", "->", "absent"]
    document = json.loads(run_in_process(root, "check", "--json").stdout)
    assert document["changes"] == [{"instance": "server", "status": "absent",
                                    "state": "deleted", "was": "absent",
                                    "wasState": "deleted", "change": "unchanged"}]


def test_the_partition_adds_up_after_a_cancel_and_unrun_tasks_are_said_once(
        project: Project):
    from tests.view.dashboard_helpers import cancelled
    from unfurl_lite.cli import render
    from unfurl_lite.run.outcome import JobResult

    seen: list[JobResult] = []
    cancelled(project, keep=seen.append)
    text = render.summary_text(seen[0])
    total, *counts = map(int, PARTITION.search(text).groups())
    assert total == sum(counts) == seen[0].counts["tasks"]
    assert counts[3] == total - 1  # all but the first task were cancelled
    assert not re.search(r": (pending|sending): ?$", text, re.M)  # no empty `pending: `
    assert len(re.findall("cancelled", text.split("\n", 2)[2])) <= 2  # one grouped line
    assert f"{total - 1} tasks cancelled: the job was cancelled before they started" in text
    assert text.rstrip().endswith("Finish it with: unfurl resume")


def test_heal_says_why_it_skipped_once_and_its_plan_counts_what_its_summary_counts(
        invoke_in: InvokeIn, tmp_path: Path):
    root = init_example(invoke_in, tmp_path, "scaled-web")
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    result = run_in_process(root, "heal", "web_1", "--approve")  # everything is healthy
    assert result.returncode == 0, result.stderr
    out = result.stdout
    skipped = re.findall(r"^  (\d+) tasks skipped: (.+?) \(", out, re.M)
    assert len(skipped) == 1  # one line says why, for every skipped task
    assert "skipped: skipped" not in out + result.stderr
    plan = out.split("\nJob ", 1)[0]
    steps = re.findall(r"^    \d+\. (.*)$", plan, re.M)
    counted = [s for s in steps if not s.startswith("(no operation: state only)")]
    stated = re.search(r"^  (\d+) tasks to count; \d+ steps? only set a state$", plan, re.M)
    summary = re.search(r": (\d+) tasks \(", out)
    assert summary and int(summary.group(1)) == len(counted)
    assert stated is None if len(counted) == len(steps) else stated.group(1) == summary.group(1)
    assert PARTITION.search(out).group(1) == summary.group(1)
    assert int(skipped[0][0]) == int(PARTITION.search(out).group(6))


def test_a_failed_jobs_failures_are_each_said_once_with_their_whole_message(
        project: Project):
    project.write(ENSEMBLE.replace('echo configured', 'echo the disk is full ' + "x" * 300
                                   + ' >&2; exit 3'))
    result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 64
    failure = [line for line in result.stdout.splitlines() if "db Standard.configure" in line]
    record = next((project.root / "jobs").glob("job*.yaml")).read_text()
    message = re.search(r"message: '?(exit code 3: the disk is full x+[^'\n]*)", record).group(1)
    assert len(message) > 250  # long: once cut at 200 characters
    assert failure == [f"  db Standard.configure: failed: {message}"]  # said once, whole
    assert result.stderr.count("db: Standard.configure failed") == 1  # the event, once


@given(st.lists(st.sampled_from(STATES), max_size=40), st.sampled_from(JOB_STATES))
def test_every_task_is_in_exactly_one_outcome(states: list[str], job_state: str):
    counts = partition(task_outcome(s, job_state) for s in states)
    assert set(counts) == set(OUTCOMES) and sum(counts.values()) == len(states)
    text = partition_text(counts)
    assert PARTITION.fullmatch(text) and int(text.split()[0]) == len(states)
    if job_state in CANCELLING:
        assert counts["not run"] == 0
    else:
        assert counts["cancelled"] == 0


def test_tasks_no_worker_ran_are_not_run_in_the_partition(project: Project):
    from tests.run.test_not_run import NoWorker, ensemble_text, run_with
    from unfurl_lite.cli import render

    project.write(ensemble_text("{}"))
    _, result = run_with(project, "deploy", NoWorker())
    text = render.summary_text(result)
    total, ok, failed, blocked, cancelled, skipped, not_run = map(
        int, PARTITION.search(text).groups())
    assert not_run == result.counts["not_run"] > 0 and failed == 0
    assert total == not_run + blocked and ok == cancelled == skipped == 0
    assert re.search(r"^  (\S+ Standard\.create: not run|\d+ tasks not run): did not run",
                     text, re.M)


REPAIRED = """apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
        flaky:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create:
                implementation: test -f fixed
                inputs: {done: {modified: true}}
              configure: echo configured
"""


def test_where_unfurls_count_and_the_partition_differ_the_job_says_which_task_and_why(
        project: Project, invoke):
    """unfurl-cases 104: the repaired create succeeds while its instance is still in error
    (Unfurl's line: 1 failed; the partition: 0 failed): a note names it and says why."""
    project.write(REPAIRED)
    failed = invoke("deploy", "--approve", "--json")
    assert failed.exit_code != 0
    document = json.loads(failed.output[failed.output.index("{"):])
    assert document["partition"]["failed"] == document["counts"]["failed"] == 1
    assert document["summaryNotes"] == []  # the two agree: nothing to explain
    (project.ensemble.parent / "fixed").write_text("")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "2 tasks (2 changed, 1 ok, 1 failed, 0 blocked" in result.output
    assert "2 tasks: 2 ok, 0 failed" in result.output
    assert ("note: Unfurl's count (first line) calls 1 task failed that succeeded here: "
            "flaky Standard.create (its instance was still in error") in result.output


UNFURL_STATUS = [None, "ok", "error", "unknown", "degraded"]


@given(st.lists(st.tuples(st.sampled_from(STATES), st.sampled_from(UNFURL_STATUS),
                          st.sampled_from(UNFURL_STATUS), st.booleans()), max_size=12),
       st.sampled_from(JOB_STATES))
def test_the_notes_account_for_every_failed_task_the_two_counts_disagree_on(runs, job_state):
    """Unfurl's failed count = the partition's failed + what the notes say it calls failed
    - what they say it calls unknown, whatever the tasks' states and statuses."""
    from types import SimpleNamespace

    from unfurl_lite.api.report import summary_notes
    from unfurl_lite.model.entities import Operation, Status
    from unfurl_lite.plan.tasks import Task
    from unfurl_lite.run.observer import TaskState
    from unfurl_lite.run.operations.base import OperationResult
    from unfurl_lite.run.outcome import TaskRun, summary_counts

    made = [TaskRun(
        task=Task(n, f"i{n}", "t", Operation("Standard", "create", None), "add", "deploy"),
        state=TaskState(state), status=Status(status) if status else None,
        target_status=Status(target) if target else None,
        result=OperationResult(success=False, ran=ran) if state == "failed" else None)
        for n, (state, status, target, ran) in enumerate(runs)]
    counts = summary_counts(made)
    parts = partition(task_outcome(str(r.state), job_state) if not r.not_run else "not run"
                      for r in made)
    notes = summary_notes(SimpleNamespace(runs=made, state=job_state))
    said = {"failed": 0, "unknown": 0}
    for note in notes:
        found = re.match(r"note: Unfurl's count \(first line\) calls (\d+) tasks? (\w+) ", note)
        said[found.group(2)] += int(found.group(1))
    assert counts["failed"] == parts["failed"] + said["failed"] - said["unknown"]
