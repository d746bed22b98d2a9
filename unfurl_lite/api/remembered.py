"""What is known of a job before its ensemble is loaded: the plan remembered as having
nothing to do for the ensemble's text as it is now (:mod:`~unfurl_lite.plan.verdicts`).

Light on purpose: the command asks here before it imports the job machinery, so that a
redeploy with nothing to do costs the interpreter, the command line and one read of the
file.
"""

from __future__ import annotations

from pathlib import Path

from unfurl_lite.errors import PlanError
from unfurl_lite.load import yamlio
from unfurl_lite.model.ensemble import LOCK_NAME
from unfurl_lite.plan.tasks import Plan
from unfurl_lite.run.options import PlanOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def rememberable(custom: bool, inputs: dict[str, Any] | None) -> bool:
    """A job whose plan depends on the text and its options alone (no topology inputs of
    its own, not a workflow the topology defines)."""
    return not custom and not inputs


def remembered_plan(
    ensemble: str | Path | None, workflow: str, options: PlanOptions, *, custom: bool = False,
    inputs: dict[str, Any] | None = None, queue: bool = False, query: str | None = None,
) -> Plan | None:
    """The plan of ``workflow`` when it is known to have nothing to do for the ensemble's
    text as it is now, found without loading the ensemble; None when the job must be
    planned (:func:`~unfurl_lite.api.jobs.run_job`): also for a job that waits its turn
    (``queue``) or answers a ``query`` from the loaded ensemble."""
    # start-up: keeps load.loader (11 modules) off remembered's import until remembered_plan() runs
    from unfurl_lite.load.loader import resolve_path
    from unfurl_lite.plan import verdicts

    if queue or query or not rememberable(custom, inputs):
        return None
    try:
        given = options.for_workflow(workflow)
    except PlanError:  # said by run_job, after the ensemble's own problems
        return None
    file = resolve_path(ensemble)
    if (file.parent / LOCK_NAME).exists():  # a job runs, or was killed: plan it (api/jobs)
        return None
    return verdicts.recall(file, yamlio.read_text(file), workflow, given)
