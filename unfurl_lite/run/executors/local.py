"""The default executor: operations run in the job's own process.

A Shell operation's command (the everyday operation) is watched from the job's own thread
(:mod:`unfurl_lite.run.executors.commands`; a spawning thread a slot, up to the cores,
starts the commands): no thread of its own per task, and no queue or lock hand-off for its
output and end. What needs a thread of its own (a Python operation, a command only
``Popen`` can start, or everything where ``pidfd_open`` is missing) runs in a bounded
thread pool, its result handed to the job's thread the same way. The job process keeps
sole ownership of the ensemble's state. Each executor keeps its own table of the commands
it started, so a kill-cancel of one job never touches another job's operations running in
the same process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from unfurl_lite.run.executors.commands import Commands, available
from unfurl_lite.run.operations import ProcessTable, run_operation
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.operations.shell import Places, prepare


class LocalExecutor:
    """Operations in this process: commands from the job's thread, the rest in a pool."""

    name = "local"
    starts_on_submit = True  # at most ``capacity`` are submitted: each starts at once
    flushes_before_start = True  # the spawning thread, or submit, calls before_start

    def __init__(self, jobs: int) -> None:
        self.capacity: int | None = max(1, jobs)
        self._pool: ThreadPoolExecutor | None = None
        self.on_started: Callable[[str], None] | None = None
        self.on_notice: Callable[[str], None] | None = None
        self.record = {"executor": "local"}
        self.secrets: set[str] = set()  # results stay in this process: nothing to redact
        self.processes = ProcessTable()
        self.places = Places()  # the working directories confined for this job
        #: every result reaches the job in :meth:`wait`, on the job's thread
        self.commands = Commands(self.processes, spawners=min(self.capacity, _cores()))
        self.on_job_thread = available()

    @property
    def before_start(self) -> Callable[[], None] | None:
        """Called before each operation starts (see Executor.before_start): by the spawning
        thread for a command it starts, here for the rest."""
        return self.commands.before_start

    @before_start.setter
    def before_start(self, hook: Callable[[], None] | None) -> None:
        self.commands.before_start = hook

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        request.env.setdefault("UNFURL_WORKER", "local")
        if self.on_job_thread and request.kind == "Shell" and not request.refused:
            launch = prepare(request, self.places)
            if isinstance(launch, OperationResult):  # nothing to start
                self._before_start()
                return _done(launch)
            argv = launch.piped_argv()
            if argv is not None:
                return self.commands.start(request.task_id, launch, argv)
        self._before_start()
        if request.kind == "Template":  # nothing runs (the controller evaluated it): no thread
            return _done(run_operation(request, self.processes, self.places))
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.capacity or 1,
                                            thread_name_prefix="unfurl-task")
        future = self._pool.submit(self._run, request)
        return self.commands.hand_over(future) if self.on_job_thread else future

    def _before_start(self) -> None:
        hook = self.commands.before_start
        if hook is not None:
            hook()

    def _run(self, request: OperationRequest) -> OperationResult:
        return run_operation(request, self.processes, self.places)

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for operations to end: their futures are done
        (their callbacks run) on the caller's thread, the job's, before this returns."""
        self.commands.wait(timeout)

    def wake(self) -> None:
        """End a :meth:`wait` now (any thread, or a signal handler)."""
        self.commands.wake()

    def withdraw_pending(self) -> None:
        """Nothing waits: the job sends at most ``capacity`` operations at once."""

    def kill_running(self) -> None:
        self.processes.terminate_all()

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self.commands.close()

    def abandon(self) -> None:
        self.commands.abandon()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _done(result: OperationResult) -> Future[OperationResult]:
    future: Future[OperationResult] = Future()
    future.set_result(result)
    return future
