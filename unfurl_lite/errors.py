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


class PlanError(UnfurlLiteError):
    """The requested workflow cannot be planned (unknown instance, operation, filter...)."""


class JobError(UnfurlLiteError):
    """A job could not start or could not be recorded."""


class LockError(JobError):
    """Another job holds the ensemble's lock."""


class GitError(UnfurlLiteError):
    """A git operation failed; the ensemble itself is already saved when this is raised."""


class ApprovalRequired(UnfurlLiteError):
    """A job that changes things needs --approve when there is no terminal to ask on."""
