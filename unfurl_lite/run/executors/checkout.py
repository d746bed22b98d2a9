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
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from unfurl_lite.errors import GitError, JobError
from unfurl_lite.load import gitrepo

PROJECT_MODE_ENV = "UNFURL_WORKER_PROJECT"  # auto (default) or git
CACHE_ENV = "UNFURL_WORKER_CACHE"
_HEAD_CACHE_SECONDS = 1.0
_heads: dict[str, tuple[float, str]] = {}


def source_of(cwd: str) -> dict[str, str]:
    """The controller's side: repository URL, commit and the project's place in it."""
    try:
        top = gitrepo.toplevel(cwd)
        commit = gitrepo.head_of(cwd) if top else ""
        origin = gitrepo.config_value(cwd, "remote.origin.url") if top else None
    except GitError:
        return {}
    if not top:
        return {}
    url = without_password(os.environ.get("UNFURL_REPOSITORY_URL") or origin or top)
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
    try:
        return _checked_out(url, commit)
    except GitError as exc:
        raise JobError(exc.message, hint=exc.hint) from None


def _checked_out(url: str, commit: str) -> Path:
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
            gitrepo.clone_bare(url, clone)
        elif not gitrepo.has_commit(clone, commit):
            gitrepo.fetch_branches(clone, url)
        if not gitrepo.has_commit(clone, commit):
            raise JobError(f"commit {commit[:12]} is not in {url} (was it pushed?)")
        gitrepo.add_worktree(clone, tree, commit)
    return tree


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
        head = gitrepo.head_of(cwd)
    except GitError:
        return None
    _heads[cwd] = (now, head)
    return head
