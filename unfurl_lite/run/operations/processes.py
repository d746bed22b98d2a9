"""The commands an executor has running, so a kill-cancel can stop them.

Each executor owns one table: a job's kill-cancel stops the operations that job's executor
started and nothing else, even when several jobs run in one process (library users, tests)
or one Celery worker runs tasks of several jobs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # (typing stays off the command's start: nothing checks it at run time)

KILL_GRACE_SECONDS = 5.0


class Running(Protocol):
    """A started command as a kill-cancel sees it: ``subprocess.Popen`` or ``piped.Child``."""

    @property
    def pid(self) -> int: ...

    def wait(self, timeout: float | None = None) -> int: ...

#: told of each command's process group as it starts (True) and ends (False)
Watcher = Callable[[int, bool], None]


class ProcessTable:
    """The commands (process groups) running, each with its task's id."""

    def __init__(self, watch: Watcher | None = None) -> None:
        # keyed by the process: two jobs' tasks may share a changeId (ensembles apart)
        self._running: dict[int, tuple[str, Running]] = {}
        self._lock = threading.Lock()
        #: after :meth:`terminate_all` (every task) or :meth:`terminate` (these tasks): a
        #: command its thread started just before the kill (started, not yet added) is
        #: killed as it is added, not left to run to its end
        self._killed = False
        self._doomed: set[str] = set()
        #: a Celery worker's watchdog kills these groups if the worker itself dies
        self.watch = watch

    @contextlib.contextmanager
    def running(self, task_id: str, process: Running) -> Iterator[None]:
        """``process`` is in the table while the block runs."""
        self.add(task_id, process)
        try:
            yield
        finally:
            self.discard(process)

    def add(self, task_id: str, process: Running) -> None:
        """``process`` is in the table until :meth:`discard`."""
        with self._lock:
            self._running[id(process)] = (task_id, process)
            late = self._killed or task_id in self._doomed
        if self.watch is not None:
            self.watch(process.pid, True)
        if late:
            threading.Thread(target=kill, args=(process,), daemon=True).start()

    def discard(self, process: Running) -> None:
        with self._lock:
            self._running.pop(id(process), None)
        if self.watch is not None:
            self.watch(process.pid, False)

    def task_ids(self) -> list[str]:
        with self._lock:
            return [task_id for task_id, _ in self._running.values()]

    def terminate_all(self, grace: float = KILL_GRACE_SECONDS) -> list[str]:
        """Kill every command in this table and wait for them, and any added later;
        returns the task ids of those it waited for."""
        with self._lock:
            self._killed = True
            running = list(self._running.values())
        threads = [threading.Thread(target=kill, args=(p, grace)) for _, p in running]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return [task_id for task_id, _ in running]

    def terminate(self, task_ids: set[str] | None = None,
                  grace: float = KILL_GRACE_SECONDS) -> list[str]:
        """Kill the commands of these tasks (None: every task's), without waiting."""
        with self._lock:
            if task_ids is None:
                self._killed = True
            else:
                self._doomed |= task_ids
            running = [(t, p) for t, p in self._running.values()
                       if task_ids is None or t in task_ids]
        for _, process in running:
            threading.Thread(target=kill, args=(process, grace), daemon=True).start()
        return [task_id for task_id, _ in running]


def kill(process: Running, grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the command's process group, then SIGKILL after ``grace`` seconds."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
