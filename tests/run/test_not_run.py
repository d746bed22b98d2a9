"""A task whose operation never started (no worker took it, the worker could not get the
job's commit, it was withdrawn while queued) changes nothing: the instance stays as it was
whatever its ``done`` input or a check's rules would say, the task fails with the reason,
and the summary counts it as not run (issue 31 items 1 and 6)."""

from __future__ import annotations

import copy
from concurrent.futures import Future

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Project, examples, suppressed
from unfurl_lite.api import JobOptions, load, make_plan, record_job
from unfurl_lite.run.job import run_plan
from unfurl_lite.run.observer import TaskState
from unfurl_lite.run.operations.base import OperationRequest, OperationResult

NOBODY = "no live worker serves queue 'far' (waited 300 s)"


class NoWorker:
    """An executor none of whose operations ever starts: what a Celery job meets when no
    worker serves the queue, the real case being tested in tests/run/test_distributed.py."""

    name = "nobody"
    capacity = None

    def __init__(self) -> None:
        self.on_started = None
        self.secrets: set[str] = set()
        self.sent: list[str] = []

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        self.sent.append(request.target)
        future: Future[OperationResult] = Future()
        future.set_result(OperationResult(success=False, modified=False, ran=False,
                                          worker="celery", error=NOBODY))
        return future

    def withdraw_pending(self) -> None: ...
    def kill_running(self) -> None: ...
    def shutdown(self) -> None: ...
    def abandon(self) -> None: ...


def ensemble_text(done: str, check_done: str | None = None) -> str:
    """Two nodes whose create, configure and delete each end with ``done``, and their
    check with ``check_done`` (default: the same)."""
    def node(name: str, extra: str = "") -> str:
        ops = "".join(
            f"\n                {op}:\n                  implementation: {{className: Shell}}"
            f"\n                  inputs:\n                    command: 'true'"
            f"\n                    done: {done}"
            for op in ("create", "configure", "delete"))
        check = (f"\n            Install:\n              operations:\n                check:"
                 f"\n                  implementation: {{className: Shell}}"
                 f"\n                  inputs:\n                    command: 'true'"
                 f"\n                    done: {check_done or done}")
        return (f"\n        {name}:\n          type: tosca.nodes.Root{extra}"
                f"\n          interfaces:\n            Standard:\n              operations:{ops}"
                + check)
    return ("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
            "    topology_template:\n      node_templates:" + node("db")
            + node("app", "\n          requirements:\n            - dependency: db") + "\n")


def run_with(project: Project, workflow: str, executor) -> tuple:
    ensemble = load(project.ensemble)
    before = copy.deepcopy(ensemble.instances)
    plan = make_plan(ensemble, workflow)
    options = JobOptions()
    try:
        result = run_plan(ensemble, plan, options, executor)
    finally:
        executor.shutdown()  # (its caller's to close, as the api does: no thread left behind)
    record_job(ensemble, result, options)
    return before, result


def state_of(instance) -> tuple:
    return (instance.status, instance.state, instance.created, instance.last_config_change,
            instance.last_state_change, dict(instance.attributes))


DONE = st.sampled_from([
    "{status: absent}", "{status: ok}", "{status: error}", "{modified: true}",
    "{success: true, status: absent}", "{modified: true, status: degraded}", "{}",
])


@settings(max_examples=examples(12),
          suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))
@given(done=DONE, workflow=st.sampled_from(["check", "deploy", "undeploy", "discover"]),
       deployed=st.booleans())
def test_a_task_that_never_ran_changes_no_instance(project, tmp_path_factory, done, workflow,
                                                   deployed):
    from unfurl_lite.run.executors.local import LocalExecutor

    root = tmp_path_factory.mktemp("p") / "project"
    root.mkdir()
    from tests.conftest import git

    git(root, "init", "-q")
    project = Project(root)
    project.write(ensemble_text(done))
    if deployed:  # deployed locally first, so there is a status to keep
        run_with(project, "deploy", LocalExecutor(2))
    nobody = NoWorker()
    before, result = run_with(project, workflow, nobody)
    ran = [r for r in result.runs if r.counted and r.change_id]
    if not nobody.sent:
        return  # the plan had nothing to run (undeploy of nothing)
    assert all(r.state in (TaskState.failed, TaskState.blocked) for r in ran)
    after = load(project.ensemble).instances
    assert {n: state_of(i) for n, i in after.items() if n in before} == {
        n: state_of(i) for n, i in before.items() if n in after}
    new = [state_of(i) for n, i in after.items() if n not in before]
    assert all(s[0] == "pending" and s[1:] == (None, None, None, None, {}) for s in new)
    assert str(result.state) == "failed" and result.exit_code("error") == 64
    not_run = [r for r in result.runs if r.not_run]
    assert not_run and all(r.message.startswith("did not run: " + NOBODY) for r in not_run)
    assert result.counts["not_run"] == len(not_run)
    assert result.counts["unknown"] == 0 and result.counts["changed"] == 0
    assert f"{len(not_run)} not run)" in result.summary


def test_a_check_no_worker_ran_finds_nothing_and_undeploy_still_removes(project):
    """The issue's case: a check whose tasks never ran recorded every instance absent and
    ended "succeeded"; undeploy then skipped resources that still existed."""
    from unfurl_lite.run.executors.local import LocalExecutor

    project.write(ensemble_text("{}", check_done="{status: absent}"))
    run_with(project, "deploy", LocalExecutor(2))
    assert {project.local("db"), project.local("app")} == {"ok"}
    _, checked = run_with(project, "check", NoWorker())
    assert str(checked.state) == "failed" and checked.exit_code("error") == 64
    assert {project.local("db"), project.local("app")} == {"ok"}
    _, removed = run_with(project, "undeploy", LocalExecutor(2))
    assert sorted(r.task.target for r in removed.runs if r.change_id) == ["app", "db"]
    assert {project.local("db"), project.local("app")} == {"absent"}
