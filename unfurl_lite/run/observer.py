"""What a job tells the outside while it runs: task and job states, and the observer hooks.

Apart from job.py so that showing a plan or a progress display does not import the
engine (executors, operations, expression evaluation) it never runs.
"""

from __future__ import annotations

from enum import StrEnum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.model.entities import Instance
    from unfurl_lite.run.outcome import TaskRun


class TaskState(StrEnum):
    """Cloudify's task states, plus the two outcomes a task can have without running."""

    pending = "pending"
    sending = "sending"
    sent = "sent"
    started = "started"
    succeeded = "succeeded"
    failed = "failed"
    rescheduled = "rescheduled"
    blocked = "blocked"
    skipped = "skipped"


class JobState(StrEnum):
    """A job's state as its journal records it; :func:`execution_status` gives Cloudify's
    name for it."""

    started = "started"
    succeeded = "succeeded"
    failed = "failed"
    cancelling = "cancelling"
    force_cancelling = "force_cancelling"
    kill_cancelling = "kill_cancelling"
    cancelled = "cancelled"


#: journal states of a job being cancelled (Cloudify's three kinds of cancel)
CANCELLING = frozenset({"cancelling", "force_cancelling", "kill_cancelling"})
#: journal states of a job that has not ended
RUNNING = frozenset({"started", *CANCELLING})
#: Cloudify's execution statuses, in the order an execution goes through them
EXECUTION_STATUSES = ("pending", "queued", "started", "cancelling", "force_cancelling",
                      "kill_cancelling", "cancelled", "terminated", "failed")


def execution_status(state: str, status: str = "") -> str:
    """Cloudify's execution status of a job in ``state`` (its journal's or job file's;
    ``pending`` and ``queued`` for one not started yet) that ended with Unfurl's
    ``status``: a job that succeeded (ok, degraded) is ``terminated``, one in error
    ``failed``."""
    if state in EXECUTION_STATUSES and state != "failed":
        return state
    if state == "succeeded":
        return "terminated"
    if state == "failed" or status == "error":
        return "failed"
    return "terminated"


class Observer:
    """Hooks for progress display; the default does nothing."""

    def task_started(self, run: TaskRun) -> None: ...

    def task_finished(self, run: TaskRun) -> None: ...

    def task_rescheduled(self, run: TaskRun, delay: float) -> None: ...

    def job_started(self, job_id: str, instances: dict[str, Instance], runs: list[TaskRun]) -> None:
        """The job has its changeId; ``instances`` and ``runs`` are the live objects."""

    def secrets_known(self, secrets: set[str]) -> None:
        """The job's live set of secrets (it grows as inputs are evaluated, always before
        the task they belong to is reported), for anything an observer writes."""

    def task_changed(self, run: TaskRun) -> None:
        """Any task state transition (sending, sent, started...), for the journal."""

    def job_changed(self, state: JobState) -> None: ...

    def flush(self) -> None:
        """Anything held back is written now (the journal holds a task's events until an
        operation starts, the job waits, or it ends)."""

    def waiting(self) -> None:
        """The job is about to wait: what is held back is written, except what the start of
        an operation just submitted writes first (the executor's ``before_start``)."""
        self.flush()

    def job_notice(self, message: str) -> None:
        """Something the user should hear while the job runs (a task waits for a worker,
        a worker was lost); called on any thread."""


class Observers(Observer):
    """Several observers as one (the journal and a progress display)."""

    def __init__(self, *observers: Observer | None) -> None:
        self.observers = [o for o in observers if o is not None]

    def task_started(self, run: TaskRun) -> None:
        for o in self.observers:
            o.task_started(run)

    def task_finished(self, run: TaskRun) -> None:
        for o in self.observers:
            o.task_finished(run)

    def task_rescheduled(self, run: TaskRun, delay: float) -> None:
        for o in self.observers:
            o.task_rescheduled(run, delay)

    def job_started(self, job_id: str, instances: dict[str, Instance], runs: list[TaskRun]) -> None:
        for o in self.observers:
            o.job_started(job_id, instances, runs)

    def secrets_known(self, secrets: set[str]) -> None:
        for o in self.observers:
            o.secrets_known(secrets)

    def task_changed(self, run: TaskRun) -> None:
        for o in self.observers:
            o.task_changed(run)

    def job_changed(self, state: JobState) -> None:
        for o in self.observers:
            o.job_changed(state)

    def flush(self) -> None:
        for o in self.observers:
            o.flush()

    def waiting(self) -> None:
        for o in self.observers:
            o.waiting()

    def job_notice(self, message: str) -> None:
        for o in self.observers:
            o.job_notice(message)
