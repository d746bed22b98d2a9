"""A running job, live: its progress read from the journal and streamed as server-sent events.

The journal (record/journal.py) is the one file a job keeps current at every task
transition, so following it shows what the job does without asking the job anything:
the dashboard stays a reader. Each stream polls the journal's files' modification times
and reads the journal again only when they change; it sends ``progress`` when the counts
or a task's state move, and ``summary`` (from jobs.tsv) once the job is recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unfurl_lite.api.inspect import ensemble_paths
from unfurl_lite.model import changeid
from unfurl_lite.record import history as hist
from unfurl_lite.record import lock
from unfurl_lite.record.interrupted import resume_command
from unfurl_lite.record.journal import PREFIX, JournalFile, journal_path, read_journal
from unfurl_lite.record.journal_format import events_path
from unfurl_lite.record.liveness import pid_alive
from unfurl_lite.record.records import JOBS_DIR
from unfurl_lite.run.observer import RUNNING, execution_status

POLL = 0.1  # seconds between looks at the journal's files
KEEPALIVE = 5.0  # seconds: a comment line, so a closed page ends its stream
DONE_STATES = ("succeeded", "failed", "blocked", "skipped")  # settled: nothing more to come
FINISHED_STATES = ("succeeded", "failed", "skipped")  # ran to their end (the progress bar)
RECENT = 3  # journals looked at for running jobs (they are the newest)


def project_root(ensemble: Path) -> Path:
    return ensemble.parent if ensemble.suffix in (".yaml", ".yml") else ensemble


def find_journal(ensemble: Path, job_id: str) -> JournalFile | None:
    path = journal_path(project_root(ensemble), job_id)
    if not path.exists():
        return None
    try:
        journal = read_journal(path)
    except (OSError, ValueError):
        return None
    return journal if journal.change_id == job_id else None


def shown_tasks(journal: JournalFile) -> list[dict[str, Any]]:
    """The tasks a job's records will list: not the operation-less steps that only pass a
    status along (Unfurl counts and records neither), unless one failed or was blocked."""
    return [t for t in journal.tasks
            if t.get("operation") or t.get("state") in ("failed", "blocked")]


def progress(journal: JournalFile) -> dict[str, Any]:
    """Counts and each task's state: what the page's progress bar and task rows show."""
    tasks = [
        {
            "changeId": t.get("changeId"),
            "number": t.get("number"),
            "target": t.get("target"),
            "operation": t.get("operation"),
            "state": t.get("state"),
            "status": t.get("status"),
        }
        for t in shown_tasks(journal)
    ]
    done = sum(1 for t in tasks if t["state"] in DONE_STATES)
    return {
        "finished": sum(1 for t in tasks if t["state"] in FINISHED_STATES),
        "changeId": journal.change_id,
        "workflow": journal.data.get("workflow"),
        "state": journal.state,
        "execution": execution_status(journal.state, str(journal.data.get("status") or "")),
        "total": len(tasks),
        "done": done,
        "failed": sum(1 for t in tasks if t["state"] == "failed"),
        "running": sum(1 for t in tasks if t["state"] in ("sent", "started")),
        "tasks": tasks,
    }


def _stamp(path: Path) -> tuple[float, int, float, int]:
    def one(p: Path) -> tuple[float, int]:
        try:
            stat = p.stat()
        except OSError:
            return (0.0, 0)
        return (stat.st_mtime, stat.st_size)

    return (*one(path), *one(events_path(path)))


def summary(ensemble: Path, job_id: str) -> dict[str, Any] | None:
    """The job's line in jobs.tsv (or the inline ``changes:``) once recorded: its outcome
    and summary."""
    path, jobs_tsv = ensemble_paths(ensemble)
    for job in hist.read_jobs(jobs_tsv, path):
        if job.change_id == job_id:
            return {"changeId": job_id, "status": job.status, "summary": job.summary}
    return None


def alive(journal: JournalFile) -> bool:

    return pid_alive(journal.pid)


def job_events(
    ensemble: Path, job_id: str, stop: threading.Event, poll: float = POLL
) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """(event, data) pairs for one job until it has ended (or gone); (``""``, None) is a
    keepalive. Ends when ``stop`` is set (the server is shutting down).

    ``summary`` is sent only once the job is all done: recorded, and committed (its process
    no longer holds the ensemble's lock), so the page it makes the browser draw again is
    the recorded job's page, commit and all."""
    path = journal_path(project_root(ensemble), job_id)
    seen: tuple[float, int, float, int] | None = None
    last: dict[str, Any] | None = None
    journal: JournalFile | None = None
    quiet = 0.0
    while not stop.is_set():
        stamp = _stamp(path)
        if stamp != seen:  # read again only when its files changed
            seen = stamp
            journal = find_journal(ensemble, job_id)
            if journal is None:
                yield "summary", summary(ensemble, job_id) or {
                    "changeId": job_id, "status": "unknown", "summary": "no journal for this job"}
                return
            now = progress(journal)
            if now != last:
                last, quiet = now, 0.0
                yield "progress", now
        if journal is not None:
            ended = _ended(ensemble, journal)
            if ended is not None:
                yield "summary", ended
                return
        quiet += poll
        if quiet >= KEEPALIVE:
            quiet = 0.0
            yield "", None
        stop.wait(poll)


def _ended(ensemble: Path, journal: JournalFile) -> dict[str, Any] | None:
    """The job's summary once it is all done (recorded and committed, or nothing to
    record), or its process died; None while it is still at work."""
    job_id = journal.change_id
    if alive(journal) and (journal.state in RUNNING
                           or _holds_lock(ensemble, job_id)):
        return None
    recorded = summary(ensemble, job_id)
    if recorded is not None:
        return recorded
    if journal.recorded or journal.state not in RUNNING:
        return {"changeId": job_id, "status": journal.state, "summary": ""}
    return {"changeId": job_id, "status": "interrupted",
            "summary": "the job's process died before the job was recorded: finish it with: "
                       + resume_command(journal)}


def _holds_lock(ensemble: Path, job_id: str) -> bool:
    """The job's process still holds the ensemble's lock: it is writing or committing."""
    info = lock.read_lock(lock.lock_path(ensemble_paths(ensemble)[0]))
    return info is not None and info.change_id == job_id and info.alive


def running_journals(ensemble: Path) -> list[JournalFile]:
    """Journals of the jobs running now (started, process alive), newest first; only the
    newest journals are read, since a running job's is always among them."""

    root = project_root(ensemble)
    found: list[JournalFile] = []
    for path in sorted((root / JOBS_DIR).glob(f"{PREFIX}*.yaml"))[-RECENT:]:
        try:
            journal = read_journal(path)
        except (OSError, ValueError):
            continue
        if (journal.state in RUNNING and not journal.recorded
                and changeid.is_changeid(journal.change_id) and alive(journal)):
            found.append(journal)
    return list(reversed(found))


def running(ensemble: Path) -> list[dict[str, Any]]:
    """The progress of each job running now, newest first."""
    return [progress(journal) for journal in running_journals(ensemble)]


def jobs_log_stamp(ensemble: Path) -> list[float]:
    """jobs.tsv's modification time and size: a page drawn at one stamp reloads when the
    project's stream reports another (a job was recorded since)."""
    _, jobs_tsv = ensemble_paths(ensemble)
    return list(_stamp(jobs_tsv)[:2])


def project_events(
    ensemble: Path, stop: threading.Event, poll: float = POLL
) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """``jobs`` whenever the running jobs or the last recorded job change (the overview
    and history reload then); keepalives between."""
    _, jobs_tsv = ensemble_paths(ensemble)
    jobs_dir = project_root(ensemble) / "jobs"
    seen: tuple[Any, ...] | None = None
    last: dict[str, Any] | None = None
    quiet = 0.0
    while not stop.is_set():
        stamp = (_stamp(jobs_tsv), _dir_stamp(jobs_dir))
        if stamp != seen:
            seen = stamp
            now = {"running": [{k: j[k] for k in ("changeId", "workflow", "done", "total")}
                               for j in running(ensemble)],
                   "jobsLog": list(stamp[0][:2])}  # what jobs_log_stamp gives a page
            if now != last:
                last, quiet = now, 0.0
                yield "jobs", now
        quiet += poll
        if quiet >= KEEPALIVE:
            quiet = 0.0
            yield "", None
        stop.wait(poll)


def _dir_stamp(directory: Path) -> tuple[Any, ...]:
    """The newest journals' stamps: a new job, or a task moving in a running one."""

    try:
        newest = sorted(directory.glob(f"{PREFIX}*.yaml"))[-RECENT:]
    except OSError:
        return ()
    return tuple(_stamp(p) for p in newest)
