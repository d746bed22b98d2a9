"""What a check finds sets the node state as Unfurl 1.2.0 sets it (issue 28 §3): when the
check changed the instance's status and set no node state itself, ok is ``started``, error
``error``, absent ``deleted`` for an instance that was brought up and ``initial`` for one
never deployed. Each scenario was run with Unfurl 1.2.0 (tests/data/unfurl120/
28-check-findings: the ensemble, and what its ``check`` job left)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Project, ensemble_yaml, examples, run_in_process, safe_load
from unfurl_lite.model.entities import NodeState, Status
from unfurl_lite.run.status import state_found

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "28-check-findings"


def ready_states(text: str) -> dict[str, dict]:
    return {name: record["readyState"]
            for name, record in safe_load(text)["status"]["instances"].items()}


@pytest.mark.parametrize("scenario, steps", [
    ("never-deployed", [("check",)]),
    ("deployed", [("deploy",), ("check",)]),
])
def test_a_check_sets_the_node_state_as_unfurl(project: Project, scenario: str,
                                              steps: list[tuple[str, ...]]) -> None:
    project.write((DATA / scenario / "ensemble.yaml").read_text())
    for step in steps:
        run_in_process(project.root, *step, "--approve", "--dirty=ok", "--commit",
                       "--jobexitcode", "never")
    theirs = ready_states((DATA / scenario / "ensemble.after-check.yaml").read_text())
    assert ready_states(project.ensemble.read_text()) == theirs


def test_a_check_that_finds_what_was_recorded_changes_no_state(project: Project) -> None:
    project.write(ensemble_yaml("""\
        steady:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure: echo hi
            Install:
              check:
                implementation: Template
                inputs:
                  done:
                    status: ok
        """))
    for step in ("deploy", "check"):
        proc = run_in_process(project.root, step, "--approve", "--dirty=ok")
        assert proc.returncode == 0, proc.stderr
    assert project.status()["steady"]["readyState"] == {"local": "ok", "state": "configured"}


DEPLOYED = [s for s in NodeState if s not in (NodeState.initial,)]


@settings(max_examples=examples(60))
@given(st.sampled_from(list(Status)), st.sampled_from([None, *NodeState]))
def test_the_state_a_finding_gives(status: Status, state: NodeState | None) -> None:
    found = state_found(status, state)
    if status == Status.absent:
        assert found == (NodeState.deleted if state in DEPLOYED else NodeState.initial)
    elif status in (Status.ok, Status.error, Status.pending):
        assert found == {Status.ok: NodeState.started, Status.error: NodeState.error,
                         Status.pending: NodeState.initial}[status]
    else:  # degraded, unknown: the check says nothing about the node's state
        assert found is None


def test_a_passing_check_leaves_what_a_failed_job_left(project: Project) -> None:
    """A check that succeeds without reporting a status changes no status: an instance a
    failed deploy left ``error`` stays ``error``; a failing check makes it ``unknown``, and
    the next passing check leaves it ``unknown``. The same steps with Unfurl 1.2.0 (probed
    at the tenth sitting) left error, error, unknown, unknown, node state ``configuring``."""
    project.write(ensemble_yaml("""\
        web:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo create
              configure: test ! -e fail-configure
              start: echo start
            Install:
              check: test ! -e fail-check
        """))
    (project.root / "fail-configure").write_text("")
    seen = []
    for step, fail in (("deploy", None), ("check", None), ("check", "fail-check"),
                       ("check", None)):
        if fail:
            (project.root / fail).write_text("")
        run_in_process(project.root, step, "--approve", "--jobexitcode", "never")
        (project.root / "fail-check").unlink(missing_ok=True)
        seen.append(tuple(project.status()["web"]["readyState"].get(k)
                          for k in ("local", "state")))
    assert seen == [("error", "configuring"), ("error", "configuring"),
                    ("unknown", "configuring"), ("unknown", "configuring")]
