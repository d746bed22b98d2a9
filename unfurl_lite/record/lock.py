"""One job per ensemble: a lock file beside it holding the job's pid and changeId.

The lock is taken with ``link(2)`` of a complete temp file, so it appears atomically with
its content. A lock whose pid is gone is stale: it is reported (the job it names was
killed and ``unfurl resume`` finishes it), and only ``resume`` takes it over. Read-only
commands never look at it. The name differs from Unfurl's ``ensemble.yaml.lock``, which
means something else.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import JobError, LockError, StorageError, UnfurlLiteError
from unfurl_lite.load.yamlio import forced_meanwhile, fsync, temp_file, write_temp
from unfurl_lite.model.ensemble import LOCK_NAME
from unfurl_lite.model.narrow import is_map
from unfurl_lite.record.liveness import pid_alive

MAX_LOCK_BYTES = 64 * 1024  # a lock is a line of JSON: anything larger is not one of ours


@dataclass(frozen=True)
class LockInfo:
    """Who holds an ensemble's lock, read from the lock file."""
    pid: int
    change_id: str | None
    command: str
    host: str
    since: float

    @property
    def alive(self) -> bool:
        return self.host != os.uname().nodename or pid_alive(self.pid)


def lock_path(ensemble_path: Path) -> Path:
    return ensemble_path.parent / LOCK_NAME


def holder(directory: Path) -> LockInfo | None:
    """Who holds the lock of the ensemble in ``directory``, if anyone."""
    return read_lock(directory / LOCK_NAME)


def read_lock(path: Path) -> LockInfo | None:
    """The lock's holder; a lock that is not ours to read (damaged, huge, not JSON) is
    held by an unknown process (pid -1), which only ``resume`` takes over."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_LOCK_BYTES + 1)
        if len(text) > MAX_LOCK_BYTES:
            raise ValueError("too large for a lock")
        data = json.loads(text)
        if not is_map(data):
            raise ValueError("not a lock")
        return LockInfo(
            pid=int(data.get("pid", -1)),
            change_id=data.get("changeId") if isinstance(data.get("changeId"), str) else None,
            command=str(data.get("command", "")),
            host=str(data.get("host", "")),
            since=float(data.get("since", 0.0)),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, OverflowError):
        return LockInfo(pid=-1, change_id=None, command="?", host="?", since=0.0)


def _content(command: str, change_id: str | None) -> str:
    return json.dumps(
        {
            "pid": os.getpid(),
            "changeId": change_id,
            "command": command,
            "host": os.uname().nodename,
            "since": time.time(),
        }
    )


def _link_new(path: Path, text: str) -> bool:
    fd, tmp = temp_file(path.parent, f"{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            fsync(handle.fileno())
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        Path(tmp).unlink(missing_ok=True)


class Prepared:
    """A lock file written before the lock is taken, and forced to disk meanwhile: a job
    prepares its lock before it loads and plans, so the ``fsync`` (some 2.5 ms on this
    ext4) no longer waits before its first task. :func:`acquire`'s first attempt links it;
    :meth:`discard` removes it if it was not (a job that takes no lock: nothing to do,
    declined, refused)."""

    def __init__(self, ensemble_path: Path, command: str) -> None:
        self.path = lock_path(ensemble_path)
        self._fd, self.tmp = write_temp(self.path, _content(command, None), private=True)
        try:
            self._forced: Callable[[], None] | None = forced_meanwhile(self._fd, self.path)
        except BaseException:
            os.close(self._fd)
            Path(self.tmp).unlink(missing_ok=True)
            raise

    def _settled(self) -> None:
        """Its content on disk (the error of forcing it, raised), the file closed."""
        forced, self._forced = self._forced, None
        if forced is not None:
            try:
                forced()
            finally:
                os.close(self._fd)

    def take(self) -> bool:
        """Linked as the lock (False: another holds it), once its content is on disk; the
        temporary file is gone either way."""
        try:
            self._settled()
            os.link(self.tmp, self.path)
        except FileExistsError:
            return False
        finally:
            Path(self.tmp).unlink(missing_ok=True)
        return True

    def discard(self) -> None:
        try:
            self._settled()
        finally:
            Path(self.tmp).unlink(missing_ok=True)


def describe(info: LockInfo) -> str:
    job = f"job {info.change_id}" if info.change_id else "a job"
    return f"{job} ({info.command}, pid {info.pid} on {info.host})"


def acquire(ensemble_path: Path, command: str, take_stale: bool = False,
            prepared: Prepared | None = None) -> Path:
    """Take the lock or raise LockError saying who holds it and what to do; the first
    attempt links ``prepared`` (its file, for this lock) if given."""
    path = lock_path(ensemble_path)
    text = _content(command, None)
    for attempt in range(3):
        if prepared is not None and attempt == 0 and prepared.path == path:
            taken = prepared.take()
        else:
            taken = _link_new(path, text)
        if taken:
            return path
        info = read_lock(path)
        if info is None:
            continue  # released between our attempt and our look
        if info.alive and info.pid != -1:
            raise LockError(
                f"{describe(info)} is already running on this ensemble",
                hint="wait for it to finish (or give --queue to wait and then run), or stop "
                "it with: unfurl cancel",
            )
        if not take_stale:
            raise _stale(ensemble_path, info)
        path.unlink(missing_ok=True)
    raise LockError(f"could not take the lock {path}", hint="try again")


def _stale(ensemble_path: Path, info: LockInfo) -> LockError:
    path = lock_path(ensemble_path)
    return LockError(
        f"stale lock {path}: {describe(info)} is no longer running (it was killed or crashed)",
        hint=f"{finish_advice(ensemble_path.parent)} (or, to abandon it, delete {path})",
    )


def refuse_interrupted(ensemble_path: Path) -> None:
    """Raise what :func:`acquire` would when a killed job left its lock: a job with
    nothing to do takes no lock, yet its plan was made from records the killed job had
    not finished writing ("already ok" for what it had deleted)."""
    info = read_lock(lock_path(ensemble_path))
    if info is not None and not (info.alive and info.pid != -1):
        raise _stale(ensemble_path, info)


def wait_until_free(ensemble_path: Path, poll: float = 0.1) -> LockInfo | None:
    """Block while a live job holds the lock (Cloudify queues executions); return the
    holder that was waited for, if any. A stale lock is left for acquire to report."""
    path = lock_path(ensemble_path)
    waited = None
    while (info := read_lock(path)) is not None and info.alive and info.pid != -1:
        if info.pid == os.getpid():
            break
        waited = info
        time.sleep(poll)
    return waited


def finish_advice(project_root: Path) -> str:
    """``unfurl resume``, or ``unfurl resume --force`` when tasks were in flight (a plain
    resume would record them failed)."""
    # start-up: keeps record.interrupted off every job that finds no stale lock
    from unfurl_lite.record import interrupted

    found = interrupted.find(project_root)
    return found.advice() if found else "finish its job with: unfurl resume"


def update(path: Path, command: str, change_id: str) -> None:
    """Name the job's changeId in the lock once it is known (atomic replace)."""
    fd, tmp = temp_file(path.parent, f"{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(_content(command, change_id))
    os.replace(tmp, path)


def stale_text(ensemble_path: Path) -> str | None:
    """The content of the lock a killed job left, or None when there is no stale lock."""
    path = lock_path(ensemble_path)
    info = read_lock(path)
    if info is None or (info.alive and info.pid != -1):
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def hand_back(path: Path, text: str) -> None:
    """Put a stale lock taken over by ``resume`` back, while still holding it (atomic
    replace), so :func:`release` leaves it: a resume that failed before recording the
    killed job must not let the next job start and silently abandon it."""
    fd, tmp = temp_file(path.parent, f"{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


@dataclass
class StaleLock:
    """A killed job's lock that ``resume`` took over; :meth:`settle` once that job is
    recorded, after which a failure no longer puts the lock back."""

    path: Path
    text: str | None
    change_id: str | None = None
    settled: bool = False

    def settle(self) -> None:
        self.settled = True


@contextlib.contextmanager
def kept_until_recorded(path: Path, text: str | None) -> Iterator[StaleLock]:
    """Hand a taken-over stale lock back if resume fails before recording its job."""
    killed = None
    if text is not None:
        with contextlib.suppress(ValueError, AttributeError):
            killed = json.loads(text).get("changeId")
    # killed before its job had an id: nothing ran, so nothing is lost by clearing it
    stale = StaleLock(path, text, killed, settled=not killed)
    try:
        yield stale
    except BaseException as exc:  # re-raised once the lock's fate is decided
        if isinstance(exc, StorageError) and exc.keep_lock:
            keep(path)  # the resumed job ran but is not recorded: resume again
        if stale.settled or text is None:
            raise
        try:
            hand_back(path, text)
        except OSError:  # a full disk: leave ours, stale once this process ends
            keep(path)
        if not isinstance(exc, UnfurlLiteError):
            raise
        raise JobError(
            f"{exc.format()}\nresume failed before {killed} was recorded, so its lock "
            f"{path} is kept: no other job can start and run its operations again",
            hint=f"fix the problem above and run unfurl resume again; to abandon {killed} "
            f"instead (its operations may run again), delete {path}",
        ) from exc


_kept: set[Path] = set()


def keep(path: Path) -> None:
    """Leave this job's lock in place when it is released: the job ran but could not be
    recorded, so once this process ends the lock is stale and only resume takes it."""
    _kept.add(path)


def release(path: Path) -> None:
    if path in _kept:
        _kept.discard(path)
        return
    info = read_lock(path)
    if info is not None and info.pid == os.getpid():
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def held(ensemble_path: Path, command: str, take_stale: bool = False,
         prepared: Prepared | None = None) -> Iterator[Path]:
    path = acquire(ensemble_path, command, take_stale, prepared)
    try:
        yield path
    finally:
        release(path)
