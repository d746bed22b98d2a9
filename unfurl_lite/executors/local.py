"""The default executor: a bounded thread pool in the job's own process.

Operations are mostly subprocesses, so threads give real parallelism while the job
process keeps sole ownership of the ensemble's state.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from unfurl_lite.operations import run_operation
from unfurl_lite.operations.base import OperationRequest, OperationResult


class LocalExecutor:
    name = "local"

    def __init__(self, jobs: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="unfurl-task")

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        request.env.setdefault("UNFURL_WORKER", "local")
        return self._pool.submit(run_operation, request)

    def kill_running(self) -> None:
        from unfurl_lite.operations import shell

        shell.terminate_all()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
