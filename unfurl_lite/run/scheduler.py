"""The scheduler: tasks in dependency order on an executor, each result applied to its
instance as it arrives (:mod:`~unfurl_lite.run.settling`), retries, guards, and the three
kinds of cancel.

It lives only as long as one :func:`~unfurl_lite.run.job.run_plan`; the job process owns
the ensemble, so every status decision is made here, never where the operation ran.
"""

from __future__ import annotations

import heapq
import queue
import time
from concurrent.futures import Future
from datetime import UTC, datetime

from unfurl_lite.errors import ExpressionError, RenderCancelled, UnfurlLiteError
from unfurl_lite.expressions.context import spec_secrets
from unfurl_lite.model.entities import Instance, NodeState, Status
from unfurl_lite.run.executors import flushes_before_start, on_job_thread, starts_on_submit
from unfurl_lite.run.metadata import EnsembleMetadata
from unfurl_lite.run.observer import JobState, TaskState
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.outcome import (
    OBSERVING,
    TaskRun,
    guard_fails,
    result_of,
    resumed_secrets,
    task_numbers,
)
from unfurl_lite.run.relationships import relationship_instance
from unfurl_lite.run.render_phase import never_ran, unready_reads
from unfurl_lite.run.requests import RequestBuilder
from unfurl_lite.run.results import check_types, keep_defaults_read, secret_names
from unfurl_lite.run.settling import Settling
from unfurl_lite.run.signals import JobControl
from unfurl_lite.run.status import on_start, on_success
from unfurl_lite.security.environment import base_environment
from unfurl_lite.security.redaction import redact_text

CANCEL_POLL = 0.2  # seconds between looks at the cancel event while operations run
EXPLICIT_RETRY_LIMIT = 3  # retries granted to an operation that asks for one (exit 75)


class Scheduler(Settling):
    """When each task runs: ready in dependency order, started on the executor, its
    result read as it arrives, retried, or settled without running."""

    def prepare(self) -> None:
        """The job's state and its request builder: enough to render a task."""
        self.instances = {n: i for n, i in self.ensemble.instances.items()}
        self.instances.update(self.plan.new_instances)
        if self.resumed is not None:
            self.instances = dict(self.resumed.instances)
            self.runs.update(self.resumed.runs)
        self.start_status = {name: i.status for name, i in self.instances.items()}
        self.env = base_environment(self.options.env_passthrough)
        if self.resumed is not None and self.resumed.secret_digests:
            self.secrets = resumed_secrets(self.secrets, self.ensemble.project_root,
                                           self.resumed.secret_digests)
        self.ensemble_metadata = EnsembleMetadata(self.ensemble.path, str(self.job_id))
        self.secrets.update(spec_secrets(self.ensemble.topology))
        self.observer.secrets_known(self.secrets)
        self.requests = RequestBuilder(
            self.ensemble, self.instances, self.options, self.job_id, self.cancel,
            self.secrets, self.env, self.ensemble_metadata,
        )

    def wire(self) -> None:
        """Each task's dependencies counted, the first ready, the job started."""
        for task in self.plan.tasks:
            self.runs.setdefault(task.number, TaskRun(task))
            self.waiting[task.number] = sum(
                1 for d in task.after if not (d in self.runs and self.runs[d].carried)
            )
            for dep in task.after:
                self.dependents.setdefault(dep, []).append(task.number)
        self.ready.extend(
            t.number
            for t in self.plan.tasks
            if not self.waiting[t.number] and not self.runs[t.number].carried
        )
        self.numbers = task_numbers(self.plan, self.runs)
        self.position = {t.number: i for i, t in enumerate(self.plan.tasks)}
        self.undecided = [self.position[t.number] for t in self.plan.tasks
                          if t.skips_on_entry and not self.runs[t.number].carried]
        if isinstance(self.cancel, JobControl):  # a cancel ends the loop's wait at once
            self.cancel.wake = self.wake
        self.at_once = starts_on_submit(self.executor)
        self.here = on_job_thread(self.executor)
        hear = None if self.at_once else self.operation_started
        self.executor.on_started = hear  # an executor that starts at once says nothing
        self.executor.on_notice = self.observer.job_notice
        self.executor.secrets = self.secrets  # redacted out of results where they are kept
        self.flushes = flushes_before_start(self.executor)
        if self.flushes:  # the job's thread need not write what an operation's start needs
            self.executor.before_start = self.observer.flush
        self.observer.job_started(
            str(self.job_id), self.instances, [self.runs[t.number] for t in self.plan.tasks]
        )

    def operation_started(self, task_id: str) -> None:
        """Called on the executor's thread: hand over to the loop, which owns the state."""
        with self.started_lock:
            self.newly_started.append(task_id)
        self.arrived.put(None)

    def mark_started(self) -> None:
        with self.started_lock:
            started, self.newly_started = self.newly_started, []
        by_id = {self.runs[n].change_id: self.runs[n] for n in self.running.values()}
        for task_id in started:
            run = by_id.get(task_id)
            if run is not None and run.state == TaskState.sent:
                run.state = TaskState.started
                self.observer.task_started(run)  # "started" when it starts, not when sent
                self.observer.task_changed(run)

    def loop(self) -> None:
        """The job's one thread: start what is ready (within the executor's capacity),
        wait on one queue for what arrives, hand each result to :meth:`finish`, move the
        retries whose delay is over back to ready, and watch the cancel event (a signal
        handler only sets it) until nothing is ready, running or delayed."""
        while self.ready or self.running or self.delayed:
            capacity = self.executor.capacity
            while self.ready and not self.cancel.is_set() and (
                capacity is None or len(self.running) < capacity
            ):
                self.start(self.ready.popleft())
            if self.cancel.is_set():
                self.announce_cancel()
            if self.cancel.is_set() and not self.running:
                break
            if isinstance(self.cancel, JobControl) and self.cancel.forced.is_set():
                self.announce_cancel()
                self.abandon_running()
                break
            timeout = None
            if self.delayed:
                timeout = max(0.0, self.delayed[0][0] - time.monotonic())
            self.observer.waiting()  # what ended reaches the journal before the job waits
            if self.running:
                # a signal handler only sets an event: poll it (a cancel may escalate)
                timeout = min(timeout, CANCEL_POLL) if timeout is not None else CANCEL_POLL
                done = self.arrivals(timeout)
                if None in done:
                    self.mark_started()
                for future in done:
                    if future is None or future not in self.running:
                        continue
                    number = self.running.pop(future)
                    self.finish(number, result_of(future))
            elif timeout:
                self.cancel.wait(timeout)
            now = time.monotonic()
            while self.delayed and self.delayed[0][0] <= now:
                _, number = heapq.heappop(self.delayed)
                self.ready.append(number)

    def wake(self) -> None:
        """End the loop's wait now (a cancel's signal handler calls it)."""
        self.arrived.put(None)
        here = on_job_thread(self.executor)
        if here is not None:
            here.wake()

    def arrivals(self, timeout: float) -> list[Future[OperationResult] | None]:
        """What arrived within ``timeout`` seconds, and all that came with it (waiting in
        the executor when its results reach the job only there)."""
        here = self.here
        if here is not None:
            here.wait(timeout)
            done: list[Future[OperationResult] | None] = []
        else:
            try:
                done = [self.arrived.get(timeout=timeout)]
            except queue.Empty:
                return []
        try:
            while True:
                done.append(self.arrived.get_nowait())
        except queue.Empty:
            pass
        return done

    def announce_cancel(self) -> None:
        """The job is being cancelled: say which kind, once per kind (a plain cancel may
        become a kill-cancel); the first time, nothing queued in the executor starts."""
        control = self.cancel if isinstance(self.cancel, JobControl) else None
        state = (JobState.force_cancelling if control and control.forced.is_set()
                 else JobState.kill_cancelling if control and control.killed.is_set()
                 else JobState.cancelling)
        if self.cancelling == state:
            return
        if not self.cancelling:
            self.executor.withdraw_pending()
        self.cancelling = state
        self.observer.job_changed(state)

    def abandon_running(self) -> None:
        """Force-cancel: record the running tasks with an unknown outcome, wait for none."""
        for future, number in list(self.running.items()):
            del self.running[future]
            self.runs[number].result = OperationResult(
                success=False, modified=None,
                error="force-cancelled: left running, its outcome is unknown",
            )  # fmt: skip
            self.conclude(self.runs[number])

    def start(self, number: int) -> None:
        """Start a ready task, unless a task before it in plan order may still be skipped
        as already done: that one's number is then not known to be taken (see
        :meth:`decide_skip`), so this one waits."""
        if self.undecided and self.undecided[0] < self.position[number]:
            self.deferred.append(number)
            return
        self.take(number)
        if self.task_skips(number):
            self.decide_skip(number)

    def task_skips(self, number: int) -> bool:
        return self.runs[number].task.skips_on_entry

    def decide_skip(self, number: int) -> None:
        """A task that may be skipped as already done (``skip_when``) has run or been
        settled: as in Unfurl, one skipped that way takes no changeId number, so the tasks
        after it in plan order (none of which has started) move down one; those that
        waited on it start."""
        position = self.position[number]
        if position in self.undecided:
            self.undecided.remove(position)
        run = self.runs[number]
        if run.state == TaskState.skipped and run.change_id is None and number in self.numbers:
            mine = self.numbers.pop(number)
            for other, taken in self.numbers.items():
                if taken > mine:
                    self.numbers[other] = taken - 1
        waiting, self.deferred = sorted(self.deferred, key=self.position.__getitem__), []
        self.ready.extend(waiting)

    def take(self, number: int) -> None:
        """Take one ready task to the executor, or settle it without running: skipped by
        its guard, blocked by a failed dependency, skipped as already in the state it
        would reach, failed as planned, a passthrough; then its changeId, its request
        (a render that fails is the task's failure) and its submission."""
        run = self.runs[number]
        task = run.task
        guard_why = guard_fails(task, self.runs) if task.guard is not None else None
        if guard_why is None and task.needs_operational:
            guard_why = self.not_operational(task.needs_operational)
        if guard_why is not None:
            return self.complete(run, TaskState.skipped, guard_why)
        never = never_ran(task, self.instances, self.seen.get(number, {})) \
            if task.waits_on else None
        if never is not None:  # as Unfurl: recorded, with its changeId, as an error
            run.change_id = self.change_id(task)
            run.status = Status.error
            return self.complete(run, TaskState.blocked, never)
        if self.blocked(run):
            return
        instance = self.instances[task.target]
        if task.skip_when is not None and instance.status == task.skip_when:
            if task.skip_when == Status.ok and task.workflow == "deploy" and instance.state in (
                None, NodeState.initial
            ):  # Unfurl: the check that found it ok ends the workflow, which ends started
                instance.state = NodeState.started
            return self.complete(run, TaskState.skipped, f"skipped: already {task.skip_when}")
        if task.failure is not None:
            return self.complete(run, TaskState.failed, task.failure)
        if task.is_passthrough:
            if self.plan.affects_history:
                on_success(instance, task, OperationResult(success=True, modified=False), "")
            return self.complete(run, TaskState.succeeded)
        self.assign_change(run, instance)
        try:
            request = self.requests.request(run, instance)
        except RenderCancelled:  # cancelled before it started: it stays not run
            run.started_at, run.change_id = None, None
            self.ready.appendleft(number)
            return
        except (ExpressionError, UnfurlLiteError) as exc:
            run.result = OperationResult(success=False, modified=False, error=exc.message)
            return self.conclude(run)
        except Exception as exc:  # any failure preparing a task is that task's failure
            run.result = OperationResult(
                success=False, modified=False, error=f"{type(exc).__name__}: {exc}"
            )
            return self.conclude(run)
        reads = run.reads  # (none read of another instance: nothing to be unready)
        unready = unready_reads(task, reads, self.instances, self.ensemble.topology.templates,
                                self.computed) \
            if not self.plan.cloudify and reads is not None and reads.dependencies else None
        if unready is not None:
            return self.not_ready(run, instance, unready)
        self.submit(run, instance, request)

    def assign_change(self, run: TaskRun, instance: Instance) -> None:
        """The task's changeId, the change it follows (previousId) and the state its
        instance had before it (a task retried keeps the ones of its first attempt)."""
        task = run.task
        if run.change_id is None:
            run.change_id = self.change_id(task)
            spec = self.ensemble.spec
            subject = relationship_instance(self.instances, task, spec) or instance
            run.previous_id = (
                subject.last_state_change
                if task.reason == "check"
                else subject.last_config_change
            )
            run.prior_state = instance.state
        run.started_at = run.started_at or datetime.now(UTC)

    def submit(self, run: TaskRun, instance: Instance, request: OperationRequest) -> None:
        """Hand the request to the executor, with Cloudify's task states on the way."""
        run.state = TaskState.sending
        if self.plan.affects_history:
            on_start(instance, run.task)
        run.attempts += 1
        self.observer.task_changed(run)
        run.state = TaskState.sent
        self.observer.task_changed(run)
        if self.at_once:  # Cloudify's task states all the same, before it runs
            run.state = TaskState.started
            self.observer.task_started(run)
            self.observer.task_changed(run)
        if not self.flushes:  # its start event reaches the journal before it leaves
            self.observer.flush()
        future = self.executor.submit(request)
        self.running[future] = run.task.number
        future.add_done_callback(self.arrived.put)

    def finish(self, number: int, result: OperationResult) -> None:
        """An operation's result arrived: retry it, or read its ``done``/``resultTemplate``
        (a failure there is the task's, as Unfurl), keep the attribute defaults it read,
        refuse instance names derived from secrets, then conclude the task."""
        run = self.runs[number]
        run.result = result
        run.worker = result.worker
        if not result.ran:  # nothing happened: no retry, no done/status rules
            return self.not_run(run, result)
        if not result.success and self._retry(run, result):
            return
        if not self.options.dryrun and not result.skipped:
            try:
                self.requests.read_result(run, result)
                if result.attributes:  # (a value it sets may be refused by its type)
                    check_types(self.ensemble.topology, self.instances[run.task.target],
                                result)
                if run.task.reason in OBSERVING and result.status:
                    # a check that reports a status has done its job, whatever its exit code
                    result.success, result.error = True, None
            except (ExpressionError, UnfurlLiteError) as exc:
                # as Unfurl: the task fails; its instance's status is unknown unless
                # `done` says otherwise (see apply_post_inputs)
                result.success = False
                result.error = f"resultTemplate/done: {exc.message}"
            except Exception as exc:  # the task's failure, not the job's
                result.success = False
                result.error = redact_text(
                    f"resultTemplate/done: {type(exc).__name__}: {exc}", self.secrets
                )
        reads = run.reads  # (defaults are kept of values read of an instance only)
        if self.plan.affects_history and not self.options.dryrun and reads is not None \
                and reads.dependencies:
            keep_defaults_read(self.instances, self.ensemble.topology, reads)
        refused = secret_names(result.resources, self.secrets) if result.resources else None
        if refused:
            result.resources = []
            result.success, result.error = False, refused
        self.conclude(run)

    def _retry(self, run: TaskRun, result: OperationResult) -> bool:
        op = run.task.operation
        policy = op.retry if op else None
        limit = policy.max_retries if policy else self.options.retries
        if result.retry:
            limit = max(limit, EXPLICIT_RETRY_LIMIT)
        if run.attempts > limit or self.cancel.is_set():
            return False
        interval = policy.interval if policy else self.options.retry_interval
        backoff = policy.backoff if policy else 2.0
        delay = interval * (backoff ** (run.attempts - 1))
        run.state = TaskState.rescheduled
        run.message = redact_text(
            f"rescheduled after attempt {run.attempts}: {result.error}", self.secrets
        )
        run.retries.append(redact_text(f"attempt {run.attempts}: {result.error}", self.secrets))
        self.observer.task_rescheduled(run, delay)
        self.observer.task_changed(run)
        heapq.heappush(self.delayed, (time.monotonic() + delay, run.task.number))
        return True
