"""Which operations Unfurl 1.2.0's deploy runs again on a recorded instance: its plan's
rules (create when missing or failed before it was created, configure when never
configured or in error, start unless started) and its job's entry test (an operation
whose state the instance already passed is skipped). The ensemble records 34 instances,
every status and state with and without a create operation; the expected tasks are what
Unfurl 1.2.0 ran with ``--repair error`` and ``--repair degraded``
(tests/data/unfurl120/repair-phases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from unfurl_lite.model.entities import Instance, NodeState, Status
from unfurl_lite.plan.lifecycle import unfurl_phases

UNFURL = Path(__file__).parent.parent / "data" / "unfurl120" / "repair-phases"


def _tasks(text: str) -> list[tuple[str, str, str]]:
    """(target, operation) of each task row; the reason as its summary gives it."""
    rows = (dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            for line in text.splitlines())
    return [(row["target"], row["operation"], row["summary"].rpartition("reason: ")[2])
            for row in rows if "target" in row]


@pytest.mark.parametrize("repair", ["error", "degraded"])
def test_repair_runs_what_unfurl_runs(project, invoke, repair):
    project.write((UNFURL / "ensemble.yaml").read_text())
    result = invoke("deploy", "--approve", "--repair", repair)
    assert result.exit_code == 0, result.output
    theirs = _tasks((UNFURL / f"repair-{repair}.jobs.tsv").read_text())
    assert _tasks("\n".join(project.jobs_tsv())) == theirs
    done = {(target, operation) for target, operation, _ in theirs}
    assert ("::n3c_error_started", "configure") not in done  # already past it
    assert ("::n8c_unknown_configured", "start") in done
    assert ("::n8c_unknown_configured", "create") not in done


STATES = [None, *NodeState]
ORDER = list(NodeState)
REACHES = {"create": NodeState.created, "configure": NodeState.configured,
           "start": NodeState.started}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("status", list(Status))
def test_no_operation_runs_whose_state_the_instance_passed(status, state):
    """Whatever the instance's record: create only if it has a create operation; no
    operation whose state the instance already passed (up to started); a started instance
    with a create operation runs nothing (Unfurl's deploy is done with it)."""
    for has_create in (True, False):
        phases = unfurl_phases(Instance("i", "t", status=status, state=state), has_create)
        assert has_create or "create" not in phases
        if state is not None and ORDER.index(state) <= ORDER.index(NodeState.started):
            assert all(ORDER.index(REACHES[p]) >= ORDER.index(state) for p in phases)
        if state == NodeState.started and has_create:
            assert phases == frozenset()
