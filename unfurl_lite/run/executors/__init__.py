"""Executors run operations somewhere: a local thread pool, or Celery workers.

The job talks to an executor only through :class:`Executor`: everything it sets or calls
is declared there, so the job never probes an executor for what it happens to offer.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from unfurl_lite.errors import JobError
from unfurl_lite.run.operations.base import OperationRequest, OperationResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # (typing stays off the command's start: nothing checks it at run time)


class Executor(Protocol):
    name: str
    #: the most operations the job sends at once (None: no limit): nothing waits inside
    #: the executor where a soft cancel could not stop it from starting
    capacity: int | None
    #: set by the job; the executor calls it (on any thread) with the task id when a sent
    #: operation really starts, so the job shows "started" then, not when it was sent
    on_started: Callable[[str], None] | None
    #: True when an operation starts as it is submitted (nothing queues it): the job then
    #: records it as started at once, one journal event instead of "sent" and "started"
    starts_on_submit: bool
    #: set by the job: the job's secrets, redacted from results before they are stored
    #: anywhere outside the job process
    secrets: set[str]
    #: set by the job; the executor calls it (on any thread) with what the user should
    #: hear while the job runs (a task waits for a worker, a worker was lost)
    on_notice: Callable[[str], None] | None
    #: what the job's journal keeps of the executor, so that ``resume`` uses the same
    #: (never a password): ``{"executor": "local"}``, or Celery's broker and lineage
    record: dict[str, str]
    #: True when the executor calls ``before_start`` before it starts each operation
    #: submitted to it, on the thread that starts it; False: the job writes what a start
    #: depends on before it submits (Celery sends on the job's thread)
    flushes_before_start: bool
    #: set by the job when ``flushes_before_start``: its journal writes then what it held
    #: back (that operation's start event among it), off the job's own thread
    before_start: Callable[[], None] | None

    def submit(self, request: OperationRequest) -> Future[OperationResult]: ...

    def kill_running(self) -> None:
        """Kill-cancel: stop every running operation this executor started, now."""

    def withdraw_pending(self) -> None:
        """Soft cancel: operations sent but not yet started must not start."""

    def shutdown(self) -> None:
        """The job has ended: wait for what runs, then release everything."""

    def abandon(self) -> None:
        """Force-cancel: start nothing more and wait for nothing."""


class OnJobThread(Protocol):
    """An executor whose results reach the job only while the job waits in its
    :meth:`wait` (it runs operations from the job's own thread)."""

    def wait(self, timeout: float) -> None:
        """Up to ``timeout`` seconds: until an operation ends (its future done, its
        callbacks run, on the caller's thread) or :meth:`wake`."""

    def wake(self) -> None:
        """End a :meth:`wait` now (any thread, or a signal handler)."""


def on_job_thread(executor: Executor) -> OnJobThread | None:
    """``executor`` when the job must wait in its ``wait`` for results (the local
    executor where commands are watched from the job's thread); None for the others."""
    return executor if getattr(executor, "on_job_thread", False) else None  # type: ignore[return-value]


def starts_on_submit(executor: Executor) -> bool:
    """An executor written before the flag (a library user's) queues, as Celery does."""
    return bool(getattr(executor, "starts_on_submit", False))


def flushes_before_start(executor: Executor) -> bool:
    """An executor written before the flag (a library user's) does not."""
    return bool(getattr(executor, "flushes_before_start", False))


def make_executor(kind: str, jobs: int, **options: object) -> Executor:
    if kind == "local":
        # start-up: keeps run.executors.local (27 modules) off `check` until make_executor() runs
        from unfurl_lite.run.executors.local import LocalExecutor

        return LocalExecutor(jobs)
    if kind == "celery":
        # start-up: keeps run.executors.celery (1 module) off `deploy` until make_executor() runs
        from unfurl_lite.run.executors.celery import CeleryExecutor

        return CeleryExecutor(jobs=jobs, **options)  # type: ignore[no-any-return, unused-ignore]
    raise JobError(f"unknown executor {kind!r}", hint="use --executor local or --executor celery")
