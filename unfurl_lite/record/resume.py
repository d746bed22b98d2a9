"""Resume: finish a failed, cancelled or killed job from its journal.

The plan is made again from the journal's workflow, options and the instance status the
job started from, so every task keeps its number; the journal then says which tasks are
done. As in Cloudify: succeeded tasks are not run again; failed, rescheduled, blocked and
pending ones run (retry count reset), but a check whose failure steps already acted on
stays failed (``decisions_taken``); tasks that were sent or started when the process
died have an unknown outcome and run again only with ``force`` (the next resume of the
job that recorded them failed runs them: they are failed tasks of an earlier job then).
A killed job is first recorded as it stood (status, jobs.tsv, job files), so nothing it
did is lost.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unfurl_lite.errors import JobError
from unfurl_lite.expressions.context import spec_secrets
from unfurl_lite.expressions.digest import spec_digest
from unfurl_lite.load.digestkey import digest_key
from unfurl_lite.load.jobslog import read_jobs_tsv
from unfurl_lite.model import changeid
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance
from unfurl_lite.plan.registry import build
from unfurl_lite.plan.tasks import ROLLBACK, Plan
from unfurl_lite.plan.topology import instance_graph, operationless
from unfurl_lite.record import interrupted
from unfurl_lite.record.journal import (
    JournalFile,
    list_journals,
    restore_instances,
    restore_run,
    snapshot_instances,
    task_record,
)
from unfurl_lite.record.journal_format import write_journal as write_whole
from unfurl_lite.run.observer import JobState, TaskState
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.run.options import JobOptions
from unfurl_lite.run.outcome import (
    JobResult,
    Resumed,
    TaskRun,
    job_status,
    summary_counts,
    summary_text,
)
from unfurl_lite.run.status import fold_effective, on_failure
from unfurl_lite.security.digested import HashedForms, SecretSet

RESUMABLE = ("failed", "cancelled")
IN_FLIGHT = (TaskState.sent, TaskState.started)
#: one notion of a killed job, defined in record/interrupted.py (names kept for callers)


def find_job(root: Path, change_id: str | None = None) -> JournalFile:
    """The job to resume: CHANGEID (a prefix will do), else the newest not yet resumed."""
    journals = list_journals(root)
    if change_id:
        matches = [j for j in journals if j.change_id.startswith(change_id)]
        if not matches:
            raise JobError(
                f"no job {change_id!r} with a journal under jobs/",
                hint="unfurl history lists the jobs; only jobs run by unfurl-lite can resume",
            )
        journal = matches[-1]
        newest = interrupted.newest_of_lineage(journals, journal)
        if newest is not journal:
            raise JobError(
                f"job {journal.change_id} was already resumed by job {newest.change_id}",
                hint=f"resume the newest job of the lineage: unfurl resume {newest.change_id}"
                if newest.state in RESUMABLE or interrupted.killed(newest)
                else f"job {newest.change_id} ended {newest.state}: nothing is left to resume",
            )
    else:
        candidates = [j for j in interrupted.not_resumed(journals)
                      if j.state in RESUMABLE or interrupted.killed(j)]
        if not candidates:
            raise JobError("there is no failed, cancelled or killed job to resume")
        journal = candidates[-1]
    if interrupted.running(journal):
        raise JobError(
            f"job {journal.change_id} is still running (pid {journal.pid})",
            hint="wait for it, or stop it with: unfurl cancel",
        )
    if journal.state == "succeeded" and not interrupted.killed(journal):
        raise JobError(f"job {journal.change_id} succeeded: there is nothing to resume")
    return journal


def spec_changed(ensemble: Ensemble, journal: JournalFile) -> bool:
    return journal.data.get("specDigest") != spec_digest(ensemble.spec)


def replan(ensemble: Ensemble, journal: JournalFile) -> Plan:
    """The journal's plan, made again; refused if the plan has changed, or if the spec has
    changed for a job that was not cancelled. As Cloudify's deployment update ("this
    affects canceled executions, which can be resumed after the deployment update
    finishes, and use the new inputs"), a cancelled job resumes on the spec as it now is,
    if that gives it the same tasks: those left run with the new inputs."""
    changed = spec_changed(ensemble, journal)
    if changed and journal.state != "cancelled":
        raise JobError(
            f"the ensemble's spec changed since job {journal.change_id} ran, so it cannot "
            "be resumed exactly",
            hint="run the workflow again instead (e.g. unfurl deploy); only a cancelled job "
                 "resumes after a deployment update, with the new inputs",
        )
    start = restore_instances(journal.data.get("startInstances") or {})
    at_start = dataclasses.replace(ensemble, instances=start)
    options: dict[str, Any] = journal.data.get("planOptions") or {}
    plan = build(at_start, str(journal.data["workflow"]), options)
    planned = [
        (t.number, t.target, t.operation.qualified_name if t.operation else None)
        for t in plan.tasks
    ]
    recorded = [(t["number"], t["target"], t.get("operation")) for t in journal.tasks]
    if planned != recorded:
        raise JobError(
            f"job {journal.change_id} cannot be planned again the same way"
            + (" on the changed spec (it would not run the same tasks)" if changed else ""),
            hint="run the workflow again instead (e.g. unfurl deploy)",
        )
    return plan


def job_options(journal: JournalFile) -> JobOptions:
    saved: dict[str, Any] = journal.data.get("jobOptions") or {}
    return JobOptions(
        retries=int(saved.get("retries") or 0),
        jobs=int(saved.get("jobs") or 0),
        commit=bool(saved.get("commit", True)),
        jobexitcode=str(saved.get("jobexitcode") or "error"),
        env_passthrough=bool(saved.get("envPassthrough")),
        recorded=dict(saved.get("recorded") or {}),
    )


def interrupted_result(ensemble: Ensemble, journal: JournalFile, plan: Plan) -> JobResult:
    """The killed job as it stood: in-flight tasks failed with an unknown outcome."""
    instances = restore_instances(journal.data.get("instances") or {})
    by_number = {t["number"]: t for t in journal.tasks}
    runs: list[TaskRun] = []
    for task in plan.tasks:
        run = restore_run(TaskRun(task), by_number[task.number])
        instance = instances.get(task.target)
        if run.state in IN_FLIGHT and instance is not None:
            run.interrupted = str(run.state)
            run.result = OperationResult(
                success=False, modified=None, error="interrupted: the job process died"
            )
            if plan.affects_history:
                on_failure(instance, task, run.result, run.change_id or "", run.prior_state)
            run.state, run.status = TaskState.failed, instance.status
            run.message = "interrupted: the job process died while this task ran"
        elif run.state == TaskState.sending:
            if instance is not None and run.prior_state is not None:
                instance.state = run.prior_state
            run.state = TaskState.pending
        elif run.state == TaskState.rescheduled:
            run.state, run.status = TaskState.failed, run.status
        runs.append(run)
    started_at = changeid.parse(journal.change_id).time
    status = job_status(runs, instances)
    interrupted_state = journal.state in interrupted.UNFINISHED
    effective = fold_effective(
        instances, instance_graph(ensemble, instances), operationless(ensemble.topology)
    )
    return JobResult(
        job_id=journal.change_id,
        workflow=str(journal.data["workflow"]),
        state=JobState.failed if interrupted_state else JobState(journal.state),
        status=status,
        runs=runs,
        plan=plan,
        started_at=started_at,
        ended_at=datetime.now(UTC),
        summary=summary_text(summary_counts(runs))
        + (" (interrupted)" if interrupted_state else ""),
        instances=instances,
        effective=effective,
        # what the killed job knew at its start, and what it learnt, by digests
        secrets=known_secrets(ensemble, journal),
        previous_id=journal.data.get("previousId"),
    )


def write_journal(journal: JournalFile, result: JobResult, **changes: object) -> None:
    data = dict(journal.data)
    data.update(changes)
    data["tasks"] = [task_record(r, result.secrets) for r in result.runs]

    data["instances"] = snapshot_instances(result.instances, result.secrets)
    journal.data = data

    write_whole(journal.path, data)


def logged(ensemble: Ensemble, job_id: str) -> bool:
    """Whether the job's records are already in its log (jobs.tsv, or the inline
    ``changes:`` a crashed job may have written before it died)."""
    if ensemble.inline_log:
        return any(str(c.get("changeId", ""))[:8] == job_id[:8] for c in ensemble.changes or ())
    return any(r["changeId"] == job_id for r in read_jobs_tsv(ensemble.jobs_tsv))


def in_flight_when_killed(record: dict[str, object]) -> bool:
    """Was the task running when this journal's own job was killed? Only those wait for
    ``--force``. One an earlier job left interrupted, carried here as failed, is a failed
    task like any other: Cloudify's rule, failed tasks go back to pending, so plain
    ``resume`` converges (at most twice after any sequence of kills)."""
    return bool(record.get("interrupted")) and not record.get("carried")


def resumed_from(journal: JournalFile, plan: Plan, force: bool,
                 current: dict[str, Instance] | None = None) -> Resumed:
    """Which runs are carried over as done, and the instances to start from: as the job
    left them, or ``current`` (a cancelled job resumed after a deployment update starts
    from what the update left)."""
    instances = dict(current) if current is not None else restore_instances(
        journal.data.get("instances") or {})
    by_number = {t["number"]: t for t in journal.tasks}
    undone = rolled_back(plan, by_number)
    for name, new in plan.new_instances.items():
        if name in undone or name not in instances:  # a rollback dropped it: start again
            instances[name] = dataclasses.replace(new, extra=dict(new.extra))
    runs: dict[int, TaskRun] = {}
    acted_on = decisions_taken(plan, by_number)
    for task in plan.tasks:
        if undone & {task.target, task.source, task.peer}:
            continue  # its work was undone by the rollback: it runs again
        record = by_number[task.number]
        state = record["state"]
        done = state in (TaskState.succeeded, TaskState.skipped)
        stays_failed = state == TaskState.failed and (
            task.number in acted_on or (not force and in_flight_when_killed(record)))
        if done or stays_failed:
            run = restore_run(TaskRun(task), record)
            run.carried = True
            runs[task.number] = run
    return Resumed(journal.change_id, instances, runs, journal.secret_digests)


def decisions_taken(plan: Plan, records: dict[int, dict[str, Any]]) -> set[int]:
    """Tasks whose outcome steps already acted on: a check (heal's check_status, update's
    check_drift) or heal operation that may fail, named by the guard of a task that was
    decided (ran or was skipped). Its failure keeps: run again, a check that now passes
    would skip the rest of a reinstall whose uninstall half is done (a heal whose reinstall
    failed, resumed, would end with the instance deleted and the job succeeded)."""
    decided = (TaskState.succeeded, TaskState.failed, TaskState.skipped)
    taken: set[int] = set()
    for task in plan.tasks:
        if task.guard is not None and records[task.number]["state"] in decided:
            taken.update(task.guard.if_failed, task.guard.unless_failed, task.guard.if_ran)
    return {t.number for t in plan.tasks if t.may_fail and t.number in taken}


def rolled_back(plan: Plan, records: dict[int, dict[str, Any]]) -> set[str]:
    """New instances a failed scale out's rollback uninstalled: resuming the job scales out
    again, so every task on them (and the relationship tasks to them) runs again."""
    return {
        t.target for t in plan.tasks
        if t.reason == ROLLBACK and t.target in plan.new_instances
        and records[t.number]["state"] in (TaskState.succeeded, TaskState.failed)
    }


def known_secrets(ensemble: Ensemble, journal: JournalFile) -> SecretSet:
    """The spec's secrets, and those the journal's job derived, known by their digests."""
    return SecretSet(spec_secrets(ensemble.topology),
                     hashed_forms(ensemble.project_root, journal.secret_digests))


def hashed_forms(root: Path, entries: list[str]) -> HashedForms | None:
    key = digest_key(root) if entries else None
    return HashedForms(key, entries) if key is not None else None
