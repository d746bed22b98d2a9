# pyright: reportUnusedImport=false
# (the TYPE_CHECKING imports name for type checkers what EXPORTS offers at run time)
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

TYPE_CHECKING = False  # typing itself is not imported: `import unfurl_lite` stays cheap

DISTRIBUTION = "unfurl_lite"  # the package's metadata directory: unfurl_lite-VERSION.dist-info

if TYPE_CHECKING:
    __version__: str  # read from the package's metadata when first used (_package_version)
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
    from unfurl_lite.run.operations.base import (
        RetryOperation,
    )

#: The one table of what ``unfurl_lite`` offers: public name -> "module:attribute".
#: ``__all__`` is made from it; the TYPE_CHECKING imports above name the same (a test says
#: so). The api's ``load`` is offered as ``load_ensemble`` (``load`` is a subpackage here).
EXPORTS: dict[str, str] = {
    **{name: f"unfurl_lite.api:{name}" for name in (
        "Cancelled", "Created", "EnsembleDiff", "HistoryFilters", "JobOptions", "JobRequest",
        "JobResult", "JobState", "Observer", "PlanOptions", "Resumption", "Shown", "cancel",
        "check_dirty", "diff", "enable_parse_cache", "export", "history", "init",
        "make_plan", "record_job", "resume", "run_job", "show", "status", "validate",
        "wait_for_turn")},
    "load_ensemble": "unfurl_lite.api:load",
    **{name: f"unfurl_lite.errors:{name}" for name in (
        "ApprovalRequired", "ChangeIdError", "ExpressionError", "GitError", "HistoryError",
        "InputError", "JobError", "LockError", "PathError", "PlanError", "Problem",
        "StorageError", "UnfurlLiteError")},
    "RetryOperation": "unfurl_lite.run.operations.base:RetryOperation",
}  # fmt: skip
#: the errors offered here (all of errors.py's classes)
ERRORS = tuple(name for name, target in EXPORTS.items() if target.startswith("unfurl_lite.errors"))

__all__ = sorted([*EXPORTS, "__version__"])  # pyright: ignore[reportUnsupportedDunderAll]


def __getattr__(name: str) -> object:
    """PEP 562: import a name's module when the name is first used."""
    import importlib  # start-up: here, not above: `import unfurl_lite` imports nothing

    if name == "api":  # the facade module itself, for unfurl_lite.api.plan and friends
        value: object = importlib.import_module("unfurl_lite.api")
    elif name in EXPORTS:
        module, _, attribute = EXPORTS[name].partition(":")
        value = getattr(importlib.import_module(module), attribute)
    elif name == "__version__":
        value = _package_version()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _package_version() -> str:
    """The version in the package's metadata, as pip installed it: the project's
    pyproject.toml when this is a source checkout (what its metadata would say), else
    the ``unfurl_lite-VERSION.dist-info`` directory on sys.path. Read from file and
    directory names, not importlib.metadata, so ``unfurl --version`` stays fast."""
    # start-up: `import unfurl_lite` runs no import statement
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        with open(os.path.join(here, "pyproject.toml"), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        text = ""
    if 'name = "unfurl-lite"' in text:
        for line in text.splitlines():
            if line.startswith("version = "):
                return line.partition("=")[2].partition("#")[0].strip().strip("\"'")
    prefix = DISTRIBUTION + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for found in names:
            if found.startswith(prefix) and found.endswith((".dist-info", ".egg-info")):
                return found[len(prefix):].rsplit(".", 1)[0]
    return "0+unknown"
