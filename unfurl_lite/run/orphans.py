"""Operations a killed job left running, found and stopped before the job is resumed.

Every operation runs in its own session with ``UNFURL_JOB`` (the job's changeId) and
``UNFURL_ENSEMBLE`` (the ensemble's path) in its environment. When the controlling process
dies (``kill -9``, a crash), its shell commands go on; resuming would then run the same
operation a second time beside the first. Before a killed job is resumed, its operations
still alive are found by those variables in ``/proc/<pid>/environ`` (Linux; elsewhere
nothing is found) and stopped like a kill-cancel: SIGTERM to the process group, SIGKILL
after a grace period. A changeId names a 1/62 s tick, so another ensemble's job started
in the same tick has the same one: its operations are told apart by ``UNFURL_ENSEMBLE``
and left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

JOB_VARIABLE = "UNFURL_JOB"
ENSEMBLE_VARIABLE = "UNFURL_ENSEMBLE"


def find(job_id: str, ensemble: str | None = None, proc: Path = Path("/proc")) -> list[int]:
    """Process groups of operations started by job ``job_id`` of ``ensemble`` (its path, as
    the job's operations get it) that are still running. One without ``UNFURL_ENSEMBLE``
    (started by an earlier version) is taken by its changeId alone."""
    marker = f"{JOB_VARIABLE}={job_id}".encode()
    ours = f"{ENSEMBLE_VARIABLE}={ensemble}".encode()
    named = f"{ENSEMBLE_VARIABLE}=".encode()
    groups: set[int] = set()
    for entry in proc.glob("[0-9]*") if proc.is_dir() else ():
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
            if marker not in variables:
                continue
            if ensemble is not None and ours not in variables \
                    and any(v.startswith(named) for v in variables):
                continue  # another ensemble's job, started in the same tick
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
