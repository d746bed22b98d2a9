"""What a task's outcome does: a task blocked by the failure before it, an operation's
result applied to its instance (or its relationship's), instances its resultTemplate
created taken into the job, an operation that never started.

The job process owns the ensemble, so every status decision is made here, never where
the operation ran; the rules themselves are :mod:`~unfurl_lite.run.status`'s.
"""

from __future__ import annotations

import contextlib

from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.plan.created import managed_tasks, plan_created
from unfurl_lite.plan.tasks import Task
from unfurl_lite.run import status as rules
from unfurl_lite.run.discovery import add_discovered
from unfurl_lite.run.observer import TaskState
from unfurl_lite.run.operations.base import DRYRUN_NOT_SUPPORTED, OperationResult
from unfurl_lite.run.outcome import OBSERVING, UNFURL_WORKFLOWS, TaskRun
from unfurl_lite.run.progress import Progress
from unfurl_lite.run.relationships import (
    drop_if_unrequired,
    on_relationship,
    relationship_instance,
    still_linked,
)
from unfurl_lite.run.results import keep_defaults_read
from unfurl_lite.run.status import in_sequence, needs, on_failure, on_start, on_success


def checked_first(before: Task, task: Task) -> bool:
    """``before`` is the check a deploy runs first on an instance in an unknown state, and
    ``task`` one of the install steps after it (skipped if the check found it ok): as in
    Unfurl 1.2.0, a failed check (its instance stays unknown) does not stop them
    (tests/data/unfurl120/50-check-skips/deployed-dep-check-fails, its redeploy)."""
    return before.reason == "check" and before.target == task.target \
        and task.skip_when is not None and before.skip_when is None


class Settling(Progress):
    """The run's outcomes, applied as each task ends (the scheduler decides when)."""

    def blocked(self, run: TaskRun) -> bool:
        """Complete the task as blocked when a task it follows failed (or was blocked), or
        left its instance in error (e.g. a resultTemplate that set readyState: error)."""
        task = run.task
        if not task.after:  # (a task that follows none: nothing can block it)
            return False
        failed_dep = min(  # the instance's own earlier step first (its record follows it)
            (
                d
                for d in task.after
                if not (task.guard and d in task.guard.if_failed)
                if not checked_first(self.runs[d].task, task)
                if self.runs[d].state in (TaskState.failed, TaskState.blocked)
                and not self.runs[d].task.may_fail
                and needs(self.plan.cloudify, self.ensemble, self.instances, task,
                          self.runs[d].task)
            ),
            key=lambda d: self.runs[d].task.target != task.target, default=None,
        )
        if failed_dep is not None:
            dep, before = self.runs[failed_dep].task, self.runs[failed_dep]
            if not before.not_run and (before.state == TaskState.failed or (  # or recorded
                    dep.target == task.target and (before.changed or (
                        before.change_id and task.requirement is None)))):
                self.block_on_own_failure(run, own=dep.target == task.target)
            self.complete(run, TaskState.blocked, f"{dep.name} on {dep.target} did not succeed")
            return True
        in_error = next(
            (
                self.runs[d].task.target
                for d in task.after
                if self.runs[d].state == TaskState.succeeded
                and self.runs[d].task.target != task.target
                and not self.runs[d].task.may_fail
                and self.instances[self.runs[d].task.target].status == Status.error
                and needs(self.plan.cloudify, self.ensemble, self.instances, task,
                          self.runs[d].task)
            ),
            None,
        )
        if in_error is not None and not self.options.dryrun:
            self.complete(run, TaskState.blocked, f"{in_error} is in error")
            return True
        return False

    def block_on_own_failure(self, run: TaskRun, own: bool = True) -> None:
        """Unfurl 1.2.0: in deploy or undeploy, a task after a failed one on the same
        instance (configure after a failed create) is blocked with an explicit ``error``
        (and so in every lifecycle task of a workflow that keeps history, rules.in_lifecycle:
        a scale out's new instance ends as deploy's would):
        its instance ends ``error`` and, if it was not yet, ``created`` by this task, which
        gets a changeId and a record (``status=error``), even when the failure already left it
        ``error``; counted changed when its status is not the one it had as the job was
        planned (Unfurl's ``modified_target``). ``own=False``: see rules.on_blocked."""
        task = run.task
        if not rules.in_lifecycle(task) or not self.plan.affects_history or self.options.dryrun:
            return
        instance = self.instances[task.target]
        if not own and not rules.on_blocked(instance, task):
            return
        run.change_id = self.change_id(task)
        # its record lists the inputs it would have run with, as Unfurl's, when they render
        with contextlib.suppress(Exception):
            self.requests.request(run, instance)
        if own:
            on_failure(instance, task, OperationResult(False, False, status="error"),
                       run.change_id, instance.state)
        run.status, run.target_status = Status.error, instance.status
        run.changed = own and self.start_status.get(task.target) != instance.status

    def conclude(self, run: TaskRun) -> None:
        """Apply a finished operation's result: in a dry run or a workflow that keeps no
        history, only the task's own outcome; otherwise the status rules on its instance
        (a relationship operation's on its relationship instance), the task's recorded
        status, changed flag and previousId, the instances it discovered taken in."""
        result = run.result or OperationResult(success=False, modified=None)
        instance = self.instances[run.task.target]
        change_id = run.change_id or ""
        if (self.options.dryrun and result.skipped and self.plan.workflow in UNFURL_WORKFLOWS
                and not self.plan.cloudify):
            # Unfurl fails a task whose operation has no dry-run form (Cloudify's preview
            # workflows only list it)
            result.success, result.error, result.skipped = False, DRYRUN_NOT_SUPPORTED, False
        if self.options.dryrun or not self.plan.affects_history:
            state = TaskState.succeeded if result.success else TaskState.failed
            run.status = Status.ok if result.success else Status.error
            run.changed = bool(result.modified) and not self.options.dryrun
            return self.complete(run, state, result.error)
        relationship = relationship_instance(self.instances, run.task, self.ensemble.spec)
        if relationship is not None:
            linked = result.success and still_linked(self.instances, run.task, self.leaving())
            instance, task = relationship, on_relationship(run.task, instance, linked)
        else:
            task = run.task
        if result.protected is not None:
            instance.protected = result.protected
        last_change = rules.change_before(instance, result)
        observing = run.task.reason in OBSERVING
        run.previous_id = None  # set below when the task replaced the instance's last change
        if result.success:
            changed = on_success(instance, task, result, change_id)
            run.status = instance.status if observing else Status.ok
            sequenced = in_sequence(task)
            run.changed = changed if observing or sequenced else bool(result.modified) or changed
            # what the instance's status was when the task ended (a check's own finding)
            run.target_status = instance.status if sequenced or observing \
                or task.reason.startswith("step:") else None
            if not observing:
                run.previous_id = rules.previous_id(last_change, rules.last_change(instance))
            added = add_discovered(self.instances, result, change_id, run.task.target)
            if added:
                run.changed = True
                self.adopt(run.task, added)
            if relationship is not None:
                drop_if_unrequired(self.ensemble.topology.templates, self.instances, run.task)
            return self.complete(run, TaskState.succeeded)
        changed = on_failure(instance, task, result, change_id, run.prior_state)
        run.changed = bool(result.modified) or changed
        run.target_status = instance.status if in_sequence(run.task) else None
        if not observing:
            run.previous_id = rules.previous_id(last_change, rules.last_change(instance))
        run.status = Status.error  # Unfurl: a task that failed is `error`, whatever its target
        if (result.error or "").startswith("resultTemplate/") and run.prior_state != instance.state:
            # Unfurl: a failed resultTemplate that moved its instance's state (a re-run that
            # leaves it where it was changed nothing, as a re-run that timed out again)
            run.changed = True
        self.complete(run, TaskState.failed, result.error)

    def adopt(self, creator: Task, names: list[str]) -> None:
        """A deploy task's resultTemplate created instances: those it left unmanaged go
        through their own lifecycle in this job, a managed one is left to its creator (see
        plan/created.py)."""
        if creator.workflow != "deploy" or self.plan.cloudify or not self.plan.affects_history:
            return
        for task in managed_tasks(self.ensemble, self.instances, names, max(self.runs) + 1):
            self.add_task(task, runs=False)
            self.number_for(task)  # as Unfurl's reconfigure that found nothing to do
            self.complete(self.runs[task.number], TaskState.skipped, "managed by its creator")
        for task in plan_created(self.ensemble, self.instances, names, max(self.runs) + 1):
            self.add_task(task)

    def add_task(self, task: Task, runs: bool = True) -> None:
        """A task planned while the job runs, last in plan order (``runs`` False: it is
        settled at once)."""
        self.plan.tasks.append(task)
        self.runs[task.number] = TaskRun(task)
        self.position[task.number] = len(self.position)
        self.waiting[task.number] = len(task.after)
        for before in task.after:
            self.dependents.setdefault(before, []).append(task.number)
        if runs and not task.after:
            self.ready.append(task.number)

    def leaving(self) -> set[str]:
        """The instances this job takes down (asked only when an unlink ends)."""
        if self.taken_down is None:
            self.taken_down = {t.target for t in self.plan.tasks if t.done_status == Status.absent}
        return self.taken_down

    def not_ready(self, run: TaskRun, instance: Instance, why: str) -> None:
        """A rendered task that may not run (see render_phase.unready_reads): as Unfurl, it
        is recorded as an error with what it read, its digest and its start (its instance
        enters the step: ``creating``), and blocked."""
        if self.plan.affects_history and not self.options.dryrun:
            on_start(instance, run.task)
            keep_defaults_read(self.instances, self.ensemble.topology, run.reads)
        run.status = Status.error
        self.complete(run, TaskState.blocked, why)

    def not_run(self, run: TaskRun, result: OperationResult) -> None:
        """An operation that never started changed nothing: its instance goes back to the
        state it had before the task was sent, and the task fails with the reason (a check
        whose ``done`` input would have set a status must not find anything)."""
        result.success = False
        if self.plan.affects_history and not self.options.dryrun:
            self.instances[run.task.target].state = run.prior_state
        run.status = Status.error
        run.changed = False
        run.target_status = (
            self.instances[run.task.target].status if in_sequence(run.task) else None
        )
        reason = result.error or "no worker ran it"
        self.complete(run, TaskState.failed, f"did not run: {reason}")
