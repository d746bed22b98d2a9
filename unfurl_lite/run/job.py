"""Running a plan: tasks in dependency order on an executor, status rules, then records.

The job process owns the ensemble: it renders inputs, submits operations, applies each
result to its instance as it arrives, and at the end writes the records and commits.
Operations only run and report, so the executor can be local threads or Celery workers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from unfurl_lite.model import changeid
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.plan.tasks import Plan
from unfurl_lite.plan.topology import instance_graph, operationless, with_templates
from unfurl_lite.run.executors import Executor
from unfurl_lite.run.observer import JobState, Observer, TaskState
from unfurl_lite.run.options import JobOptions
from unfurl_lite.run.outcome import (
    JobResult,
    Resumed,
    TaskRun,
    job_status,
    summary_counts,
    summary_text,
)
from unfurl_lite.run.render_phase import Rendered, render_all, waiting_plan, without
from unfurl_lite.run.scheduler import Scheduler
from unfurl_lite.run.status import fold_effective
from unfurl_lite.security.redaction import redact_text


def _settle_instances(
    instances: dict[str, Instance], plan: Plan, job_id: str, dryrun: bool
) -> None:
    """Drop instances the plan removes for good, and record update baselines."""
    if dryrun:
        return
    for name in plan.forget:
        instance = instances.get(name)
        if instance is not None and (
            instance.status == Status.absent
            or (instance.status == Status.pending and instance.created is None)
        ):
            del instances[name]
    for name, digests in plan.baselines.items():
        instance = instances.get(name)
        if instance is not None and instance.status == Status.ok:
            instance.extra["specDigests"] = {"changeId": job_id, **digests}


def run_plan(
    ensemble: Ensemble,
    plan: Plan,
    options: JobOptions,
    executor: Executor,
    observer: Observer | None = None,
    cancel: threading.Event | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    resumed: Resumed | None = None,
    latest: str | None = None,
) -> JobResult:
    """Run every task of the plan; the ensemble's instances are updated in memory.

    ``latest`` is the newest job recorded for the ensemble (the records know it: see
    ``record.records.previous_job_id``): the new job's changeId sorts after it and names
    it as previousId. A ``resumed`` job starts from where an earlier one stopped and
    names that one instead.
    """
    ensemble = with_templates(ensemble, plan.removed_templates)  # update's removed ones
    started_at = now()
    floor = max((i for i in (latest, resumed.job_id if resumed else None) if i), default=None)
    if floor and changeid.from_the_future(floor, started_at):
        logging.getLogger(__name__).warning(
            "warning: the last recorded job %s is dated %s, more than %d minutes ahead of "
            "this machine's clock: ignored for the new job's changeId (a damaged or forged "
            "record, or a wrong clock)", floor, changeid.decode(floor).isoformat(),
            changeid.FUTURE_TOLERANCE.seconds // 60)
    job_id = changeid.new_job_id(floor, started_at)
    previous = resumed.job_id if resumed else latest
    scheduler = Scheduler(
        ensemble,
        plan,
        options,
        executor,
        observer or Observer(),
        job_id,
        cancel or threading.Event(),
        resumed=resumed,
    )
    scheduler.prepare()
    rendered = Rendered() if resumed is not None else render_all(
        plan, scheduler.instances, scheduler.requests)
    if rendered.errors:
        return _aborted(ensemble, plan, str(job_id), started_at, now(), scheduler, previous,
                        options.dryrun, rendered.errors)
    plan = scheduler.plan = waiting_plan(without(plan, rendered.dropped), rendered.waits)
    scheduler.seen = rendered.seen
    scheduler.wire()
    try:
        scheduler.loop()
    finally:
        scheduler.observer.flush()  # the last outcomes, before anything follows the loop
    runs = [scheduler.runs[t.number] for t in plan.tasks]
    _settle_instances(scheduler.instances, plan, str(job_id), options.dryrun)
    cancelled = scheduler.cancel.is_set() and any(
        r.state not in (TaskState.succeeded, TaskState.skipped) for r in runs
    )
    status = job_status(runs, scheduler.instances)
    requires = instance_graph(ensemble, scheduler.instances)
    effective = fold_effective(scheduler.instances, requires, operationless(ensemble.topology))
    counts = summary_counts(runs)
    if cancelled:
        state = JobState.cancelled
    else:
        state = JobState.succeeded if status != Status.error else JobState.failed
    return JobResult(
        job_id=str(job_id),
        workflow=plan.workflow,
        state=state,
        status=status,
        runs=runs,
        plan=plan,
        started_at=started_at,
        ended_at=now(),
        summary=summary_text(counts),
        instances=scheduler.instances,
        effective=effective,
        secrets=scheduler.secrets,
        previous_id=previous,
        dryrun=options.dryrun,
    )


def _aborted(ensemble: Ensemble, plan: Plan, job_id: str, started_at: datetime,
             ended_at: datetime, scheduler: Scheduler, previous: str | None, dryrun: bool,
             errors: list[str]) -> JobResult:
    """A job the render phase aborted: no task ran, its status is error, and (nothing
    having run) nothing is recorded."""
    runs = [TaskRun(t) for t in plan.tasks]
    instances = scheduler.instances
    requires = instance_graph(ensemble, instances)
    return JobResult(
        job_id=job_id, workflow=plan.workflow, state=JobState.failed, status=Status.error,
        runs=runs, plan=plan, started_at=started_at, ended_at=ended_at,
        summary=summary_text(summary_counts(runs)), instances=instances,
        effective=fold_effective(instances, requires, operationless(ensemble.topology)),
        secrets=scheduler.secrets, previous_id=previous, dryrun=dryrun,
        render_errors=[redact_text(e, scheduler.secrets) for e in errors],
    )


__all__ = ["run_plan"]
