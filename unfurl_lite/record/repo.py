"""The ensemble's git repository: dirty checks, the job's commit, history look-ups.

Every operation is one call of the ``git`` command, as GitPython itself would make it:
importing GitPython alone took a fifth of a 200-node deploy, for four subprocess calls.
"""

from __future__ import annotations

import os
import subprocess
import time
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
        """The path git knows it by: a symlink is itself, not the file it points to."""
        absolute = path.parent.resolve() / path.name if path.is_symlink() else path.resolve()
        return str(absolute.relative_to(self.root))

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
        """Commit exactly these paths (added if new), whatever else is staged; returns the
        new commit's hash. Another git process holding the index (a job on another
        ensemble of this repository) is waited for; a stale index.lock is explained."""
        relative = [self.relative(p) for p in paths if p.exists() or p.is_symlink()]
        if not self._on_branch():
            raise GitError(
                "git commit refused: HEAD is detached, so the commit would belong to no branch",
                hint="the ensemble and records are saved; switch to a branch "
                "(git switch -c NAME) and commit them: git add -A && git commit",
            )
        for args in (("add", "--", *relative),
                     ("commit", "-q", "-m", message, "--", *relative)):
            self._run_waiting(args)
        head = self.head()
        if head is None:
            raise GitError("git commit failed: no commit was made")
        return head

    def _run_waiting(self, args: tuple[str, ...]) -> None:
        waited = 0.0
        delay = 0.02
        while True:
            outcome = _git(self.root, *args)
            if outcome.code == 0:
                return
            stderr = outcome.stderr.strip() or outcome.stdout.strip()
            if "index.lock" not in stderr or waited >= INDEX_LOCK_WAIT:
                raise _commit_error(stderr, self.stale_index_lock())
            stale = self.stale_index_lock()
            if stale is not None:
                raise _commit_error(stderr, stale)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.5)

    def uncommitted(self, paths: list[Path]) -> list[Path]:
        """Files under ``paths`` that are untracked (and not ignored) or differ from HEAD."""
        relative = [self.relative(p) for p in paths]
        outcome = _git(self.root, "status", "--porcelain", "-z", "--untracked-files=all",
                       "--", *relative)
        if outcome.code != 0:
            raise GitError(f"git status failed: {outcome.stderr.strip()}")
        found: list[Path] = []
        entries = iter(outcome.stdout.split("\0"))
        for entry in entries:
            if len(entry) < 4:
                continue
            found.append(self.root / entry[3:])
            if entry[0] in "RC":
                next(entries, None)  # a rename's or copy's source
        return found

    def index_lock(self) -> Path:
        git_dir = self.root / ".git"
        if git_dir.is_dir():
            return git_dir / "index.lock"
        outcome = _git(self.root, "rev-parse", "--git-path", "index.lock")
        return (self.root / outcome.stdout.strip()).resolve()

    def stale_index_lock(self) -> Path | None:
        """git's index.lock when it is left over: no git process runs in this repository
        (git writes no pid into it, so its owner is looked for among running processes)."""
        lock = self.index_lock()
        before = _identity(lock)
        for pause in (0.0, 0.05):  # twice, as git processes of other jobs come and go
            time.sleep(pause)
            if before is None or _git_running_in(self.root) or _identity(lock) != before:
                return None
        return lock


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


INDEX_LOCK_WAIT = 30.0  # seconds a commit waits for another git process to release the index


def _git_running_in(root: Path) -> bool:
    """Is a git process running with its working directory in ``root``? (Linux /proc;
    elsewhere assume so, which only means a stale lock is reported less precisely.)"""
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("git"):
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == root or cwd.is_relative_to(root):
            return True
    return False


def _commit_error(stderr: str, stale_lock: Path | None = None) -> GitError:
    hint = ("the ensemble and records are saved: once git works again, unfurl resume (or "
            "the next job) commits them")
    if stale_lock is not None:
        return GitError(
            f"git commit failed: {stale_lock} was left by a git process that is no longer "
            "running (it was killed or crashed), so git refuses to touch the index",
            hint=f"make sure no git command is running, delete it (rm {stale_lock}); {hint}",
        )
    if "index.lock" in stderr:
        hint = (
            "another git process held the index for too long: wait for it to finish; " + hint
        )
    elif "user.email" in stderr or "identity" in stderr.lower():
        hint = (
            "set your identity: git config user.email you@example.com && "
            "git config user.name 'Your Name'; " + hint
        )
    elif "No space left" in stderr or "Quota exceeded" in stderr:
        hint = "free space on the disk that holds the repository; " + hint
    elif any(text in stderr for text in ("Read-only file system", "ermission denied",
                                         "Operation not permitted", "insufficient permission")):
        hint = ("make the repository writable (.git's permissions, an immutable flag shown "
                "by lsattr, or a read-only mount); " + hint)
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
