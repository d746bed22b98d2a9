"""Where a worker runs a task: the job's project at the job's commit, or nowhere.

In order:

1. a worker started in its own clone of the project (``unfurl worker`` run inside it)
   runs the project's tasks in that clone, brought to the job's commit (fetched if it
   lacks it): files operations leave in the project directory stay there between jobs,
   as they do on the controller;
2. a worker on the controller's machine runs in the controller's directory if that is
   at the job's commit; if it has moved on (a message delivered late), the task does
   not run there, or anywhere else, and says so;
3. any other worker keeps a bare cache clone of the project and one worktree per commit
   (pruned: the newest few and those in use are kept), so it needs no shared file system
   and never runs an older commit's code.

A commit a worker lacks comes from the broker (a git bundle the controller stored, see
``celery/bundles.py``), else from the repository's URL.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from unfurl_lite.errors import GitError, JobError
from unfurl_lite.load import gitrepo

PROJECT_MODE_ENV = "UNFURL_WORKER_PROJECT"  # auto (default) or git
CACHE_ENV = "UNFURL_WORKER_CACHE"
CLONE_ENV = "UNFURL_WORKER_CLONE"  # the clone a worker was started in
KEEP_TREES = 3  # per-commit worktrees kept per repository (besides those in use)
_HEAD_CACHE_SECONDS = 1.0
_heads: dict[str, tuple[float, str]] = {}
_in_use: dict[Path, int] = {}
_use_lock = threading.Lock()
Fetcher = Callable[[Path, str], bool]  # (repository, commit) -> fetched


def source_of(cwd: str) -> dict[str, str]:
    """The controller's side: repository URL, commit, the project's identity (its root
    commit) and place in it, and this machine's identity."""
    # start-up: keeps run.executors.celery.bundles off checkout's import until source_of() runs
    from unfurl_lite.run.executors.celery.bundles import root_commit

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
    return {"repo": url, "commit": commit, "subdir": "" if subdir == "." else subdir,
            "root": root_commit(top), "machine": machine_id(), "top": top}


@functools.cache
def machine_id() -> str:
    """Which machine this is (two processes on one machine share its files); read once
    per process (a worker asks for every task)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            found = Path(path).read_text().strip()
            if found:
                return found
    return socket.gethostname()


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


@contextlib.contextmanager
def project_for(source: dict[str, str], cwd: str,
                fetch: Fetcher | None = None) -> Iterator[str]:
    """The directory the task runs in on this worker, held while it runs (see the
    module's docstring); a JobError when it must not run anywhere."""
    commit = source.get("commit")
    if not commit:
        yield cwd
        return
    mode = os.environ.get(PROJECT_MODE_ENV, "auto")
    clone = os.environ.get(CLONE_ENV)
    subdir = source.get("subdir", "")
    same_machine = source.get("machine", machine_id()) == machine_id()
    theirs = source.get("top")
    if mode != "git" and clone and source.get("root") and _root_of(clone) == source["root"] \
            and not (same_machine and theirs and os.path.realpath(theirs)
                     == os.path.realpath(clone)):  # the controller's own: never moved
        with clones.at(clone, commit, source, fetch) as tree:
            yield os.path.join(tree, subdir) if subdir else tree
        return
    if mode != "git" and same_machine and os.path.isdir(cwd):
        head = _head(cwd)
        if head != commit:  # the cached head may predate a commit made since: look again
            head = _head(cwd, fresh=True)
        if head != commit:
            raise JobError(
                f"the project at {cwd} is at commit {(head or 'none')[:12]}, not the job's "
                f"{commit[:12]}: it moved since the job sent the task, which runs nowhere else")
        yield cwd
        return
    url = source.get("repo") or ""
    cached = _worktree(url, commit, source, fetch)
    _use(cached, 1)
    try:
        yield str(cached / subdir) if subdir else str(cached)
    finally:
        _use(cached, -1)
        with contextlib.suppress(Exception):
            _prune(cached.parent)


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "unfurl-lite" / "worker"


def _worktree(url: str, commit: str, source: dict[str, str], fetch: Fetcher | None) -> Path:
    try:
        return _checked_out(url, commit, source, fetch)
    except GitError as exc:
        raise JobError(exc.message, hint=exc.hint) from None


def _checked_out(url: str, commit: str, source: dict[str, str], fetch: Fetcher | None) -> Path:
    key = hashlib.sha256((source.get("root") or url).encode()).hexdigest()[:16]
    root = cache_root()
    clone = root / "repos" / key
    tree = root / "trees" / key / commit
    if (tree / ".git").exists():
        os.utime(tree)
        return tree
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{key}.lock"):
        if (tree / ".git").exists():
            return tree
        if not clone.exists():
            clone.mkdir(parents=True)
            gitrepo.output(clone, "init", "--quiet", "--bare")
        _obtain(clone, commit, url, fetch)
        gitrepo.add_worktree(clone, tree, commit)
    return tree


def _obtain(repository: Path, commit: str, url: str, fetch: Fetcher | None) -> None:
    """The commit into ``repository``: from the broker's bundles, else from the URL."""
    if gitrepo.has_commit(repository, commit):
        return
    if fetch is not None and fetch(repository, commit):
        return
    with contextlib.suppress(GitError):
        if gitrepo.run(repository, "rev-parse", "--is-bare-repository").stdout == "false":
            gitrepo.output(repository, "fetch", "--quiet", "origin")  # a clone: its remote
        elif url and not _local_path_elsewhere(url):
            gitrepo.fetch_branches(repository, url)
    if not gitrepo.has_commit(repository, commit):
        raise JobError(f"commit {commit[:12]} is neither in the broker's bundles nor in "
                       f"{url or 'the repository'} (was it pushed?)")


def _local_path_elsewhere(url: str) -> bool:
    return "://" not in url and ":" not in url.split("/")[0] and not os.path.isdir(url)


def _use(tree: Path, users: int) -> None:
    with _use_lock:
        _in_use[tree] = _in_use.get(tree, 0) + users
        if _in_use[tree] <= 0:
            del _in_use[tree]


def _prune(trees: Path) -> None:
    """Keep the newest KEEP_TREES worktrees of a repository and those in use."""
    found = sorted((t for t in trees.iterdir() if (t / ".git").exists()),
                   key=lambda t: t.stat().st_mtime, reverse=True)
    with _use_lock:
        busy = set(_in_use)
    stale = [t for t in found[KEEP_TREES:] if t not in busy]
    if not stale:
        return
    clone = trees.parent.parent / "repos" / trees.name
    with _locked(trees.parent.parent / f"{trees.name}.lock"):
        for tree in stale:
            gitrepo.run(clone, "worktree", "remove", "--force", str(tree))
            shutil.rmtree(tree, ignore_errors=True)
        gitrepo.run(clone, "worktree", "prune")


def own_clone_root() -> str:
    """The root commit of the project this worker was started in a clone of ("": none)."""
    clone = os.environ.get(CLONE_ENV)
    return _root_of(clone) if clone else ""


def _root_of(directory: str) -> str:
    # start-up: keeps run.executors.celery.bundles off checkout's import until _root_of() runs
    from unfurl_lite.run.executors.celery.bundles import root_commit

    if directory not in _roots:
        _roots[directory] = root_commit(directory)
    return _roots[directory]


_roots: dict[str, str] = {}


class _Clones:
    """Workers' own clones: one commit at a time in each; a task of another commit
    waits until the tasks running there have ended, then moves the clone's HEAD."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._at: dict[str, str] = {}
        self._users: dict[str, int] = {}

    @contextlib.contextmanager
    def at(self, clone: str, commit: str, source: dict[str, str],
           fetch: Fetcher | None) -> Iterator[str]:
        with self._cond:
            while self._users.get(clone) and self._at.get(clone) != commit:
                self._cond.wait()
            if self._at.get(clone) != commit and _head(clone) != commit:
                _move(clone, commit, source.get("repo") or "", fetch)
            self._at[clone] = commit
            self._users[clone] = self._users.get(clone, 0) + 1
        try:
            yield clone
        finally:
            with self._cond:
                self._users[clone] -= 1
                self._cond.notify_all()


def _move(clone: str, commit: str, url: str, fetch: Fetcher | None) -> None:
    """Bring the clone's work tree to ``commit`` (detached); files it does not track stay.
    Uncommitted changes to tracked files stop it: the task does not run."""
    try:
        _obtain(Path(clone), commit, url, fetch)
        dirty = gitrepo.output(clone, "status", "--porcelain", "--untracked-files=no")
        if dirty:
            raise JobError(f"the worker's clone {clone} has uncommitted changes "
                           f"({dirty.splitlines()[0].strip()}...): it cannot move to the "
                           f"job's commit {commit[:12]}",
                           hint="commit or discard them; a worker's clone is its own")
        gitrepo.output(clone, "checkout", "--quiet", "--detach", commit)
    except GitError as exc:
        raise JobError(exc.message, hint=exc.hint) from None
    _heads.pop(clone, None)


clones = _Clones()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _head(cwd: str, fresh: bool = False) -> str | None:
    now = time.monotonic()
    cached = _heads.get(cwd)
    if cached and not fresh and now - cached[0] < _HEAD_CACHE_SECONDS:
        return cached[1]
    try:
        head = gitrepo.head_of(cwd)
    except GitError:
        return None
    _heads[cwd] = (now, head)
    return head
