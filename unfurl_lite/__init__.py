"""unfurl-lite: a git-backed deployment tool compatible with Unfurl's ensemble format.

The public library API, each name imported only when first used (PEP 562), so that
``import unfurl_lite`` and ``unfurl --version`` stay fast::

    import unfurl_lite

    ensemble = unfurl_lite.load_ensemble("ensemble.yaml")
    print(unfurl_lite.status(ensemble)["counts"])
    result = unfurl_lite.run_job(unfurl_lite.JobRequest("ensemble.yaml", "deploy"))
    print(result.summary)

Every use case is in :mod:`unfurl_lite.api` (see there); the errors are those of
:mod:`unfurl_lite.errors`, all children of :class:`UnfurlLiteError`. A Python operation
raises :class:`RetryOperation` to ask for a retry.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: `import unfurl_lite` stays cheap

__version__ = "0.1.0"

if TYPE_CHECKING:
    from unfurl_lite.api import (
        Cancelled,
        Created,
        EnsembleDiff,
        HistoryFilters,
        JobOptions,
        JobRequest,
        JobResult,
        JobState,
        Observer,
        PlanOptions,
        Resumption,
        Shown,
        cancel,
        check_dirty,
        diff,
        enable_parse_cache,
        export,
        history,
        init,
        make_plan,
        record_job,
        resume,
        run_job,
        show,
        status,
        validate,
        wait_for_turn,
    )
    from unfurl_lite.api import load as load_ensemble
    from unfurl_lite.errors import (
        ApprovalRequired,
        ChangeIdError,
        ExpressionError,
        GitError,
        HistoryError,
        InputError,
        JobError,
        LockError,
        PathError,
        PlanError,
        Problem,
        StorageError,
        UnfurlLiteError,
    )
    from unfurl_lite.run.operations.base import RetryOperation

#: The api's names offered here too; ``load`` and ``plan`` are the subpackages' names here,
#: so the api's ``load`` is offered as ``load_ensemble`` and its ``plan`` as ``make_plan``
RENAMED = {"load_ensemble": "load"}
API = (
    "Cancelled", "Created", "EnsembleDiff", "HistoryFilters", "JobOptions", "JobRequest",
    "JobResult", "JobState", "Observer", "PlanOptions", "Resumption", "Shown", "cancel",
    "check_dirty", "diff", "enable_parse_cache", "export", "history", "init", "load_ensemble",
    "make_plan", "record_job", "resume", "run_job", "show", "status", "validate",
    "wait_for_turn",
)  # fmt: skip
ERRORS = (
    "ApprovalRequired", "ChangeIdError", "ExpressionError", "GitError", "HistoryError",
    "InputError", "JobError", "LockError", "PathError", "PlanError", "Problem",
    "StorageError", "UnfurlLiteError",
)  # fmt: skip

__all__ = [
    "ApprovalRequired",
    "Cancelled",
    "ChangeIdError",
    "Created",
    "EnsembleDiff",
    "ExpressionError",
    "GitError",
    "HistoryError",
    "HistoryFilters",
    "InputError",
    "JobError",
    "JobOptions",
    "JobRequest",
    "JobResult",
    "JobState",
    "LockError",
    "Observer",
    "PathError",
    "PlanError",
    "PlanOptions",
    "Problem",
    "Resumption",
    "RetryOperation",
    "Shown",
    "StorageError",
    "UnfurlLiteError",
    "__version__",
    "cancel",
    "check_dirty",
    "diff",
    "enable_parse_cache",
    "export",
    "history",
    "init",
    "load_ensemble",
    "make_plan",
    "record_job",
    "resume",
    "run_job",
    "show",
    "status",
    "validate",
    "wait_for_turn",
]


def __getattr__(name: str) -> object:
    """PEP 562: import a name's module when the name is first used."""
    if name in API:
        value = getattr(importlib.import_module("unfurl_lite.api"), RENAMED.get(name, name))
    elif name in ERRORS:
        value = getattr(importlib.import_module("unfurl_lite.errors"), name)
    elif name == "api":  # the facade module itself, for unfurl_lite.api.plan and friends
        value = importlib.import_module("unfurl_lite.api")
    elif name == "RetryOperation":
        value = importlib.import_module("unfurl_lite.run.operations.base").RetryOperation
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
