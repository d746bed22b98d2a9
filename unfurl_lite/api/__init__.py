# pyright: reportUnusedImport=false
# (the TYPE_CHECKING imports name for type checkers what EXPORTS offers at run time)
"""The facade: every use case the ``unfurl`` command offers, as one call each, without click.

The CLI parses options, makes one of these calls and renders what it returns; a library
user makes the same calls. Nothing here prints, installs signal handlers, tunes the garbage
collector or writes the parse cache unless asked (:func:`enable_parse_cache`).

Each use case lives in a module of this package, imported when first used, so that
``validate`` does not import the job machinery:

- jobs: :func:`load`, :func:`make_plan`, :func:`run_job` (a :class:`JobRequest` with
  :class:`PlanOptions` and :class:`JobOptions`), :func:`record_job`, :func:`check_dirty`,
  :func:`wait_for_turn`
- remembered: :func:`remembered_plan` (a job known to have nothing to do, before loading)
- control: :func:`resume`, :func:`cancel`
- distributed: :func:`agents`, :func:`serve_worker`
- inspect: :func:`history`, :func:`show`, :func:`diff`
- overview: :func:`status`
- project: :func:`examples`, :func:`init`, :func:`validate`, :func:`plan`, :func:`export`
"""

from __future__ import annotations

from unfurl_lite.exports import lazy

TYPE_CHECKING = False  # (typing itself stays off the command's start)
if TYPE_CHECKING:
    from unfurl_lite.api.control import (
        Cancelled,
        Resumption,
        cancel,
        resume,
    )
    from unfurl_lite.api.distributed import (
        Agents,
        agents,
        serve_worker,
    )
    from unfurl_lite.api.inspect import (
        EnsembleDiff,
        Shown,
        diff,
        history,
        show,
    )
    from unfurl_lite.api.jobs import (
        JobRequest,
        check_dirty,
        load,
        make_plan,
        record_job,
        run_job,
        wait_for_turn,
    )
    from unfurl_lite.api.overview import (
        status,
    )
    from unfurl_lite.api.project import (
        Created,
        examples,
        export,
        init,
        plan,
        validate,
    )
    from unfurl_lite.api.remembered import remembered_plan
    from unfurl_lite.load.parsecache import enable as enable_parse_cache
    from unfurl_lite.model import (
        changeid,
    )
    from unfurl_lite.record.history import Filters as HistoryFilters
    from unfurl_lite.run.observer import (
        JobState,
        Observer,
    )
    from unfurl_lite.run.options import (
        JobOptions,
        PlanOptions,
    )
    from unfurl_lite.run.outcome import (
        JobResult,
    )

#: public name -> "module:attribute" it is defined in
EXPORTS: dict[str, str] = {
    "Cancelled": "unfurl_lite.api.control:Cancelled",
    "Resumption": "unfurl_lite.api.control:Resumption",
    "cancel": "unfurl_lite.api.control:cancel",
    "resume": "unfurl_lite.api.control:resume",
    "Agents": "unfurl_lite.api.distributed:Agents",
    "agents": "unfurl_lite.api.distributed:agents",
    "serve_worker": "unfurl_lite.api.distributed:serve_worker",
    "EnsembleDiff": "unfurl_lite.api.inspect:EnsembleDiff",
    "Shown": "unfurl_lite.api.inspect:Shown",
    "diff": "unfurl_lite.api.inspect:diff",
    "history": "unfurl_lite.api.inspect:history",
    "show": "unfurl_lite.api.inspect:show",
    "JobRequest": "unfurl_lite.api.jobs:JobRequest",
    "check_dirty": "unfurl_lite.api.jobs:check_dirty",
    "load": "unfurl_lite.api.jobs:load",
    "make_plan": "unfurl_lite.api.project:make_plan",
    "record_job": "unfurl_lite.api.jobs:record_job",
    "remembered_plan": "unfurl_lite.api.remembered:remembered_plan",
    "run_job": "unfurl_lite.api.jobs:run_job",
    "wait_for_turn": "unfurl_lite.api.jobs:wait_for_turn",
    "PlanOptions": "unfurl_lite.run.options:PlanOptions",
    "Created": "unfurl_lite.api.project:Created",
    "examples": "unfurl_lite.api.project:examples",
    "export": "unfurl_lite.api.project:export",
    "init": "unfurl_lite.api.project:init",
    "plan": "unfurl_lite.api.project:plan",
    "validate": "unfurl_lite.api.project:validate",
    "status": "unfurl_lite.api.overview:status",
    "enable_parse_cache": "unfurl_lite.load.parsecache:enable",
    "changeid": "unfurl_lite.model.changeid",
    "HistoryFilters": "unfurl_lite.record.history:Filters",
    "JobOptions": "unfurl_lite.run.options:JobOptions",
    "JobResult": "unfurl_lite.run.outcome:JobResult",
    "JobState": "unfurl_lite.run.observer:JobState",
    "Observer": "unfurl_lite.run.observer:Observer",
}

__all__ = sorted(EXPORTS)  # pyright: ignore[reportUnsupportedDunderAll]  # made from EXPORTS


__getattr__, __dir__ = lazy(__name__, EXPORTS)
