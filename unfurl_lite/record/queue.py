"""Jobs waiting for the ensemble's lock (``--queue``): Cloudify's ``queued`` executions.

A waiting job has no changeId yet (a changeId is taken when the job starts, so it sorts
after the job it waited for), so each waiter leaves a small file beside the lock while it
waits, ``.unfurl-lite.queue-<pid>`` (pid, host, command, since), removed when its turn
comes. History and the dashboard list the live ones as ``queued``; a file whose process is
gone is ignored (and removed by the next waiter).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from unfurl_lite.record.liveness import pid_alive

QUEUE_PREFIX = ".unfurl-lite.queue-"


@dataclass(frozen=True)
class Waiting:
    """A job queued for an ensemble's lock (Cloudify's queued execution)."""
    pid: int
    host: str
    command: str
    since: datetime


def _path(directory: Path, pid: int) -> Path:
    return directory / f"{QUEUE_PREFIX}{pid}"


@contextlib.contextmanager
def waiting(ensemble_path: Path, command: str) -> Iterator[Path]:
    """Be listed as queued on this ensemble for the duration of the block."""
    directory = ensemble_path.parent
    path = _path(directory, os.getpid())
    entry = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
             "since": datetime.now(UTC).isoformat()}
    with contextlib.suppress(OSError):
        for stale in list_waiting(directory, alive=False):
            if not pid_alive(stale.pid):
                _path(directory, stale.pid).unlink(missing_ok=True)
        path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def list_waiting(directory: Path, alive: bool = True) -> list[Waiting]:
    """The jobs waiting on the ensemble in ``directory``, oldest first (only live ones,
    unless ``alive`` is False)."""
    found: list[Waiting] = []
    for path in directory.glob(f"{QUEUE_PREFIX}*"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            item = Waiting(int(data["pid"]), str(data.get("host", "")),
                           str(data.get("command", "")), datetime.fromisoformat(data["since"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not alive or pid_alive(item.pid):
            found.append(item)
    return sorted(found, key=lambda w: w.since)

