"""The default executor: a bounded thread pool in the job's own process.

Operations are mostly subprocesses, so threads give real parallelism while the job
process keeps sole ownership of the ensemble's state. Each executor keeps its own table of
the commands it started, so a kill-cancel of one job never touches another job's
operations running in the same process.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from unfurl_lite.run.operations import ProcessTable, run_operation
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.operations.shell import Places


class LocalExecutor:
    name = "local"
    starts_on_submit = True  # at most ``capacity`` are submitted: each has its thread

    def __init__(self, jobs: int) -> None:
        self.capacity: int | None = max(1, jobs)
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="unfurl-task")
        self.on_started: Callable[[str], None] | None = None
        self.on_notice: Callable[[str], None] | None = None
        self.record = {"executor": "local"}
        self.secrets: set[str] = set()  # results stay in this process: nothing to redact
        self.processes = ProcessTable()
        self.places = Places()  # the working directories confined for this job

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        request.env.setdefault("UNFURL_WORKER", "local")
        return self._pool.submit(self._run, request)

    def _run(self, request: OperationRequest) -> OperationResult:
        if self.on_started is not None:
            self.on_started(request.task_id)
        return run_operation(request, self.processes, self.places)

    def withdraw_pending(self) -> None:
        """Nothing waits: the job sends at most ``capacity`` operations at once."""

    def kill_running(self) -> None:
        self.processes.terminate_all()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def abandon(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
