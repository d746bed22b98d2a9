"""One job as its page shows it: every task's real outcome and times, and the job's head.

A recorded job's page joins two records of the same tasks: the job file (what Unfurl
records: reason, status, output, redacted) and the job's journal (what ran when: each
task's start and end, and the moment a blocked task was blocked). They are joined task by
task in plan order, so a task that never ran (blocked, cancelled, not run: it has no
changeId) still finds its journal entry. A task that did not run is shown as what
happened to it, never as its instance's status: a blocked task is ``blocked`` with what
blocked it, not its instance's ``pending`` or ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from unfurl_lite.model import changeid
from unfurl_lite.model.builtin_workflows import BY_NAME, PARAMETERS
from unfurl_lite.model.narrow import is_map, new_dict, new_list
from unfurl_lite.record import history as hist
from unfurl_lite.record.journal import JournalFile
from unfurl_lite.run.observer import execution_status
from unfurl_lite.run.outcome import OUTCOMES, partition, partition_text, task_outcome
from unfurl_lite.view.dashboard.heads import record_time
from unfurl_lite.view.dashboard.live import shown_tasks
from unfurl_lite.view.dashboard.timeline import Bar

#: why a task that never started did not, by its outcome
NOT_STARTED = {
    "cancelled": "the job was cancelled before this task started",
    "not run": "the job ended before this task started",
    "interrupted": "running when the job's process died: its outcome is unknown",
}
DIED_FIRST = "the job's process died before this task started"
#: states of a task that has not ended (a live job's)
UNSETTLED = ("pending", "sending", "sent", "started", "rescheduled")
#: outcomes that count as finished in the progress bar: the task ran to its end (or had
#: nothing to do); blocked, cancelled and not-run tasks never did
FINISHED = ("ok", "failed", "skipped")


@dataclass
class TaskView:
    """One task of a job as its page lists it."""

    change_id: str
    target: str
    operation: str
    reason: str
    outcome: str  # OUTCOMES, "interrupted", or a live state (pending, started...)
    state: str  # the task's state as recorded (succeeded, blocked, pending...)
    status: str  # its instance's status after it (Unfurl's task status)
    why: str  # what blocked or skipped it, its error, or why it never started
    attempts: int | None
    worker: str
    duration: float | None
    output: str
    started: datetime | None = None
    ended: datetime | None = None  # for a task that never started: when it was settled
    number: int | None = None  # its number in the plan (a running job's rows are keyed so)


@dataclass
class JobPage:
    """A job's page on the dashboard: its tasks joined with its journal."""
    change_id: str
    workflow: str
    status: str  # the job's shown status (ok, error, cancelled, interrupted, started...)
    summary: str  # Unfurl's summary line, as recorded
    commit: str | None
    time: str  # when it started (ISO)
    running: bool
    tasks: list[TaskView] = field(default_factory=new_list)
    bars: list[Bar] = field(default_factory=new_list)
    measured: bool = True  # task times come from the job's journal
    has_journal: bool = False
    duration: float | None = None  # seconds, start to end of the job
    author: str = ""
    command: str = ""  # the equivalent command line
    options: dict[str, Any] = field(default_factory=new_dict)
    notes: list[str] = field(default_factory=new_list)  # the plan's: what it left alone, and why
    resumes: str = ""  # the job this one resumed
    resumed_by: str = ""  # the job that resumed (finished) this one
    resume_command: str = ""  # how to finish it, when nothing has yet
    execution: str = ""  # Cloudify's execution status (pending, started, terminated...)

    @property
    def partition(self) -> dict[str, int]:
        return partition(t.outcome if t.outcome in OUTCOMES else
                         "failed" if t.outcome == "interrupted" else "not run"
                         for t in self.tasks)

    @property
    def partition_text(self) -> str:
        return partition_text(self.partition)

    @property
    def finished(self) -> int:
        return sum(1 for t in self.tasks if t.outcome in FINISHED)

    def segments(self) -> list[tuple[str, int]]:
        """(outcome, count) of the finished tasks, for the progress bar's coloured parts."""
        counts = {o: sum(1 for t in self.tasks if t.outcome == o) for o in FINISHED}
        return [(o, counts[o]) for o in FINISHED if counts[o]]


# ------------------------------------------------------------------ recorded jobs


def recorded_page(root: Path, shown: Any, journal: JournalFile | None,
                  resumed_by: str = "") -> JobPage:
    """The page of a job in the history: ``shown`` is :func:`api.show`'s (redacted) job."""
    job = shown.job
    record: Mapping[str, Any] = shown.record or {}
    job_state = _recorded_job_state(job, journal)
    journal_tasks = _paired(shown.tasks, journal.tasks if journal else [])
    tasks = [_recorded_task(entry, paired, job_state)
             for entry, paired in zip(shown.tasks, journal_tasks, strict=True)]
    started = record_time(str(record.get("startTime") or "")) or changeid.decode(job.change_id)
    ended = record_time(str(record.get("endTime") or ""))
    recorded_options: object = record.get("options")
    options: dict[str, Any] = dict(recorded_options) if is_map(recorded_options) else {}
    page = JobPage(
        change_id=job.change_id,
        workflow=job.workflow,
        status="interrupted" if job_state == "interrupted" else job.shown_status,
        summary=job.summary,
        commit=job.commit.hexsha if job.commit else None,
        time=hist.iso(started),
        running=False,
        tasks=tasks,
        measured=journal is not None,
        has_journal=journal is not None,
        # a killed job's record ends when resume recorded it: its length is unknown
        duration=(ended - started).total_seconds() if ended and job_state != "interrupted"
        else None,
        author=job.commit.author if job.commit else "",
        options=options,
        resumed_by=resumed_by,
        execution=job.execution,
    )
    if journal is not None:
        _from_journal(page, journal)
    else:
        page.command = equivalent_command(job.workflow, {}, options)
    page.bars = bars_of(tasks)
    return page


def _recorded_job_state(job: Any, journal: JournalFile | None) -> str:
    """cancelled, interrupted (killed, then recorded by resume), or what jobs.tsv says."""
    if journal is not None and journal.data.get("killed"):
        return "interrupted"
    return job.state or (journal.state if journal is not None else "") or job.status


def _paired(entries: list[dict[str, Any]],
            journal_tasks: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """Each job-file entry's journal task: both lists are in plan order (the journal has
    every task, the job file the counted ones), so each entry takes the next journal task
    with its operation (and its changeId, when both have one)."""
    found: list[dict[str, Any] | None] = []
    cursor = 0
    for entry in entries:
        operation = _operation(entry)
        wanted = str(entry.get("changeId") or "")
        for index in range(cursor, len(journal_tasks)):
            candidate = journal_tasks[index]
            same_id = not wanted or not candidate.get("changeId") or \
                str(candidate.get("changeId")) == wanted
            if same_id and str(candidate.get("operation") or "") == operation:
                found.append(candidate)
                cursor = index + 1
                break
        else:
            found.append(None)
    return found


def _operation(entry: dict[str, Any]) -> str:
    implementation: object = entry.get("implementation")
    operation = str(implementation.get("operation") or "") if is_map(implementation) else ""
    if entry.get("interface") and operation:
        operation = f"{entry['interface']}.{operation}"
    return operation


def _recorded_task(entry: dict[str, Any], journal_task: dict[str, Any] | None,
                   job_state: str) -> TaskView:
    """A recorded task as the job page shows it: its outcome (from its state, or an Unfurl
    record's status), duration and output."""
    result: dict[str, Any] = entry["result"] if isinstance(entry.get("result"), dict) else {}
    duration = result.get("duration") if isinstance(result.get("duration"), int | float) else None
    output = "\n".join(f"{key}: {value}" for key, value in result.items()
                       if key != "duration" and value not in ("", None))
    state = str(entry.get("state") or (journal_task or {}).get("state") or "")
    outcome = task_outcome(state, "cancelled" if job_state == "cancelled" else job_state)
    if not state:  # an Unfurl record: no task state, only the instance's status
        outcome = _outcome_of_status(entry)
    elif _never_started(journal_task):
        outcome = "not run"
    attempts = entry.get("attempts")
    view = TaskView(
        change_id=str(entry.get("changeId") or ""),
        target=str(entry.get("target") or "").removeprefix("::"),
        operation=_operation(entry),
        reason=str(entry.get("reason") or ""),
        outcome=outcome,
        state=state,
        status=str(entry.get("status") or _ready_local(entry)),
        why=str(entry.get("message") or "") or (
            DIED_FIRST if outcome == "not run" and job_state == "interrupted"
            else NOT_STARTED.get(outcome, "")),
        attempts=attempts if isinstance(attempts, int) else None,
        worker=str(entry.get("worker") or ""),
        duration=float(duration) if duration is not None else None,
        output=output,
        number=(journal_task or {}).get("number"),
    )
    if journal_task is not None:
        view.started = _moment(journal_task.get("startedAt"))
        view.ended = _moment(journal_task.get("endedAt"))
        if view.duration is None and view.started and view.ended:
            view.duration = (view.ended - view.started).total_seconds()
    return view


def _never_started(journal_task: dict[str, Any] | None) -> bool:
    """It failed without its operation ever starting (no worker took it): not run."""
    result = (journal_task or {}).get("result")
    return is_map(result) and result.get("ran") is False


def _outcome_of_status(entry: dict[str, Any]) -> str:
    status = str(entry.get("status") or _ready_local(entry))
    return "ok" if status in ("ok", "degraded") else "failed" if status else "not run"


def _ready_local(entry: Mapping[str, Any]) -> str:
    """A record's ``readyState.local`` ("" when it has none)."""
    ready: object = entry.get("readyState")
    return str(ready.get("local") or "") if is_map(ready) else ""


def _from_journal(page: JobPage, journal: JournalFile) -> None:
    """What only the journal knows: the plan's options and notes, the job it resumed."""
    plan_options: dict[str, Any] = journal.data.get("planOptions") or {}
    job_options: dict[str, Any] = journal.data.get("jobOptions") or {}
    page.command = equivalent_command(page.workflow, plan_options, job_options)
    page.options = {**page.options, **{k: v for k, v in plan_options.items()
                                       if v not in (None, False, [], {}, "")}}
    for name in ("jobs", "retries"):
        if job_options.get(name):
            page.options.setdefault(name, job_options[name])
    notes: list[Any] = journal.data.get("planNotes") or []
    page.notes = [f"{n.get('target')}: {n.get('message')}" if is_map(n) else str(n)
                  for n in notes]
    page.resumes = str(journal.data.get("resumes") or "")


# ------------------------------------------------------------------ running or killed jobs


def journal_page(journal: JournalFile, alive: bool, resume_command: str) -> JobPage:
    """A job not (yet) in the history, from its journal: running, or killed before it was
    recorded (then every task that had not ended is shown as such)."""
    tasks = [_journal_task(t, alive) for t in shown_tasks(journal)]
    job_id = journal.change_id
    page = JobPage(
        change_id=job_id,
        workflow=str(journal.data.get("workflow") or ""),
        status=journal.state if alive else "interrupted",
        summary="",
        commit=None,
        time=hist.iso(changeid.decode(job_id)),
        running=alive,
        tasks=tasks,
        has_journal=True,
        resume_command="" if alive else resume_command,
        execution=execution_status(journal.state, str(journal.data.get("status") or "")),
    )
    _from_journal(page, journal)
    page.summary = progress_line(page) if alive else ""  # the partition says it all
    page.bars = bars_of(tasks)
    return page


def _journal_task(task: dict[str, Any], alive: bool) -> TaskView:
    """A task of a running (or killed) job from its journal: what it is doing, or interrupted
    if the job is no longer alive."""
    state = str(task.get("state") or "pending")
    if state in ("sent", "started") and not alive:
        outcome = "interrupted"
    elif state in UNSETTLED:
        outcome = state if alive else "not run"
    else:
        outcome = "not run" if _never_started(task) else task_outcome(state, "")
    result: object = task.get("result")
    outputs: object = result.get("outputs") if is_map(result) else None
    duration = outputs.get("duration") if is_map(outputs) else None
    started, ended = _moment(task.get("startedAt")), _moment(task.get("endedAt"))
    return TaskView(
        change_id=str(task.get("changeId") or ""),
        target=str(task.get("target") or ""),
        operation=str(task.get("operation") or ""),
        reason="",
        outcome=outcome,
        state=state,
        status=str(task.get("status") or ""),
        why=str(task.get("message") or "") or (
            DIED_FIRST if outcome == "not run" else NOT_STARTED.get(outcome, "")),
        attempts=task.get("attempts") if isinstance(task.get("attempts"), int) else None,
        worker=str(task.get("worker") or ""),
        duration=float(duration) if isinstance(duration, int | float) else
        (ended - started).total_seconds() if started and ended else None,
        output="",
        started=started,
        ended=ended,
        number=task.get("number"),
    )


def progress_line(page: JobPage) -> str:
    """``3 of 5 tasks done, 1 running`` for a running job; the partition once it ended."""
    if not page.running:
        return page.partition_text
    done = sum(1 for t in page.tasks if t.outcome not in UNSETTLED)
    running = sum(1 for t in page.tasks if t.outcome in ("sent", "started"))
    return f"{done} of {len(page.tasks)} tasks done" + (f", {running} running" if running else "")


# ------------------------------------------------------------------ shared


def bars_of(tasks: list[TaskView]) -> list[Bar]:
    """A bar for each task that started; a marker for each that was settled without
    starting (blocked, skipped), at the moment it was; a row for the rest."""
    return [
        Bar(key=t.change_id or f"#{t.number}", label=f"{t.target} {t.operation}",
            status=t.outcome, start=t.started, end=t.ended, note=t.why if t.started is None
            else "")
        for t in tasks
    ]


def equivalent_command(workflow: str, plan_options: dict[str, Any],
                       job_options: dict[str, Any]) -> str:
    """The command line that runs this job again, spelled as the CLI takes it: Unfurl's
    workflows with their flags, Cloudify's parameters as ``-p name=value``, a custom TOSCA
    workflow through ``run --workflow``."""

    declared = BY_NAME.get(workflow)
    custom = bool(workflow) and declared is None
    words = ["unfurl", "run", "--workflow", workflow] if custom else \
        ["unfurl", workflow.replace("_", "-") if workflow else "?"]
    given = {**{"instance_names": job_options.get("instances")}, **plan_options}
    cloudify = declared is not None and declared.origin == "cloudify"
    for name, value in given.items():
        parameter = PARAMETERS.get(name)
        default = parameter.default if parameter else None
        if value is None or value == default or value in ([], {}, "", ()):
            continue
        if name == "instance_names":
            words += [w for item in value for w in ("--instance", str(item))]
        elif parameter is not None and parameter.kind == "argv":
            words += ["--", *map(str, value)]
        elif not cloudify:
            flag = parameter.flag if parameter and parameter.flag else \
                f"--{name.replace('_', '-')}"
            words += [flag] if value is True else [flag, _text(value)]
        else:
            words += ["-p", f"{name}={_text(value)}"]
    for parameter in PARAMETERS.values():  # recorded as lastJob.options only
        recorded = parameter.recorded_as
        if recorded and parameter.flag and parameter.kind == "flag" and \
                job_options.get(recorded) and parameter.flag not in words:
            words.append(parameter.flag)
    if job_options.get("jobs"):
        words += ["--jobs", str(job_options["jobs"])]
    if job_options.get("retries"):
        words += ["--retries", str(job_options["retries"])]
    if job_options.get("commit") is False:
        words.append("--no-commit")
    if job_options.get("dryrun"):
        words.append("--dryrun")
    if job_options.get("jobexitcode") not in (None, "error"):
        words += ["--jobexitcode", str(job_options["jobexitcode"])]
    return " ".join(_quoted(w) for w in words)


def _text(value: Any) -> str:
    """A parameter's value as ``-p`` reads it (YAML: JSON is YAML)."""

    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"),
                                                          default=str)


def _quoted(word: str) -> str:
    import shlex  # start-up: keeps shlex (1 module) off jobpage's import

    return shlex.quote(word)


def _moment(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None
