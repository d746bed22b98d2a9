"""Where a worker runs a task: the job's project at the job's commit.

A worker on the controller's machine whose copy of the project is at the job's commit runs
there (so a shared file system costs nothing). Any other worker keeps a bare cache clone of
the controller's repository and one worktree per commit, so it needs no shared file system
and never runs an older commit's code.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from unfurl_lite.errors import JobError

PROJECT_MODE_ENV = "UNFURL_WORKER_PROJECT"  # auto (default) or git
CACHE_ENV = "UNFURL_WORKER_CACHE"
_HEAD_CACHE_SECONDS = 1.0
_heads: dict[str, tuple[float, str]] = {}


def source_of(cwd: str) -> dict[str, str]:
    """The controller's side: repository URL, commit and the project's place in it."""
    try:
        top = _git(cwd, "rev-parse", "--show-toplevel")
        commit = _git(cwd, "rev-parse", "HEAD")
    except JobError:
        return {}
    url = without_password(os.environ.get("UNFURL_REPOSITORY_URL") or _origin(cwd) or top)
    subdir = os.path.relpath(os.path.realpath(cwd), os.path.realpath(top))
    return {"repo": url, "commit": commit, "subdir": "" if subdir == "." else subdir}


def without_password(url: str) -> str:
    """A task never carries a repository password: workers fetch with their own keys."""
    parts = urlsplit(url)
    if "://" not in url or not parts.password:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def project_dir(source: dict[str, str], cwd: str) -> str:
    """The directory the task runs in on this worker (see the module's docstring)."""
    commit = source.get("commit")
    if not commit:
        return cwd
    mode = os.environ.get(PROJECT_MODE_ENV, "auto")
    if mode != "git" and os.path.isdir(cwd) and _head(cwd) == commit:
        return cwd
    url = source.get("repo") or ""
    if not url:
        raise JobError("the task names no repository to fetch the project from")
    tree = _worktree(url, commit)
    return str(tree / source.get("subdir", "")) if source.get("subdir") else str(tree)


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "unfurl-lite" / "worker"


def _worktree(url: str, commit: str) -> Path:
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    root = cache_root()
    clone = root / "repos" / key
    tree = root / "trees" / key / commit
    if (tree / ".git").exists():
        return tree
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{key}.lock"):
        if (tree / ".git").exists():
            return tree
        if not clone.exists():
            _git(str(root), "clone", "--quiet", "--bare", url, str(clone))
        elif not _has(clone, commit):
            _git(str(clone), "fetch", "--quiet", url, "+refs/heads/*:refs/heads/*")
        if not _has(clone, commit):
            raise JobError(f"commit {commit[:12]} is not in {url} (was it pushed?)")
        tree.parent.mkdir(parents=True, exist_ok=True)
        _git(str(clone), "worktree", "add", "--quiet", "--detach", str(tree), commit)
    return tree


def _has(clone: Path, commit: str) -> bool:
    try:
        _git(str(clone), "cat-file", "-e", f"{commit}^{{commit}}")
        return True
    except JobError:
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _head(cwd: str) -> str | None:
    now = time.monotonic()
    cached = _heads.get(cwd)
    if cached and now - cached[0] < _HEAD_CACHE_SECONDS:
        return cached[1]
    try:
        head = _git(cwd, "rev-parse", "HEAD")
    except JobError:
        return None
    _heads[cwd] = (now, head)
    return head


def _origin(cwd: str) -> str | None:
    try:
        return _git(cwd, "config", "--get", "remote.origin.url") or None
    except JobError:
        return None


def _git(cwd: str, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JobError(f"git {args[0]} failed: {exc}") from None
    if done.returncode != 0:
        raise JobError(f"git {args[0]} failed: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()
