"""The worker's watchdog: kills the commands of a worker that died, even by kill -9.

A worker starts one watchdog in a session of its own and tells it, on a pipe, the process
group of each command it starts (``+PGID``) and ends (``-PGID``). When the pipe closes, the
worker is gone however it died, and the watchdog kills every group it still knows of, so
the copy of the task that is sent again never overlaps a leftover command.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GRACE_SECONDS = 2.0


def main() -> None:
    groups: set[int] = set()
    for line in sys.stdin:
        line = line.strip()
        with contextlib.suppress(ValueError):
            if line.startswith("+"):
                groups.add(int(line[1:]))
            elif line.startswith("-"):
                groups.discard(int(line[1:]))
    _kill(groups)


def _kill(groups: set[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, sig)
        if sig == signal.SIGTERM and groups:
            time.sleep(GRACE_SECONDS)


class Watchdog:
    """The worker's end of the pipe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "unfurl_lite.run.executors.watchdog"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True,
            env={**os.environ, "PYTHONPATH": package_path()},
        )

    def watch(self, pid: int, running: bool) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            assert self._process.stdin is not None
            self._process.stdin.write(f"{'+' if running else '-'}{pid}\n")
            self._process.stdin.flush()


def package_path() -> str:
    here = str(Path(__file__).resolve().parents[3])
    existing = os.environ.get("PYTHONPATH")
    return f"{here}{os.pathsep}{existing}" if existing else here


if __name__ == "__main__":
    main()
