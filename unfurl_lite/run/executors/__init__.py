"""Executors run operations somewhere: a local thread pool, or Celery workers."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from unfurl_lite.run.operations.base import OperationRequest, OperationResult


class Executor(Protocol):
    name: str

    def submit(self, request: OperationRequest) -> Future[OperationResult]: ...

    def kill_running(self) -> None:
        """Kill-cancel: stop every running operation now."""

    def withdraw_pending(self) -> None:
        """Soft cancel: operations sent but not yet started must not start."""

    def shutdown(self) -> None: ...


def make_executor(kind: str, jobs: int, **options: object) -> Executor:
    if kind == "local":
        from unfurl_lite.run.executors.local import LocalExecutor

        return LocalExecutor(jobs)
    if kind == "celery":
        from unfurl_lite.run.executors.celery import CeleryExecutor

        return CeleryExecutor(jobs=jobs, **options)  # type: ignore[no-any-return, unused-ignore]
    from unfurl_lite.errors import JobError

    raise JobError(f"unknown executor {kind!r}", hint="use --executor local or --executor celery")
