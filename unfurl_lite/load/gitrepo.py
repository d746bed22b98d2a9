"""The one way a job reaches git: every git process a command starts, starts here (reading
earlier versions of files goes through GitPython, in :mod:`gitobjects`).

Each runs the ``git`` command itself (GitPython's import, with the two ``git version``
processes it starts to probe git, cost a job more CPU than all its git commands), with a
C locale (its messages are matched below), no terminal prompt, no pager, no editor and no
optional locks (a ``git status`` must not take the index.lock another job's commit is
waiting for); every failure becomes a :class:`GitError` whose hint says what to do. HEAD
and the branch are read from ``.git``'s files (:mod:`gitfiles`). The ensemble is always
saved before git is touched, so each hint can say the records are safe.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import GitError
from unfurl_lite.load import gitfiles, parsecache

ENV = {
    "LC_ALL": "C",
    "LANGUAGE": "C",
    "GIT_TERMINAL_PROMPT": "0",  # a missing credential fails instead of asking
    "GCM_INTERACTIVE": "never",  # Git Credential Manager: no dialog either
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_OPTIONAL_LOCKS": "0",
}
#: what git says when another git process of this repository (a job on another of its
#: ensembles) holds the index or moved a ref under it: the same command is run again
#: (a pathspec commit read HEAD before the other commit moved it, and nothing changed)
_CONTENDED = ("index.lock", "cannot lock ref", ".lock': File exists")
#: a commit's pathspec naming a file the index no longer holds, and how often to stage again
_UNSTAGED = "did not match any file(s) known to git"
_STAGING_ATTEMPTS = 5
INDEX_LOCK_WAIT = 30.0  # seconds a commit waits for another git process to release the index
NETWORK_TIMEOUT = 300.0  # seconds a clone or fetch may take


@dataclass(frozen=True)
class Outcome:
    """A finished git command's exit code and output."""
    code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def error(self, doing: str) -> str:
        return f"git {doing} failed: {(self.stderr.strip() or self.stdout.strip())[-500:]}"


def run(cwd: Path | str, *args: str, timeout: float | None = None,
        strip: bool = True, env: dict[str, str] | None = None,
        started: Callable[[], None] | None = None) -> Outcome:
    """One git command in ``cwd``; its outcome, whatever its exit status. Output is text
    (UTF-8, undecodable bytes kept as surrogates); ``strip`` drops stdout's final newline,
    ``strip=False`` keeps it byte for byte (a file's text). A command still running after
    ``timeout`` seconds is killed and fails with a message saying so. ``started`` is
    called once git runs, before it is waited for (the caller's work that overlaps it)."""
    if not os.path.isdir(cwd):  # git would fail to start, and say git is missing
        raise GitError(f"cannot run git in {cwd}: no such directory")
    try:
        with subprocess.Popen(["git", *args], cwd=cwd, env={**os.environ, **ENV, **(env or {})},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as process:
            failed: BaseException | None = None
            try:
                if started is not None:
                    started()
            except BaseException as exc:  # raised once git is done: no index.lock left
                failed = exc
            try:
                out, err = process.communicate(timeout=timeout)
            except BaseException:
                process.kill()  # the with block waits for it
                raise
        if failed is not None:
            raise failed
        done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)",
                       hint="install git; a job runs without it with --no-commit --dirty=ok",
                       ) from None
    except PermissionError as exc:
        raise GitError(f"git cannot be run: {exc}",
                       hint="check the permissions of the git on PATH") from None
    except subprocess.TimeoutExpired:
        return Outcome(-9, "", f"git {args[0]} did not finish in {timeout:.0f} s and was stopped")
    stdout = done.stdout.decode("utf-8", "surrogateescape")
    stderr = done.stderr.decode("utf-8", "surrogateescape").removesuffix("\n")
    return Outcome(done.returncode, stdout.removesuffix("\n") if strip else stdout, stderr)


def output(cwd: Path | str, *args: str, timeout: float | None = None) -> str:
    """The command's output (stripped); a failure is a :class:`GitError` naming it."""
    outcome = run(cwd, *args, timeout=timeout)
    if not outcome.ok:
        raise GitError(outcome.error(args[0]))
    return outcome.stdout.strip()


# ------------------------------------------------------------------------- the work tree


@dataclass(frozen=True)
class Repo:
    """A git work tree: the one place that turns paths and commits into git's terms."""
    root: Path

    def relative(self, path: Path) -> str:
        """The path git knows it by: a symlink is itself, not the file it points to."""
        absolute = path.parent.resolve() / path.name if path.is_symlink() else path.resolve()
        return str(absolute.relative_to(self.root))

    def head(self) -> str | None:
        """The commit HEAD points at; None before the first commit."""
        try:
            return head_of(self.root)
        except GitError:
            return None

    def dirty_files(self, status: list[tuple[str, str]] | None = None) -> list[str]:
        """Tracked files with uncommitted changes (staged or not); from ``status`` (what
        :meth:`status` found) when given."""
        if status is not None:
            return [path for code, path in status if code != "??"]
        outcome = run(self.root, "status", "--porcelain", "--untracked-files=no")
        if not outcome.ok:
            raise GitError(outcome.error("status"))
        return [line[3:].split(" -> ")[-1] for line in outcome.stdout.splitlines() if line.strip()]

    def status(self) -> list[tuple[str, str]]:
        """Every change of the work tree as ``(XY, path)``: tracked files changed (staged
        or not) and untracked ones (``??``; a directory holding only untracked files is
        one entry, its path ending in ``/``), ignored ones left out: one process answering
        both :meth:`dirty_files` and :meth:`uncommitted` (see :func:`dirty_from`)."""
        outcome = run(self.root, "status", "--porcelain", "-z", "--untracked-files=normal")
        if not outcome.ok:
            raise GitError(outcome.error("status"))
        found: list[tuple[str, str]] = []
        entries = iter(outcome.stdout.split("\0"))
        for entry in entries:
            if len(entry) < 4:
                continue
            found.append((entry[:2], entry[3:]))
            if entry[0] in "RC":
                next(entries, None)  # a rename's or copy's source
        return found

    def uncommitted(self, paths: list[Path]) -> list[Path]:
        """Files under ``paths`` that are untracked (and not ignored) or differ from HEAD."""
        if not paths:  # an empty pathspec would mean the whole work tree
            return []
        relative = [self.relative(p) for p in paths]
        outcome = run(self.root, "status", "--porcelain", "-z", "--untracked-files=all",
                      "--", *relative)
        if not outcome.ok:
            raise GitError(outcome.error("status"))
        found: list[Path] = []
        entries = iter(outcome.stdout.split("\0"))
        for entry in entries:
            if len(entry) < 4:
                continue
            found.append(self.root / entry[3:])
            if entry[0] in "RC":
                next(entries, None)  # a rename's or copy's source
        return found

    def git_dir(self) -> Path:
        """This work tree's git directory (a linked worktree has its own)."""
        found = gitfiles.git_dir(str(self.root))
        return Path(found or output(self.root, "rev-parse", "--absolute-git-dir"))

    def _on_branch(self) -> bool:
        found = gitfiles.git_dir(str(self.root))
        if found:
            return bool(gitfiles.head(found)[0])
        return run(self.root, "symbolic-ref", "-q", "HEAD").ok

    def commit(self, paths: list[Path], message: str,
               meanwhile: Callable[[], None] | None = None) -> str:
        """Commit exactly these paths (added if new), whatever else is staged; returns the
        new commit's hash. Another git process holding the index (a job on another
        ensemble of this repository) is waited for; a stale index.lock is explained.
        ``meanwhile`` is called once, as soon as the first git process runs: the caller's
        own work then overlaps git's instead of delaying its start."""
        relative = [self.relative(p) for p in paths if p.exists() or p.is_symlink()]
        if not self._on_branch():
            raise GitError(
                "git commit refused: HEAD is detached, so the commit would belong to no branch",
                hint="the ensemble and records are saved; switch to a branch "
                "(git switch -c NAME) and commit them: git add -A && git commit",
            )
        for attempt in range(1, _STAGING_ATTEMPTS + 1):
            self._run_waiting(("add", "--", *relative), started=meanwhile)
            meanwhile = None
            # nothing to commit: a killed job committed these very records before it died,
            # and its resume wrote them again byte for byte; that commit is the job's
            try:
                self._run_waiting(("commit", "-q", "-m", message, "--", *relative),
                                  unchanged_ok=True, env=_without_auto_maintenance())
                break
            except GitError as error:
                # a job on another ensemble of this repository wrote the index it had read
                # before this add: what was staged is gone, so stage it again
                if _UNSTAGED not in error.message or attempt == _STAGING_ATTEMPTS:
                    raise
        head = self.head()
        if head is None:
            raise GitError("git commit failed: no commit was made")
        return head

    def _run_waiting(self, args: tuple[str, ...], unchanged_ok: bool = False,
                     env: dict[str, str] | None = None,
                     started: Callable[[], None] | None = None) -> None:
        waited = 0.0
        delay = 0.02
        while True:
            outcome = run(self.root, *args, env=env, started=started)
            started = None
            if outcome.ok:
                return
            if unchanged_ok and ("nothing to commit" in outcome.stdout
                                 or "nothing added to commit" in outcome.stdout):  # LC_ALL=C
                return
            stderr = outcome.stderr.strip() or outcome.stdout.strip()
            if not any(mark in stderr for mark in _CONTENDED) or waited >= INDEX_LOCK_WAIT:
                raise commit_error(stderr, self.stale_index_lock())
            stale = self.stale_index_lock() if "index.lock" in stderr else None
            if stale is not None:
                raise commit_error(stderr, stale)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.5)

    def index_lock(self) -> Path:
        """The lock file of this work tree's index (a linked worktree has its own)."""
        return self.git_dir() / "index.lock"

    def stale_index_lock(self) -> Path | None:
        """git's index.lock when it is left over: no git process runs in this repository
        (git writes no pid into it, so its owner is looked for among running processes)."""
        lock = self.index_lock()
        before = _identity(lock)
        if before is None:  # no lock: nothing to wait for (a job's every start asks)
            return None
        for pause in (0.0, 0.05):  # twice, as git processes of other jobs come and go
            time.sleep(pause)
            if before is None or _git_running_in(self.root) or _identity(lock) != before:
                return None
        return lock

    def is_ignored(self, path: Path) -> bool:
        """Whether .gitignore rules exclude the directory ``path`` (which need not exist
        yet: the trailing slash lets ``dir/`` patterns match)."""
        return run(self.root, "check-ignore", "-q", "--", f"{path.resolve()}/").ok


def _without_auto_maintenance() -> dict[str, str]:
    """The commit's configuration, after any the environment gives (as ``git -c`` would):
    no ``git maintenance run --auto`` after it. One process fewer per job, as Unfurl
    1.2.0's commit, which GitPython writes itself, starts none; git's own commands (a
    commit by hand, a fetch, a merge) still run it in this repository."""
    count = os.environ.get("GIT_CONFIG_COUNT", "")
    if count and not count.isdigit():  # git refuses to run anyway: its message is the one
        return {}
    n = int(count or 0)
    return {"GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}": "maintenance.auto",
            f"GIT_CONFIG_VALUE_{n}": "false"}


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


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


def commit_error(stderr: str, stale_lock: Path | None = None) -> GitError:
    """What a failed ``git add``/``git commit`` means, and what the user does about it."""
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
    """The work tree holding ``path``, found by its ``.git`` as git finds it (no git
    process: a job run with ``--no-commit --dirty=ok`` needs no git at all); None outside
    git or in a bare repository."""
    start = path if path.is_dir() else path.parent
    if not start.exists():
        return None
    top = gitfiles.work_tree(str(start))
    return Repo(Path(top).resolve()) if top else None


def toplevel(cwd: Path | str) -> str:
    """The work tree's root directory as git names it ('' when there is none)."""
    outcome = run(cwd, "rev-parse", "--show-toplevel")
    return outcome.stdout.strip() if outcome.ok else ""


def init_repo(path: Path) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    outcome = run(path, "init", "-q")
    if not outcome.ok:
        raise GitError(outcome.error("init"))
    return Repo(path.resolve())


def identity_problem(cwd: Path, instead: str = "",
                     meanwhile: Callable[[], None] | None = None) -> GitError | None:
    """Why git could not commit here for want of an author or committer, or None.

    Asked before anything is written, so that a missing identity is one clear error rather
    than a project (or a job's records) left half-committed. An identity git found is
    remembered (in the parse cache's directory) for exactly what git decided it from: the
    next job with the same environment and the same config files (by inode, size and time)
    starts no ``git var``. ``meanwhile`` (the caller's work that writes nothing) runs once,
    while git is asked, or at once when it need not be."""
    known = _identity_sources(cwd)
    if known is not None and parsecache.stored(known[0]) == known[1]:
        if meanwhile is not None:
            meanwhile()
        return None
    for variable in _idents_to_check():
        outcome = run(cwd, "var", variable, started=meanwhile)
        meanwhile = None
        if not outcome.ok:
            reason = next((line for line in outcome.stderr.splitlines()
                           if line.startswith("fatal:")), outcome.stderr.strip())
            return GitError(
                f"git has no identity to commit with ({reason.removeprefix('fatal: ')})",
                hint="set it once: git config --global user.name 'Your Name' && "
                f"git config --global user.email you@example.com{instead}",
            )
    if known is not None:
        parsecache.store(*known)
    return None


#: what git's identity is read from besides config files (``git -c`` passes GIT_CONFIG_*)
_IDENTITY_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "EMAIL", "USER", "LOGNAME")


def _identity_sources(cwd: Path) -> tuple[str, bytes] | None:
    """(the cache entry's name, its content) for what git's identity in ``cwd`` comes
    from: the environment's git and identity variables, this machine's name and user, and
    each config file git reads (system, global, the repository's, a linked worktree's);
    None when there is no parse cache, no ``.git`` here, or a config file git reads
    includes others (``include``/``includeIf``: git is then always asked)."""
    git = gitfiles.git_dir(str(cwd))
    if not git or parsecache.directory() is None:
        return None
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    common = os.path.join(git, "commondir")
    files = [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
             os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
             os.path.join(xdg, "git", "config"),
             os.path.join(git, "config"), os.path.join(git, "config.worktree"), common]
    parts = [f"{k}={v}" for k, v in sorted(os.environ.items())
             if k.startswith("GIT_") or k in _IDENTITY_VARIABLES]
    parts += [str(os.getuid() if hasattr(os, "getuid") else ""), os.uname().nodename
              if hasattr(os, "uname") else ""]
    try:
        if os.path.isfile(common):
            with open(common, encoding="utf-8") as handle:
                files.append(os.path.join(git, handle.read().strip(), "config"))
        for name in files:
            try:
                info = os.stat(name)
            except FileNotFoundError:
                parts.append(f"{name}: none")
                continue
            with open(name, "rb") as handle:
                if b"include" in handle.read().lower():
                    return None
            parts.append(f"{name}: {info.st_ino} {info.st_size} {info.st_mtime_ns}")
    except (OSError, UnicodeDecodeError):
        return None
    key = parsecache.large_digest("\0".join(parts).encode("utf-8", "surrogateescape")).hex()
    return f"git-identity-{key}.marshal", key.encode()


def _idents_to_check() -> list[str]:
    """One git process, not two: author and committer come from the same config unless the
    environment sets one of them, so ask about the one the environment does not set."""
    author = os.environ.get("GIT_AUTHOR_NAME") and os.environ.get("GIT_AUTHOR_EMAIL")
    return ["GIT_COMMITTER_IDENT"] if author else ["GIT_AUTHOR_IDENT"]


def is_ignored(repo: Repo, path: Path) -> bool:
    return repo.is_ignored(path)


# ------------------------------------------------------------------------------- history


@dataclass(frozen=True)
class Commit:
    """One commit as history shows it."""
    hexsha: str
    author: str
    email: str
    date: str  # ISO 8601, as git gives it
    subject: str


_FIELDS = "%H%x1f%an%x1f%ae%x1f%aI%x1f%s"


def commits_adding(root: Path, *pathspecs: str) -> list[tuple[Commit, list[str]]]:
    """Each commit that added files under ``pathspecs``, newest first, with the files'
    paths; one ``git log`` for all. [] when there is no history to read."""
    outcome = run(root, "log", "--diff-filter=A", "--name-only", f"--format=%x00{_FIELDS}",
                  "--", *pathspecs)
    found: list[tuple[Commit, list[str]]] = []
    for block in outcome.stdout.split("\x00") if outcome.ok else ():
        if not block.strip():
            continue
        head, _, names = block.partition("\n")
        parts = head.split("\x1f")
        if len(parts) == 5:
            found.append((Commit(*parts), names.split()))
    return found


def diff(root: Path, path: str, base: str | None, head: str | None) -> str:
    """``git diff`` of one file between two commits; head None is the working tree; base
    None is the commit's own change (its diff against its parent)."""
    if base is None and head is not None:
        args = ["show", "--format=", "--no-color", head]
    else:
        args = ["diff", "--no-color", base or "HEAD", *([head] if head else [])]
    outcome = run(root, *args, "--", path, strip=False)
    if not outcome.ok:
        raise GitError(outcome.error(args[0]),
                       hint="list the jobs and their commits with `unfurl history`")
    return outcome.stdout


# -------------------------------------------------------------------- a worker's checkout


def head_of(cwd: Path | str) -> str:
    """The commit HEAD of the work tree holding ``cwd`` points at: read from .git's files
    (a worker asks before each task), from git when they cannot say."""
    if not os.path.isdir(cwd):
        raise GitError(f"cannot read git's HEAD in {cwd}: no such directory")
    top = gitfiles.work_tree(os.fspath(cwd))
    commit = gitfiles.head(gitfiles.git_dir(top))[1] if top else ""
    if commit:
        return commit
    outcome = run(cwd, "rev-parse", "--verify", "-q", "HEAD")
    if outcome.ok and outcome.stdout.strip():
        return outcome.stdout.strip()
    if "not a git repository" in outcome.stderr:
        raise GitError(f"{cwd} is not in a git repository")
    raise GitError(f"cannot read git's HEAD in {cwd}: "
                   + (outcome.stderr.strip() or "there is no commit yet"))


def config_value(cwd: Path | str, key: str) -> str | None:
    outcome = run(cwd, "config", "--get", key)
    return outcome.stdout.strip() or None if outcome.ok else None


def remote_url(cwd: Path | str) -> str | None:
    """The URL of the repository's ``origin`` remote, else of its first remote (as Unfurl
    picks one); None without a remote."""
    try:
        outcome = run(cwd, "config", "--get-regexp", r"^remote\..*\.url$")
    except GitError:
        return None
    urls: dict[str, str] = {}
    for line in outcome.stdout.splitlines() if outcome.ok else ():
        key, _, url = line.partition(" ")
        urls.setdefault(key.removeprefix("remote.").removesuffix(".url"), url)
    return (urls.get("origin") or next(iter(urls.values()), "")) or None


def has_commit(repository: Path, commit: str) -> bool:
    return run(repository, "cat-file", "-e", f"{commit}^{{commit}}").ok


def clone_bare(url: str, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    output(destination.parent, "clone", "--quiet", "--bare", url, str(destination),
           timeout=NETWORK_TIMEOUT)


def fetch_branches(repository: Path, url: str) -> None:
    output(repository, "fetch", "--quiet", url, "+refs/heads/*:refs/heads/*",
           timeout=NETWORK_TIMEOUT)


def add_worktree(repository: Path, tree: Path, commit: str) -> None:
    """A detached work tree of ``repository`` at ``commit``."""
    tree.parent.mkdir(parents=True, exist_ok=True)
    output(repository, "worktree", "add", "--quiet", "--detach", str(tree), commit)
