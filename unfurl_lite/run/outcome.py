"""A job's outcome: each task's run, the result, and the rules that turn the runs into
the job's status and summary."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from unfurl_lite.expressions.reads import Reads
from unfurl_lite.load.digestkey import digest_key
from unfurl_lite.model.builtin_workflows import WORKFLOWS
from unfurl_lite.model.entities import Instance, NodeState, Priority, Status
from unfurl_lite.model.narrow import new_dict, new_list
from unfurl_lite.plan.tasks import Plan, Task
from unfurl_lite.run.observer import JobState, TaskState
from unfurl_lite.run.operations.base import OperationResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OBSERVING = ("check", "discover")  # reasons whose operations change nothing live


@dataclass
class TaskRun:
    """A task's run within a job: its state, changeId, inputs and result."""
    task: Task
    state: TaskState = TaskState.pending
    change_id: str | None = None
    previous_id: str | None = None
    inputs: dict[str, Any] = field(default_factory=new_dict)
    result: OperationResult | None = None
    status: Status | None = None  # the task's own outcome: ok, degraded, error, unknown
    changed: bool = False
    attempts: int = 0
    started_at: datetime | None = None
    ended_at: datetime | None = None
    message: str | None = None  # why it was blocked or skipped, or its error
    prior_state: NodeState | None = None
    worker: str | None = None
    carried: bool = False  # finished in the job this one resumes; not run or recorded again
    interrupted: str | None = None  # the state it was in when its job process died
    retries: list[str] = field(default_factory=new_list)  # why each rescheduled attempt failed
    #: its instance's status when it ended (Unfurl's task summary shows this one)
    target_status: Status | None = None
    #: (digestKeys, digestValue), taken while its inputs are whole: a journal keeps secrets
    #: redacted, so a resumed job must not digest them again
    digest: tuple[str, str] | None = None
    #: what the operation read (its digest's keys); None when not known (a resumed task)
    reads: Reads | None = None

    @property
    def counted(self) -> bool:
        """Unfurl counts neither a pass-through nor a task skipped on entry: its instance
        already had the status it was to reach (a check found it so), or a check's
        required dependencies were not operational."""
        if self.state == TaskState.skipped and self.task.skips_on_entry:
            return False
        return not self.task.is_passthrough or self.task.failure is not None

    @property
    def not_run(self) -> bool:
        """Failed without its operation ever starting (no worker took it...)."""
        return self.state == TaskState.failed and self.result is not None \
            and not self.result.ran

    @property
    def ran(self) -> bool:
        return (
            self.state in (TaskState.succeeded, TaskState.failed, TaskState.blocked)
            and self.change_id is not None
            and not self.carried
        )


@dataclass
class JobResult:
    """The outcome of a job, task by task, as recorded and shown."""
    job_id: str
    workflow: str
    state: JobState
    status: Status
    runs: list[TaskRun]
    plan: Plan
    started_at: datetime
    ended_at: datetime
    summary: str
    instances: dict[str, Instance]
    effective: dict[str, Status]
    secrets: set[str]
    previous_id: str | None = None
    start_commit: str | None = None
    commit: str | None = None
    written: list[str] = field(default_factory=new_list)
    dryrun: bool = False
    not_committed: str | None = None  # why records that were written have no commit
    #: each instance's (status, node state) when the job started: what it changed
    before: dict[str, tuple[str, str | None]] = field(default_factory=new_dict)
    #: ``--query``: the expression and its value once the job was done
    query: tuple[str, Any] | None = None
    #: the render phase failed (run/render_phase.py): the job was aborted, nothing ran
    render_errors: list[str] = field(default_factory=new_list)

    @property
    def counts(self) -> dict[str, int]:
        return summary_counts(self.runs)

    @property
    def partition(self) -> dict[str, int]:
        """Where each counted task ended (see :func:`partition`): the numbers add up."""
        return partition(run_outcome(r, str(self.state)) for r in self.runs if r.counted)

    @property
    def changed_anything(self) -> bool:
        return any(r.ran for r in self.runs) or any(
            r.task.is_passthrough and r.state == TaskState.succeeded for r in self.runs
        )

    def exit_code(self, jobexitcode: str) -> int:
        """64 when the job ended at the given status or worse (Unfurl's --jobexitcode)."""
        if self.state == JobState.cancelled:
            return 64 if jobexitcode != "never" else 0
        worst = {"error": (Status.error,), "degraded": (Status.error, Status.degraded)}
        return 64 if self.status in worst.get(jobexitcode, ()) else 0


@dataclass
class Resumed:
    """What a resumed job starts from: the instances as the earlier job left them and the
    runs it finished (``carried``), keyed by task number."""

    job_id: str
    instances: dict[str, Instance]
    runs: dict[int, TaskRun]
    #: keyed digests of the secrets the earlier job knew (security/digested.py)
    secret_digests: list[str] = field(default_factory=new_list)



#: Unfurl's own workflows, where a dry run follows Unfurl's rules
UNFURL_WORKFLOWS = frozenset(w.name for w in WORKFLOWS if w.origin == "unfurl")


def summary_counts(runs: list[TaskRun]) -> dict[str, int]:
    """Unfurl's counts (its JobReporter.stats): a task whose instance was in error when it
    ended is counted failed, even when it succeeded (a repaired create, its instance still
    in error until its configure ends; a resultTemplate that set ``readyState: error``)."""
    counted = [r for r in runs if r.counted]
    in_error = {id(r) for r in counted if r.target_status == Status.error
                and r.state in (TaskState.succeeded, TaskState.failed)}
    return {
        "tasks": len(counted),
        "changed": sum(1 for r in counted if r.changed),
        "ok": sum(1 for r in counted if r.state == TaskState.succeeded and id(r) not in in_error),
        "failed": sum(
            1 for r in counted if id(r) in in_error or (r.state == TaskState.failed
            and r.status != Status.unknown and not r.not_run)
        ),
        "blocked": sum(1 for r in counted if r.state == TaskState.blocked),
        "unknown": sum(
            1 for r in counted if r.state == TaskState.failed and r.status == Status.unknown
            and id(r) not in in_error
        ),
        "skipped": sum(1 for r in counted if r.state == TaskState.skipped),
        "not_run": sum(1 for r in counted if r.not_run),
    }


def unfurl_count(run: TaskRun) -> str | None:
    """Where Unfurl's summary counts a task that ran (as :func:`summary_counts`): ``failed``
    when its instance was in error as it ended, ``unknown`` for a failure that did not say
    what it changed; None for the ways both counts agree on (blocked, skipped, not run)."""
    if run.target_status == Status.error and run.state in (TaskState.succeeded,
                                                           TaskState.failed):
        return "failed"
    if run.state == TaskState.succeeded:
        return "ok"
    if run.state == TaskState.failed and not run.not_run:
        return "unknown" if run.status == Status.unknown else "failed"
    return None


def summary_text(counts: dict[str, int]) -> str:
    return (
        f"{counts['tasks']} tasks ({counts['changed']} changed, {counts['ok']} ok, "
        f"{counts['failed']} failed, {counts['blocked']} blocked, {counts['unknown']} unknown, "
        f"{counts['skipped']} skipped"
        + (f", {counts['not_run']} not run" if counts.get("not_run") else "")
        + ")"
    )


#: where a task can end, as a user reads a job that did not simply succeed; each counted
#: task is in exactly one, so the numbers add up to the job's task count (Unfurl's summary
#: counts "changed" across the others and a blocked task can be "changed" too)
OUTCOMES = ("ok", "failed", "blocked", "cancelled", "skipped", "not run")

#: job states in which a task that did not start was cancelled (Cloudify's cancel family)
CANCELLING = frozenset({"cancelling", "cancelled", "force_cancelling", "kill_cancelling"})


def task_outcome(state: str, job_state: str) -> str:
    """The outcome of a task in a job that has ended, from its state and the job's: a task
    that never started was cancelled when the job was, else it was not run (its job's
    process died, or it was left when the job ended)."""
    if state == "succeeded":
        return "ok"
    if state in ("failed", "blocked", "skipped"):
        return state
    return "cancelled" if job_state in CANCELLING else "not run"


def run_outcome(run: TaskRun, job_state: str) -> str:
    """:func:`task_outcome` of a run; one that failed before its operation ever started
    (no worker took it) was not run."""
    return "not run" if run.not_run else task_outcome(str(run.state), job_state)


def partition(outcomes: Iterable[str]) -> dict[str, int]:
    """How many tasks ended each way, every outcome present (0 when none)."""
    counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes:
        counts[outcome if outcome in counts else "not run"] += 1
    return counts


def partition_text(counts: dict[str, int]) -> str:
    """``5 tasks: 1 ok, 1 failed, 3 blocked, 0 cancelled, 0 skipped, 0 not run``."""
    total = sum(counts.get(o, 0) for o in OUTCOMES)
    noun = "task" if total == 1 else "tasks"
    return f"{total} {noun}: " + ", ".join(f"{counts.get(o, 0)} {o}" for o in OUTCOMES)


def job_status(runs: list[TaskRun], instances: dict[str, Instance]) -> Status:
    """The worst outcome: a failed or blocked task, or a check that found its instance in
    error or degraded (a check job that finds errors must not exit 0)."""
    worst = Status.ok
    for run in runs:
        if found_unhealthy(run) and not run.task.may_fail:
            instance = instances.get(run.task.target)
            optional = instance is not None and instance.priority == Priority.optional
            if run.status == Status.degraded or optional:
                worst = Status.degraded if worst == Status.ok else worst
                continue
            return Status.error
        if run.state not in (TaskState.failed, TaskState.blocked) or run.task.may_fail:
            continue
        instance = instances.get(run.task.target)
        if instance is not None and instance.priority == Priority.optional:
            worst = Status.degraded if worst == Status.ok else worst
        else:
            return Status.error
    return worst


def found_unhealthy(run: TaskRun) -> bool:
    """A check that ran and found its instance in error or degraded."""
    return (
        run.task.reason == "check"
        and run.state == TaskState.succeeded
        and run.status in (Status.error, Status.degraded)
    )


def task_numbers(plan: Plan, runs: dict[int, TaskRun]) -> dict[int, int]:
    """Each task's changeId number, in plan order as Unfurl numbers them (node by node),
    not in the order parallel tasks happen to start: the same ensemble gets the same
    changeIds whatever the timing. Tasks that run no operation take none; a task that is
    blocked or skipped when its turn comes leaves its number unused, as a blocked task
    takes one in Unfurl."""
    numbers: dict[int, int] = {}
    for task in plan.tasks:
        if task.is_passthrough or task.failure is not None or runs[task.number].carried:
            continue
        numbers[task.number] = len(numbers) + 1
    return numbers


def resumed_secrets(secrets: set[str], root: Path, entries: list[str]) -> set[str]:
    """A resumed job redacts what the job it resumes derived, known by keyed digests (its
    journal never held them in clear; see security/digested.py)."""
    # start-up: keeps security.digested (2 modules) off `check` until resumed_secrets() runs
    from unfurl_lite.security.digested import HashedForms, SecretSet

    key = digest_key(root)
    return SecretSet(secrets, HashedForms(key, entries)) if key is not None else secrets


def guard_fails(task: Task, runs: dict[int, TaskRun]) -> str | None:
    """Why a guarded task is skipped, or None when it should run."""
    guard = task.guard
    if guard is None:
        return None
    if guard.if_failed and not any(did_not_pass(runs[n]) for n in guard.if_failed):
        return "nothing failed"
    if guard.if_ran and not any(
        runs[n].state in (TaskState.succeeded, TaskState.failed) for n in guard.if_ran
    ):
        return "nothing of it was installed"
    if guard.unless_failed and any(did_not_pass(runs[n]) for n in guard.unless_failed):
        return "an earlier step failed"
    return None


def did_not_pass(run: TaskRun) -> bool:
    """A task failed or was blocked; or, a health check (a check whose success means
    ``ok``: heal's and update's check_status), it reported a status other than ok."""
    if run.state in (TaskState.failed, TaskState.blocked):
        return True
    task = run.task
    return (
        run.state == TaskState.succeeded and task.reason == "check"
        and task.done_status == Status.ok and run.status not in (None, Status.ok)
    )


def result_of(future: Future[OperationResult]) -> OperationResult:
    """An executor or transport failure, or an exit raised inside the operation
    (``SystemExit``, ``KeyboardInterrupt`` raised by its code: the future holds it, so it
    is not the user's Ctrl-C, which only sets the cancel event), is the task's failure."""
    exc = future.exception()
    if exc is None:
        return future.result()
    return OperationResult(success=False, modified=None, error=f"{type(exc).__name__}: {exc}")
