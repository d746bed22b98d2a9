"""One exception hierarchy: the CLI turns any of these into a clear message and exit code 1.

Anything that is not an ``UnfurlLiteError`` is a bug in unfurl-lite and keeps its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the user's input, located as precisely as we know."""

    message: str
    file: str | None = None
    line: int | None = None  # 1-based, as editors count
    column: int | None = None  # 1-based
    path: str | None = None  # e.g. spec.service_template.topology_template.node_templates.app
    hint: str | None = None

    def format(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        text = f"{where}{self.message}"
        if self.path:
            text += f" (at {self.path})"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


class UnfurlLiteError(Exception):
    """Base of every error that is the user's input or environment, not a bug."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def format(self) -> str:
        text = self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class InputError(UnfurlLiteError):
    """The ensemble (or a file it includes) is not valid; carries every problem found."""

    def __init__(self, problems: list[Problem] | Problem, summary: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        count = len(self.problems)
        head = summary or (f"{count} problem{'s' if count != 1 else ''} found")
        super().__init__(head)

    def format(self) -> str:
        lines = [f"error: {self.message}:"] if len(self.problems) > 1 else []
        lines += [p.format() for p in self.problems]
        return "\n".join(lines)


class LimitExceeded(InputError):
    """A document over one of the loader's limits (keys, anchors, nodes, size): refused as
    found, never handed to a slower parser to be located better."""


class RenderRefused(InputError):
    """A job's templates read names that cannot exist: the job is refused before anything
    runs (as Unfurl 1.2.0 aborts a job whose templates fail to render) and exits as a
    failed job does."""

    exit_code = 64

    def format(self) -> str:
        return "\n".join([f"error: {self.message}:", *(p.format() for p in self.problems)])


class PlanError(UnfurlLiteError):
    """The requested workflow cannot be planned (unknown instance, operation, filter...)."""


class JobNotCreated(PlanError):
    """The job cannot be created from a valid ensemble (a template it would run an
    operation of is missing a required requirement): Unfurl 1.2.0's "Unable to create job",
    which exits 64 as a failed job does, with nothing run or recorded."""

    exit_code = 64


class OptionRefused(UnfurlLiteError):
    """An option of Unfurl's that unfurl-lite does not build (refused by name, exit 1)."""


class JobError(UnfurlLiteError):
    """A job could not start or could not be recorded."""


class LockError(JobError):
    """Another job holds the ensemble's lock."""


class GitError(UnfurlLiteError):
    """A git operation failed; the ensemble itself is already saved when this is raised."""


class ApprovalRequired(UnfurlLiteError):
    """A job that changes things needs --approve when there is no terminal to ask on."""


class StorageError(UnfurlLiteError):
    """A file could not be written: the disk is full, or a directory or file is read-only.

    ``keep_lock``: a job had started, so its lock stays (stale once the process ends) until
    ``unfurl resume`` records it."""

    def __init__(self, message: str, *, hint: str | None = None, keep_lock: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.keep_lock = keep_lock


class ExpressionError(UnfurlLiteError):
    """An input could not be evaluated (bad template, unknown input, missing attribute)."""


class UndefinedVariable(ExpressionError):
    """A query's ``$name`` that no ``vars:``, template variable or built-in defines: an
    error where the query starts with it or reads it elsewhere, a miss where it is a key
    (Unfurl's lookup finds nothing there)."""


class RenderTimeout(ExpressionError):
    """Rendering a template ran past the task's deadline."""


class RenderCancelled(ExpressionError):
    """The job was cancelled while a template rendered: the task did not start."""


class PathError(UnfurlLiteError):
    """A path named by the ensemble (or one of its records) leaves the project directory."""


class ToolMissing(UnfurlLiteError):
    """An external program a command needs (e.g. Graphviz's ``dot``) is not installed."""


class ChangeIdError(UnfurlLiteError, ValueError):
    """Text that is not a changeId (or a changeId that cannot be encoded).

    Also a ValueError, as it was when parsing a changeId was the only thing that raised it."""


class HistoryError(UnfurlLiteError):
    """A changeId or filter that names nothing in the history."""


FULL = (28, 122)  # ENOSPC, EDQUOT
READ_ONLY = (1, 13, 30)  # EPERM, EACCES, EROFS
STORAGE_ERRNOS = (*FULL, *READ_ONLY, 27)  # and EFBIG


def storage_error(exc: OSError, then: str = "", keep_lock: bool = False) -> StorageError:
    """One clear error for a failed write: the path, the reason, and what to do."""
    path = exc.filename or "a file"
    if exc.errno in FULL:
        todo = "free space on the disk that holds it"
    elif exc.errno in READ_ONLY:
        todo = ("make it writable (its permissions or its directory's, an immutable flag "
                "shown by lsattr, or a read-only mount)")
    else:
        todo = "fix the file system"
    return StorageError(f"cannot write {path}: {exc.strerror or exc}",
                        hint=todo + (f"; {then}" if then else ""), keep_lock=keep_lock)
