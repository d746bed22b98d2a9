"""What each dashboard page shows, gathered through the api as plain data (no HTML here).

Every page reads what ``unfurl status``, ``history`` and ``show`` read, so the dashboard
never tells a different story than the terminal, and redacts secrets the same way: a
job's output is what ``api.show`` returns, already redacted as in the records.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Any

from unfurl_lite import api
from unfurl_lite.errors import ChangeIdError, UnfurlLiteError
from unfurl_lite.model import changeid
from unfurl_lite.record import history as hist
from unfurl_lite.record.history import Filters
from unfurl_lite.record.journal import restore_instances
from unfurl_lite.record.resume import RESUMABLE
from unfurl_lite.view.dashboard import heads, jobpage, live
from unfurl_lite.view.dashboard.jobpage import JobPage
from unfurl_lite.view.dashboard.picture import picture_of


class NotFound(Exception):
    """A URL that names nothing: a 404 page, never a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def overview(ensemble: Path, instances: bool = False) -> dict[str, Any]:
    """``unfurl status`` and the topology picture, from one load of the ensemble; an
    ensemble that does not load is shown as its error, not raised (the history still is).

    While a job runs, the ensemble on disk is as it was before the job (it is written when
    the job is recorded) and the job's journal holds the instances as its tasks left them:
    the page shows those, so it follows the job as its tasks finish."""
    journals = live.running_journals(ensemble)
    running = [live.progress(j) for j in journals]
    try:
        loaded = api.load(ensemble)
        if journals:
            loaded = with_journal_instances(loaded, journals[0])
        report = api.status(loaded)
    except UnfurlLiteError as exc:
        return {"report": None, "error": exc.format(), "picture": "", "drawn_by": "",
                "running": running}
    picture, drawn_by = picture_of(loaded, instances)
    return {"report": report, "error": None, "picture": picture, "drawn_by": drawn_by,
            "running": running}


def with_journal_instances(ensemble: Any, journal: Any) -> Any:
    """The ensemble with its instances as a running job's journal has them now."""

    now = restore_instances(journal.data.get("instances") or {})
    return dataclasses.replace(ensemble, instances={**ensemble.instances, **now})


def jobs(ensemble: Path, instance: str | None = None) -> list[dict[str, Any]]:
    """Every job newest first (running ones first of all), as ``unfurl history --json``."""
    return [job.as_json() for job in api.history(ensemble, Filters(instance=instance or None))]


def history(ensemble: Path, instance: str | None = None) -> list[dict[str, Any]]:
    """The history page's rows: each job as ``unfurl history --json`` gives it, with how
    long it took, the command that ran it, and the resume that finished it."""
    found = heads.journal_heads(live.project_root(ensemble))
    resumed = heads.resumers(found)
    rows: list[dict[str, Any]] = []
    for job in api.history(ensemble, Filters(instance=instance or None)):
        row = job.as_json()
        head = found.get(job.change_id, {})
        interrupted = job.summary.endswith("(interrupted)")  # recorded by resume, later
        if interrupted:
            row["status"] = "interrupted"
        row["duration"] = None if interrupted else heads.duration_of(job.job_file)
        row["command"] = jobpage.equivalent_command(
            job.workflow or str(head.get("workflow") or ""), head.get("planOptions") or {},
            head.get("jobOptions") or {}) if head else None
        row["resumes"] = head.get("resumes")
        row["resumedBy"] = resumed.get(job.change_id)
        rows.append(row)
    return rows


def _parse_change_id(text: str) -> changeid.ChangeId:
    try:
        return changeid.parse(text)
    except ChangeIdError:
        raise NotFound(f"{text!r} is not a changeId (they look like A6BMIY9e0000)") from None


def job_page(ensemble: Path, text: str) -> JobPage:
    """The job ``text`` names: from its records once it has ended, from its journal while it
    runs (or after its process died unrecorded); NotFound when neither exists."""
    wanted = _parse_change_id(text)
    job_id = str(wanted.job)
    journal = live.find_journal(ensemble, job_id)
    if live.summary(ensemble, job_id) is None:  # not in jobs.tsv (yet)
        if journal is None:
            raise NotFound(f"no job {job_id[:8]} in this project's history")
        return jobpage.journal_page(journal, live.alive(journal), live.resume_command(journal))
    # a damaged job file is an error of its own (shown as such), not "no such job"
    shown = api.show(job_id, ensemble, with_diff=False)
    found = heads.journal_heads(live.project_root(ensemble))
    resumed = heads.resumers(found)
    page = jobpage.recorded_page(live.project_root(ensemble), shown, journal,
                                 resumed.get(job_id, ""))
    if journal is not None and not page.resumed_by and journal.state in RESUMABLE:
        newest = [c for c, h in found.items() if c not in resumed and h.get("state") in RESUMABLE]
        page.resume_command = "unfurl resume" + ("" if newest and newest[-1] == job_id
                                                 else f" {job_id}")
    return page


def job_json(page: JobPage) -> dict[str, Any]:
    """The job page's data for ``/api/jobs/<changeId>``."""

    def when(moment: datetime | None) -> str | None:
        return hist.iso(moment) if moment else None

    return {
        "changeId": page.change_id, "workflow": page.workflow or None, "status": page.status,
        "execution": page.execution or None,
        "summary": page.summary, "partition": page.partition, "commit": page.commit,
        "time": page.time, "duration": page.duration, "author": page.author or None,
        "command": page.command or None, "options": page.options, "plan": page.notes,
        "resumes": page.resumes or None, "resumedBy": page.resumed_by or None,
        "resume": page.resume_command or None, "running": page.running,
        "timesMeasured": page.measured,
        "tasks": [
            {"changeId": t.change_id, "number": t.number, "target": t.target,
             "operation": t.operation, "reason": t.reason or None, "outcome": t.outcome,
             "why": t.why or None, "state": t.state or None, "status": t.status or None,
             "attempts": t.attempts, "worker": t.worker or None, "duration": t.duration,
             "output": t.output or None, "start": when(t.started), "end": when(t.ended)}
            for t in page.tasks
        ],
    }
