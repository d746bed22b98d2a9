"""Operations a killed job left running, found and stopped before the job is resumed.

Every operation runs in its own session with ``UNFURL_JOB`` (the job's changeId) in its
environment. When the controlling process dies (``kill -9``, a crash), its shell commands
go on; resuming would then run the same operation a second time beside the first. Before a
killed job is resumed, its operations still alive are found by that variable in
``/proc/<pid>/environ`` (Linux; elsewhere nothing is found) and stopped like a kill-cancel:
SIGTERM to the process group, SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

JOB_VARIABLE = "UNFURL_JOB"


def find(job_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Process groups of operations started by job ``job_id`` that are still running."""
    marker = f"{JOB_VARIABLE}={job_id}".encode()
    groups: set[int] = set()
    for entry in proc.glob("[0-9]*") if proc.is_dir() else ():
        try:
            environ = (entry / "environ").read_bytes()
            if marker not in environ.split(b"\0"):
                continue
            groups.add(os.getpgid(int(entry.name)))
        except (OSError, ValueError):  # gone meanwhile, or another user's
            continue
    groups.discard(os.getpgid(0))
    return sorted(groups)


def stop(groups: list[int], grace: float = 5.0) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        groups = [g for g in groups if _alive(g)]
        time.sleep(0.05)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
