"""The ensemble's git repository: dirty checks, the job's commit, history look-ups.

Every operation is one call of the ``git`` command, as GitPython itself would make it:
importing GitPython alone took a fifth of a 200-node deploy, for four subprocess calls.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import GitError

_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


@dataclass(frozen=True)
class _Outcome:
    code: int
    stdout: str
    stderr: str


def _git(cwd: Path, *args: str) -> _Outcome:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True,
            env={**os.environ, **_ENV}, check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed", hint="install git, or use --no-commit") from None
    return _Outcome(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Repo:
    root: Path

    def relative(self, path: Path) -> str:
        return str(path.resolve().relative_to(self.root))

    def head(self) -> str | None:
        """The commit HEAD points at; None before the first commit."""
        outcome = _git(self.root, "rev-parse", "--verify", "-q", "HEAD")
        return outcome.stdout.strip() if outcome.code == 0 else None

    def dirty_files(self) -> list[str]:
        """Tracked files with uncommitted changes (staged or not)."""
        outcome = _git(self.root, "status", "--porcelain", "--untracked-files=no")
        if outcome.code != 0:
            raise GitError(f"git status failed: {outcome.stderr.strip()}")
        return [line[3:].split(" -> ")[-1] for line in outcome.stdout.splitlines() if line.strip()]

    def _on_branch(self) -> bool:
        git_dir = self.root / ".git"
        if git_dir.is_dir():  # the common case, read without a git process
            try:
                return (git_dir / "HEAD").read_text().startswith("ref: ")
            except OSError:
                pass
        return _git(self.root, "symbolic-ref", "-q", "HEAD").code == 0

    def commit(self, paths: list[Path], message: str) -> str:
        """Commit exactly these paths (added if new); returns the new commit's hash."""
        relative = [self.relative(p) for p in paths if p.exists()]
        if not self._on_branch():
            raise GitError(
                "git commit refused: HEAD is detached, so the commit would belong to no branch",
                hint="the ensemble and records are saved; switch to a branch "
                "(git switch -c NAME) and commit them: git add -A && git commit",
            )
        for args in (("add", "--", *relative), ("commit", "-q", "-m", message, "--", *relative)):
            outcome = _git(self.root, *args)
            if outcome.code != 0:
                raise _commit_error(outcome.stderr.strip() or outcome.stdout.strip())
        head = self.head()
        if head is None:
            raise GitError("git commit failed: no commit was made")
        return head


def _commit_error(stderr: str) -> GitError:
    hint = "the ensemble and records are saved; fix git and commit them by hand"
    if "index.lock" in stderr:
        hint = (
            "another git process is running, or one crashed and left "
            ".git/index.lock: if no git command is running, delete it; " + hint
        )
    elif "user.email" in stderr or "identity" in stderr.lower():
        hint = (
            "set your identity: git config user.email you@example.com && "
            "git config user.name 'Your Name'; " + hint
        )
    return GitError(f"git commit failed: {stderr}", hint=hint)


def find_repo(path: Path) -> Repo | None:
    """The work tree holding ``path``; None outside git or in a bare repository."""
    start = path if path.is_dir() else path.parent
    if not start.exists():
        return None
    try:
        outcome = _git(start, "rev-parse", "--show-toplevel")
    except GitError:
        return None
    if outcome.code != 0 or not outcome.stdout.strip():
        return None
    return Repo(Path(outcome.stdout.strip()).resolve())


def init_repo(path: Path) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    outcome = _git(path, "init", "-q")
    if outcome.code != 0:
        raise GitError(f"git init failed: {outcome.stderr.strip()}")
    return Repo(path.resolve())


def identity_problem(cwd: Path, instead: str = "") -> GitError | None:
    """Why git could not commit here for want of an author or committer, or None.

    Asked before anything is written, so that a missing identity is one clear error rather
    than a project (or a job's records) left half-committed."""
    for variable in _idents_to_check():
        outcome = _git(cwd, "var", variable)
        if outcome.code != 0:
            reason = next((line for line in outcome.stderr.splitlines()
                           if line.startswith("fatal:")), outcome.stderr.strip())
            return GitError(
                f"git has no identity to commit with ({reason.removeprefix('fatal: ')})",
                hint="set it once: git config --global user.name 'Your Name' && "
                f"git config --global user.email you@example.com{instead}",
            )
    return None


def _idents_to_check() -> list[str]:
    """One git process, not two: author and committer come from the same config unless the
    environment sets one of them, so ask about the one the environment does not set."""
    author = os.environ.get("GIT_AUTHOR_NAME") and os.environ.get("GIT_AUTHOR_EMAIL")
    return ["GIT_COMMITTER_IDENT"] if author else ["GIT_AUTHOR_IDENT"]


def is_ignored(repo: Repo, path: Path) -> bool:
    """Whether the repository's .gitignore rules exclude the directory ``path`` (which need
    not exist yet: the trailing slash lets ``dir/`` patterns match)."""
    return _git(repo.root, "check-ignore", "-q", "--", f"{path.resolve()}/").code == 0
