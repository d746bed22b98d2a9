"""What one run knows as it goes: each task's run, what waits on what, what is running.

The scheduler's concerns (when a task runs: :mod:`~unfurl_lite.run.scheduler`; what its
outcome does to the instances: :mod:`~unfurl_lite.run.settling`) read and change this one
record; it lives only as long as one :func:`~unfurl_lite.run.job.run_plan`.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime

from unfurl_lite.model import changeid
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.model.narrow import new_dict, new_list, new_set
from unfurl_lite.plan.tasks import Plan, Task
from unfurl_lite.plan.topology import instance_graph, operationless
from unfurl_lite.run.executors import Executor, OnJobThread
from unfurl_lite.run.observer import JobState, Observer, TaskState
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.run.options import JobOptions
from unfurl_lite.run.outcome import Resumed, TaskRun
from unfurl_lite.run.requests import RequestBuilder
from unfurl_lite.run.status import effective_of, not_operational
from unfurl_lite.security.redaction import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass
class Progress:
    """The moving parts of one run; lives only as long as :func:`run_plan`."""

    ensemble: Ensemble
    plan: Plan
    options: JobOptions
    executor: Executor
    observer: Observer
    job_id: changeid.ChangeId
    cancel: threading.Event
    instances: dict[str, Instance] = field(default_factory=new_dict)
    runs: dict[int, TaskRun] = field(default_factory=new_dict)
    waiting: dict[int, int] = field(default_factory=new_dict)
    dependents: dict[int, list[int]] = field(default_factory=new_dict)
    ready: deque[int] = field(default_factory=deque)
    delayed: list[tuple[float, int]] = field(default_factory=new_list)
    running: dict[Future[OperationResult], int] = field(default_factory=new_dict)
    numbers: dict[int, int] = field(default_factory=new_dict)  # task -> its changeId's number
    secrets: set[str] = field(default_factory=new_set)
    env: dict[str, str] = field(default_factory=new_dict)
    resumed: Resumed | None = None
    cancelling: JobState | None = None
    #: each operation's future as it completes, None when one has started: the loop's one
    #: wait (``futures.wait`` hooked a waiter onto every running future at every turn)
    arrived: queue.SimpleQueue[Future[OperationResult] | None] = field(
        default_factory=queue.SimpleQueue)
    newly_started: list[str] = field(default_factory=new_list)
    started_lock: threading.Lock = field(default_factory=threading.Lock)
    taken_down: set[str] | None = None
    ensemble_metadata: Mapping[str, Any] = field(default_factory=new_dict)
    requests: RequestBuilder = field(init=False)  # made by prepare, once secrets are known
    position: dict[int, int] = field(default_factory=new_dict)  # task -> its place in the plan
    undecided: list[int] = field(default_factory=new_list)  # places of skip_when tasks not settled
    deferred: list[int] = field(default_factory=new_list)  # tasks waiting on an undecided one
    start_status: dict[str, Status] = field(default_factory=new_dict)  # each instance's, as planned
    job_prefix: str = ""  # the job's changeId less its task number (see change_id)
    at_once: bool = False  # the executor starts what it is submitted at once (wire)
    here: OnJobThread | None = None  # the executor the job waits in for results (wire)
    #: the executor writes what an operation's start needs before it starts it (see
    #: Executor.before_start); else the job does, before it submits the operation
    flushes: bool = False
    operationless: frozenset[str] | None = None  # see computed()
    #: task -> the values its render saw of what it waits for (render_phase.Rendered.seen)
    seen: dict[int, dict[str, Any]] = field(default_factory=new_dict)
    #: instance -> what it requires, and the effective statuses folded so far: made when a
    #: check first asks whether its dependencies are operational (see not_operational)
    requires: dict[str, list[str]] | None = None
    folded: dict[str, Status] = field(default_factory=new_dict)

    def computed(self) -> frozenset[str]:
        """The templates whose instances only sum their parts (no operation of their own),
        found once, when a rendered task first asks."""
        if self.operationless is None:
            self.operationless = operationless(self.ensemble.topology)
        return self.operationless

    def not_operational(self, needs: tuple[tuple[str, str, bool], ...]) -> str | None:
        """Why a check is skipped as it starts (its required dependencies not operational,
        run/status.py), or None. Its dependencies' checks came first and are over, so the
        statuses folded for it stay true for the checks after it."""
        if self.requires is None:
            self.requires = instance_graph(self.ensemble, self.instances)
        requires, computed = self.requires, self.computed()
        return not_operational(needs, self.instances, lambda name: effective_of(
            name, self.instances, requires, computed, self.folded))

    def change_id(self, task: Task) -> str:
        """The task's changeId (its number: :meth:`number_for`): the job's part encoded
        once a job, not for every task."""
        number = self.number_for(task)
        if not 0 <= number <= changeid.MAX_TASKS:
            return str(self.job_id.for_task(number))  # (refused there, in its words)
        if not self.job_prefix:
            self.job_prefix = str(self.job_id.job)[:-4]
        return f"{self.job_prefix}{number:04x}"

    def number_for(self, task: Task) -> int:
        """The task's changeId number: reserved in plan order, or (a task numbering did not
        expect to run) the next after every reserved one."""
        if task.number not in self.numbers:
            self.numbers[task.number] = max(self.numbers.values(), default=0) + 1
        return self.numbers[task.number]

    def complete(self, run: TaskRun, state: TaskState, message: str | None = None) -> None:
        """The task has ended (run or not): observed, and the tasks that waited only on
        it are ready."""
        run.state = state
        run.message = redact_text(message, self.secrets) if message else message
        run.ended_at = datetime.now(UTC)
        self.observer.task_finished(run)
        self.observer.task_changed(run)
        for dependent in self.dependents.get(run.task.number, ()):
            self.waiting[dependent] -= 1
            if self.waiting[dependent] == 0 and not self.runs[dependent].carried:
                self.ready.append(dependent)  # a resumed job never runs a done task again
