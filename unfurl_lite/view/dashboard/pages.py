"""What each dashboard page shows, gathered through the api as plain data (no HTML here).

Every page reads what ``unfurl status``, ``history`` and ``show`` read, so the dashboard
never tells a different story than the terminal, and redacts secrets the same way: a
job's output is what ``api.show`` returns, already redacted as in the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from unfurl_lite import api
from unfurl_lite.errors import ChangeIdError, UnfurlLiteError
from unfurl_lite.model import changeid
from unfurl_lite.record import history as hist
from unfurl_lite.record.history import Filters
from unfurl_lite.view.dashboard.timeline import Bar


class NotFound(Exception):
    """A URL that names nothing: a 404 page, never a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class TaskView:
    """One task of a job as its page lists it."""

    change_id: str
    target: str
    operation: str
    reason: str
    status: str
    state: str
    attempts: int | None
    worker: str
    duration: float | None
    output: str
    started: datetime | None = None
    ended: datetime | None = None
    number: int | None = None  # the task's number in a running job (its changeId comes later)


@dataclass
class JobPage:
    change_id: str
    workflow: str
    status: str
    summary: str
    commit: str | None
    time: str
    running: bool
    tasks: list[TaskView] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    measured: bool = True  # the timeline's times come from the journal (else from durations)


def overview(ensemble: Path, instances: bool = False) -> dict[str, Any]:
    """``unfurl status`` and the topology picture, from one load of the ensemble; an
    ensemble that does not load is shown as its error, not raised (the history still is)."""
    from unfurl_lite.view.dashboard.picture import picture_of

    try:
        loaded = api.load(ensemble)
        report = api.status(loaded)
    except UnfurlLiteError as exc:
        return {"report": None, "error": exc.format(), "picture": "", "drawn_by": ""}
    picture, drawn_by = picture_of(loaded, instances)
    return {"report": report, "error": None, "picture": picture, "drawn_by": drawn_by}


def jobs(ensemble: Path, instance: str | None = None) -> list[dict[str, Any]]:
    """Every job newest first (running ones first of all), as ``unfurl history --json``."""
    return [job.as_json() for job in api.history(ensemble, Filters(instance=instance or None))]


def _parse_change_id(text: str) -> changeid.ChangeId:
    try:
        return changeid.parse(text)
    except ChangeIdError:
        raise NotFound(f"{text!r} is not a changeId (they look like A6BMIY9e0000)") from None


def job_page(ensemble: Path, text: str) -> JobPage:
    """The job ``text`` names: from its records once it has ended, from its journal while it
    runs; NotFound when neither exists."""
    from unfurl_lite.view.dashboard import live

    wanted = _parse_change_id(text)
    job_id = str(wanted.job)
    if live.summary(ensemble, job_id) is None:  # not in jobs.tsv (yet)
        running = _running_page(ensemble, job_id)
        if running is None:
            raise NotFound(f"no job {job_id[:8]} in this project's history")
        return running
    # a damaged job file is an error of its own (shown as such), not "no such job"
    return _recorded_page(ensemble, api.show(job_id, ensemble, with_diff=False))


def _task_view(entry: dict[str, Any]) -> TaskView:
    implementation = entry.get("implementation") or {}
    operation = str(implementation.get("operation") or "")
    if entry.get("interface"):
        operation = f"{entry['interface']}.{operation}"
    result: dict[str, Any] = entry["result"] if isinstance(entry.get("result"), dict) else {}
    duration = result.get("duration") if isinstance(result.get("duration"), int | float) else None
    output = [f"{key}: {value}" for key, value in result.items()
              if key != "duration" and value not in ("", None)]
    if entry.get("message"):
        output.append(f"message: {entry['message']}")
    attempts = entry.get("attempts")
    return TaskView(
        change_id=str(entry.get("changeId") or ""),
        target=str(entry.get("target") or "").removeprefix("::"),
        operation=operation,
        reason=str(entry.get("reason") or ""),
        status=str(entry.get("status") or (entry.get("readyState") or {}).get("local") or ""),
        state=str(entry.get("state") or ""),
        attempts=attempts if isinstance(attempts, int) else None,
        worker=str(entry.get("worker") or ""),
        duration=float(duration) if duration is not None else None,
        output="\n".join(output),
    )


def _journal_times(root: Path, job_id: str) -> dict[str, tuple[datetime, datetime | None]]:
    """changeId -> (start, end) of each task the job's journal timed (kept beside its record)."""
    from unfurl_lite.record.journal import journal_path, read_journal

    path = journal_path(root, job_id)
    if not path.exists():
        return {}
    try:
        tasks = read_journal(path).tasks
    except (OSError, ValueError):
        return {}
    times = {}
    for task in tasks:
        start = _moment(task.get("startedAt"))
        if task.get("changeId") and start is not None:
            times[str(task["changeId"])] = (start, _moment(task.get("endedAt")))
    return times


def _moment(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def _start_time(entry: dict[str, Any] | None, job_id: str) -> datetime:
    text = str((entry or {}).get("startTime") or "")
    try:
        return datetime.strptime(text, "%Y-%m-%d-%H-%M-%S-%f").replace(tzinfo=UTC)
    except ValueError:
        return changeid.decode(job_id)


def _recorded_page(ensemble: Path, shown: Any) -> JobPage:
    job = shown.job
    tasks = [_task_view(entry) for entry in shown.tasks]
    times = _journal_times(ensemble.parent if ensemble.is_file() else ensemble, job.change_id)
    measured = bool(times) and all(t.change_id in times for t in tasks if t.state != "skipped")
    if measured:
        for task in tasks:
            task.started, task.ended = times.get(task.change_id, (None, None))
    else:  # a job recorded by Unfurl (no journal): one after another, as long as each took
        cursor = _start_time(shown.record, job.change_id)
        for task in tasks:
            if task.duration is None:
                continue
            task.started = cursor
            cursor = cursor + timedelta(seconds=task.duration)
            task.ended = cursor
    return JobPage(
        change_id=job.change_id,
        workflow=job.workflow,
        status=job.shown_status,
        summary=job.summary,
        commit=job.commit.hexsha if job.commit else None,
        time=hist.iso(job.time),
        running=False,
        tasks=tasks,
        bars=bars_of(tasks),
        measured=measured,
    )


def bars_of(tasks: list[TaskView]) -> list[Bar]:
    return [
        Bar(key=t.change_id or f"#{t.number}", label=f"{t.target} {t.operation}", status=t.status
            or t.state, start=t.started, end=t.ended)
        for t in tasks
        if t.started is not None
    ]


def _running_page(ensemble: Path, job_id: str) -> JobPage | None:
    from unfurl_lite.view.dashboard import live

    journal = live.find_journal(ensemble, job_id)
    if journal is None:
        return None
    progress = live.progress(journal)
    tasks = [
        TaskView(change_id=str(t.get("changeId") or ""), target=str(t.get("target") or ""),
                 operation=str(t.get("operation") or ""), reason="", status=t.get("status") or "",
                 state=str(t.get("state") or ""), attempts=t.get("attempts"),
                 worker=str(t.get("worker") or ""), duration=None, output="",
                 started=_moment(t.get("startedAt")), ended=_moment(t.get("endedAt")),
                 number=t.get("number"))
        for t in journal.tasks
    ]
    alive = live.alive(journal)
    summary = f"{progress['done']} of {progress['total']} tasks done"
    if not alive and not journal.recorded:
        summary += ("; the job's process is gone before it was recorded: `unfurl resume` "
                    "continues it")
    return JobPage(
        change_id=job_id,
        workflow=str(journal.data.get("workflow") or ""),
        status=str(progress["state"]) if alive else "interrupted",
        summary=summary,
        commit=None,
        time=hist.iso(changeid.decode(job_id)),
        running=alive,
        tasks=tasks,
        bars=bars_of(tasks),
    )


def job_json(page: JobPage) -> dict[str, Any]:
    """The job page's data for ``/api/jobs/<changeId>``."""

    def when(moment: datetime | None) -> str | None:
        return hist.iso(moment) if moment else None

    return {
        "changeId": page.change_id, "workflow": page.workflow or None, "status": page.status,
        "summary": page.summary, "commit": page.commit, "time": page.time,
        "running": page.running, "timesMeasured": page.measured,
        "tasks": [
            {"changeId": t.change_id, "target": t.target, "operation": t.operation,
             "reason": t.reason or None, "status": t.status or None, "state": t.state or None,
             "attempts": t.attempts, "worker": t.worker or None, "duration": t.duration,
             "output": t.output or None, "start": when(t.started), "end": when(t.ended)}
            for t in page.tasks
        ],
    }
