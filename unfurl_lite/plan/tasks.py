"""What a plan is: tasks (one operation on one instance, or a state change), the guards
that skip them at run time, and the notes that say why something is left alone.

A plan is plain data; planners build it with :class:`Builder` and the job runs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from unfurl_lite.model.entities import (
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Requirement,
    Status,
)
from unfurl_lite.model.narrow import new_dict, new_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# reasons, as Unfurl names them
RECONFIGURE = "reconfigure"
MISSING = "missing"  # it, or a dependency it needs, is not there (unknown, pending, absent)
REPAIR_ERROR = "error"  # Unfurl's reason for re-running the lifecycle of an `error` instance
ROLLBACK = "rollback"  # undoing a failed scale out (Cloudify's rollback)
REPAIR_DEGRADED = "degraded"  # the same for a `degraded` one (deploy --repair degraded)
PRUNE = "prune"  # deploy --prune deletes an instance the job did not plan for
STOP_REASON = "stop"  # Unfurl's stop workflow (`unfurl stop`)
ADD, UPDATE, REPAIR, FORCE, CHECK, DISCOVER, UNDEPLOY, RUN = (
    "add",
    "update",
    "repair",
    "force",
    "check",
    "discover",
    "undeploy",
    "run",
)


@dataclass(frozen=True)
class Guard:
    """A condition checked just before a task starts, for workflows whose path depends on
    earlier outcomes (heal, update, scale's rollback); the task is skipped when it fails.
    Only outcomes of earlier tasks are read, never an instance's status: a task late in a
    reinstall is decided as its first one was. A health check (reason ``check`` whose
    success means ``ok``) that reported another status counts as failed."""

    if_failed: tuple[int, ...] = ()  # run only if one of these tasks failed or was blocked
    if_ran: tuple[int, ...] = ()  # run only if one of these tasks ran (succeeded or failed)
    unless_failed: tuple[int, ...] = ()  # run only if none of these tasks failed or was blocked


@dataclass(frozen=True)
class Task:
    """One operation on one instance, planned with its reason and dependencies."""
    number: int  # the task's index within the job; its changeId ends with it
    target: str  # the instance the operation runs on
    template: str
    operation: Operation | None  # None: no operation, only a state change ("pass-through")
    reason: str
    workflow: str
    after: tuple[int, ...] = ()  # tasks that must finish first
    running_state: NodeState | None = None
    done_state: NodeState | None = None
    done_status: Status | None = None  # the instance's status when this task succeeds
    requirement: Requirement | None = None  # set for relationship operations
    source: str | None = None  # relationship source instance
    peer: str | None = None  # relationship target instance
    skip_when: Status | None = None  # skip if the instance already has this status
    #: a check's required dependencies, as Unfurl 1.2.0's check entry test reads them: (the
    #: instance, the name Unfurl gives it, whether it is the host); the check is skipped,
    #: uncounted, when one is not operational as it would start (run/status.py)
    needs_operational: tuple[tuple[str, str, bool], ...] = ()
    extra_inputs: dict[str, Any] = field(default_factory=new_dict)
    allow_override: bool = True
    may_fail: bool = False  # a failure here neither fails the job nor blocks what follows
    guard: Guard | None = None
    failure: str | None = None  # a pass-through that fails with this message when it runs
    #: live values of other instances its render read (``::db::url``): set by the job's
    #: render phase (run/render_phase.py), which makes the task wait for their tasks
    waits_on: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.operation.name if self.operation else "(no operation)"

    @property
    def is_passthrough(self) -> bool:
        return self.operation is None

    @property
    def skips_on_entry(self) -> bool:
        """Decided as it would start, and when skipped takes no changeId and is not counted
        (as Unfurl skips an operation on entry): already in the status it would reach, or
        a check whose dependencies are not operational."""
        return self.skip_when is not None or bool(self.needs_operational)


@dataclass(frozen=True)
class Note:
    """Something the planner says about an instance it left alone."""
    target: str
    message: str


@dataclass
class Plan:
    """What a workflow will do: its tasks in order, and the instances it creates."""
    workflow: str
    tasks: list[Task]
    new_instances: dict[str, Instance] = field(default_factory=new_dict)
    notes: list[Note] = field(default_factory=new_list)
    options: dict[str, Any] = field(default_factory=new_dict)
    forget: tuple[str, ...] = ()  # instances dropped from status if the job leaves them gone
    baselines: dict[str, dict[str, str]] = field(default_factory=new_dict)  # see workflows.update
    #: False: the job records itself but leaves instances' status and changeIds alone
    affects_history: bool = True
    #: planned as Cloudify's install or uninstall (Unfurl's deploy and undeploy otherwise):
    #: a dry run simulates every task, as Cloudify's dry_run does, where Unfurl fails a task
    #: whose operation has no dry-run form
    cloudify: bool = False
    #: runs in the job's own process tree whatever executor is asked for (install_new_agents
    #: starts the workers the Celery executor needs)
    local_only: bool = False
    #: templates gone from the spec that the plan still runs operations of (update's
    #: uninstall of a removed template, as its last commit defined it); planning leaves the
    #: ensemble as it was, so the job adds these to its own view of the topology
    removed_templates: dict[str, NodeTemplate] = field(default_factory=new_dict)
    #: decided from the ensemble's text and the options alone (no records, git history or
    #: rendered inputs read): the same text and options plan the same again (plan/verdicts.py)
    text_only: bool = False

    @property
    def runnable(self) -> list[Task]:
        return [t for t in self.tasks if not t.is_passthrough]

    def by_target(self) -> dict[str, list[Task]]:
        grouped: dict[str, list[Task]] = {}
        for task in self.tasks:
            grouped.setdefault(task.target, []).append(task)
        return grouped


@dataclass
class Builder:
    """A plan under construction: each task waits for the last task on its own target, so
    planners only name the other tasks it must follow."""

    workflow: str
    tasks: list[Task] = field(default_factory=new_list)
    last: dict[str, int] = field(default_factory=new_dict)  # instance -> its last task number
    notes: list[Note] = field(default_factory=new_list)

    def add(
        self,
        target: str,
        template: str,
        operation: Operation | None,
        reason: str,
        after: Iterable[int],
        **kw: Any,
    ) -> Task:
        deps = set(after)
        if target in self.last:
            deps.add(self.last[target])
        task = Task(
            number=len(self.tasks) + 1,
            target=target,
            template=template,
            operation=operation,
            reason=reason,
            workflow=self.workflow,
            after=tuple(sorted(deps)),
            **kw,
        )
        self.tasks.append(task)
        self.last[target] = task.number
        return task

    def last_of(self, names: Iterable[str]) -> list[int]:
        """The last task of each named instance that has one (what a new task must follow)."""
        return [self.last[n] for n in names if n in self.last]

    def note(self, target: str, message: str) -> None:
        self.notes.append(Note(target, message))

    def plan(self, new: dict[str, Instance], **options: Any) -> Plan:
        return Plan(self.workflow, self.tasks, new, self.notes, options)
