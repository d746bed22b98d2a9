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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import LockError
from unfurl_lite.yamlio import temp_file

LOCK_NAME = ".unfurl-lite.lock"


@dataclass(frozen=True)
class LockInfo:
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


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        return bool(fields) and fields[0] == "Z"
    return False


def read_lock(path: Path) -> LockInfo | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return LockInfo(pid=-1, change_id=None, command="?", host="?", since=0.0)
    return LockInfo(
        pid=int(data.get("pid", -1)),
        change_id=data.get("changeId"),
        command=str(data.get("command", "")),
        host=str(data.get("host", "")),
        since=float(data.get("since", 0.0)),
    )


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
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        Path(tmp).unlink(missing_ok=True)


def describe(info: LockInfo) -> str:
    job = f"job {info.change_id}" if info.change_id else "a job"
    return f"{job} ({info.command}, pid {info.pid} on {info.host})"


def acquire(ensemble_path: Path, command: str, take_stale: bool = False) -> Path:
    """Take the lock or raise LockError saying who holds it and what to do."""
    path = lock_path(ensemble_path)
    text = _content(command, None)
    for _ in range(3):
        if _link_new(path, text):
            return path
        info = read_lock(path)
        if info is None:
            continue  # released between our attempt and our look
        if info.alive and info.pid != -1:
            raise LockError(
                f"{describe(info)} is already running on this ensemble",
                hint="wait for it to finish, or stop it with: unfurl cancel",
            )
        if not take_stale:
            raise LockError(
                f"stale lock {path}: {describe(info)} is no longer running "
                "(it was killed or crashed)",
                hint=f"{finish_advice(ensemble_path.parent)} (or, to abandon it, delete {path})",
            )
        path.unlink(missing_ok=True)
    raise LockError(f"could not take the lock {path}", hint="try again")


def finish_advice(project_root: Path) -> str:
    """``unfurl resume``, or ``unfurl resume --force`` when tasks were in flight (a plain
    resume would record them failed)."""
    from unfurl_lite import interrupted

    found = interrupted.find(project_root)
    return found.advice() if found else "finish its job with: unfurl resume"


def update(path: Path, command: str, change_id: str) -> None:
    """Name the job's changeId in the lock once it is known (atomic replace)."""
    fd, tmp = temp_file(path.parent, f"{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(_content(command, change_id))
    os.replace(tmp, path)


def release(path: Path) -> None:
    info = read_lock(path)
    if info is not None and info.pid == os.getpid():
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def held(ensemble_path: Path, command: str, take_stale: bool = False) -> Iterator[Path]:
    path = acquire(ensemble_path, command, take_stale)
    try:
        yield path
    finally:
        release(path)
