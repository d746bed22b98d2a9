"""Which code runs an operation: the Shell, Python or Template kind of its request."""

from __future__ import annotations

from unfurl_lite.model.narrow import is_map
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.operations.processes import ProcessTable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.run.operations.shell import Places


def run_operation(
    request: OperationRequest, processes: ProcessTable | None = None,
    places: Places | None = None,
) -> OperationResult:
    """Run one operation where this process is (a local thread or a worker); a command it
    starts is in ``processes``, the table of the executor that kill-cancels it. ``places``
    keeps the working directories already confined for this executor's job."""
    if request.refused:  # as Unfurl's "could not run": no done, no resultTemplate
        return OperationResult(success=False, modified=False, error=request.refused,
                               skipped=not request.dryrun)
    if request.kind == "Shell":
        # start-up: keeps run.operations.shell off dispatch's import until run_operation() runs
        from unfurl_lite.run.operations import shell

        return shell.run(request, processes, places)
    if request.kind == "Python":
        # start-up: keeps run.operations.python (2 modules) off `deploy` until run_operation() runs
        from unfurl_lite.run.operations import python

        return python.run(request, processes)
    # Template: nothing runs; `run`/`done` were evaluated by the controller
    run = request.inputs.get("run")
    if request.dryrun:
        # as Unfurl's TemplateConfigurator: a true `dryrun` input makes it dry-runnable, and
        # a mapping given there is the result instead of `run`'s
        pretend = request.inputs.get("dryrun")
        if not pretend:  # no dry-run form: the job decides what that means for its workflow
            return OperationResult(success=True, modified=False, skipped=True)
        if is_map(pretend):
            run = pretend
    outputs: dict[str, Any] = dict(run) if is_map(run) else (
        {"result": run} if run is not None else {})
    return OperationResult(success=True, modified=None, outputs=outputs)
