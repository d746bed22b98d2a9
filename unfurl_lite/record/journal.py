"""The in-progress job file: what a job has done so far, kept current at every task
transition, so a job killed at any instant leaves an exact record for ``resume``.

``jobs/journal<time>-<id>.yaml``, beside the job's record, holds what the records do not:
the workflow and options to plan again (against the instance status the job started
from, so tasks keep their numbers), every task's state, and the instances' status as of
the last transition; until the job is recorded it is the truth, not the ensemble.
It is written whole (atomically) twice: when the job starts (each task still to run as
its number, target, operation and state), and once the job is recorded (the copy git
keeps, redacted with every secret the job came to know): the first with its events
inlined (journal_format.write_final) when they hold every task's record and knew every
secret, else each task's record its last event carried (made again only if the task or
the secrets changed since). Between the two each transition appends a line to its
``.events`` log, the task's record and the instances it touched (a task the local
executor runs is two lines; the job's end one more), written before anything outside the
process depends on it (a start before its operation starts, an outcome with the next
start or before the job waits): killing the process loses nothing, and each line
reaches the disk within 0.1 s (:class:`journal_format.EventLog`). The local executor's
spawning thread writes them, just before it starts a command (``before_start``), so the
job's own thread writes none while commands keep starting.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.expressions.context import spec_secrets
from unfurl_lite.expressions.digest import spec_digest
from unfurl_lite.load import yamlio
from unfurl_lite.load.builder import build_instance
from unfurl_lite.load.digestkey import key_provider
from unfurl_lite.model import changeid
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, Status
from unfurl_lite.model.narrow import cast, is_list, is_map
from unfurl_lite.record import journal_format, records
from unfurl_lite.record.journal_tasks import (
    LEAVING,
    SAME_INPUTS,
    changed_fields,
    event_body,
    fingerprint,
    take_digest,
    task_head,
    task_progress,
    task_record,
    updated_record,
)
from unfurl_lite.run.observer import JobState, Observer, TaskState
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.run.options import JobOptions
from unfurl_lite.run.outcome import JobResult, TaskRun
from unfurl_lite.security import digested
from unfurl_lite.security.redaction import MIN_SECRET_LENGTH, variants
from unfurl_lite.security.taint import REDACTED, Sensitive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.documents import InstanceRecord

log = logging.getLogger(__name__)
PREFIX = "journal"
OLD_JOURNAL_BYTES = 4 * 1024 * 1024  # a journal of the old, block-YAML kind is no larger
SYNC_INTERVAL = 0.1  # seconds between forced writes of the events to disk
VERSION = 1


def journal_path(root: Path, job_id: str) -> Path:
    label = changeid.job_time_label(changeid.parse(job_id))
    return root / records.JOBS_DIR / f"{PREFIX}{label}-{job_id[:8]}.yaml"


def snapshot_instances(instances: dict[str, Instance], secrets: set[str],
                       copy: bool = True) -> dict[str, Any]:
    """The instances' records as plain data. ``copy=False``, for records encoded at once:
    what is plain already (an instance's own fields, plain attributes) is not copied again,
    only checked: its JSON is what the copy's would be."""
    if copy:
        return {name: yamlio.to_plain(records.instance_record(i, None, None, secrets))
                for name, i in list(instances.items())}
    out: dict[str, Any] = {}
    for name, instance in list(instances.items()):
        record = records.instance_record(instance, None, None, secrets)
        out[name] = record if _as_plain_items(record) else yamlio.to_plain(record)
    return out


def _as_plain_items(mapping: dict[Any, Any]) -> bool:
    for key, value in mapping.items():  # (a loop: a generator in all() costs 3x, per event)
        if type(key) is not str:
            return False
        kind = type(value)
        if kind is str or kind is int or kind is bool or kind is float or value is None:
            continue
        if not (_as_plain_items(value) if kind is dict else kind is list and _as_plain(value)):
            return False
    return True


def _as_plain(value: Any) -> bool:
    """Plain data of exact types, text keys: what ``to_plain`` would copy unchanged."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return True
    if kind is dict:
        return _as_plain_items(value)
    if kind is list:
        return all(_as_plain(item) for item in value)
    return False


def restore_instances(data: dict[str, Any]) -> dict[str, Instance]:
    return {name: build_instance(name, cast("InstanceRecord", dict(record)))
            for name, record in (data or {}).items()}


def _plain_options(options: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(options, default=list))


class Journal(Observer):
    """Observes one job and keeps its journal file current."""

    def __init__(
        self,
        ensemble: Ensemble,
        workflow: str,
        options: JobOptions,
        plan_options: dict[str, Any],
        start_instances: dict[str, Instance] | None = None,
        resumes: str | None = None,
        on_job_id: Any = None,
        executor: dict[str, str] | None = None,
        secret_digests: list[str] | None = None,
        starts_on_submit: bool = False,
    ) -> None:
        """The head of a job's journal, what a resume needs: workflow, plan and job options,
        executor, the instances as they stood and the spec's digest; the file is written
        with the job's first event (a job that runs nothing leaves no journal)."""
        self.root = ensemble.project_root
        self.key = key_provider(self.root)  # digests taken while the inputs are whole
        self.options = options
        self.secrets: set[str] = spec_secrets(ensemble.topology)
        self.data: dict[str, Any] = {
            "journal": VERSION,
            "changeId": None,
            "previousId": resumes or records.previous_job_id(ensemble),
            "resumes": resumes,
            "workflow": workflow,
            "planOptions": _plain_options(plan_options),
            "jobOptions": {
                "retries": options.retries,
                "jobs": options.jobs,
                "commit": options.commit,
                "jobexitcode": options.jobexitcode,
                "envPassthrough": options.env_passthrough,
                "recorded": _plain_options(options.recorded),
            },
            "pid": os.getpid(),
            # where its operations run, so that resume uses the same (never a password)
            "executor": dict(executor or {"executor": "local"}),
            "state": str(JobState.started),
            "recorded": False,
            "ensemble": ensemble.path.name,
            "specDigest": spec_digest(ensemble.spec),
            "startInstances": snapshot_instances(
                start_instances if start_instances is not None else ensemble.instances,
                self.secrets,
            ),
        }
        self.path: Path | None = None
        self.instances: dict[str, Instance] = {}
        self.runs: list[TaskRun] = []
        self.lock = threading.Lock()
        self.on_job_id = on_job_id
        self.known: set[str] = set()  # instances whose record the file already holds
        self.seq = 0  # events appended so far
        #: task states written as events: "sending" is followed by "sent" before anything
        #: leaves the job, and "sent" by "started" when the executor starts it at once
        self.skipped = (TaskState.sending, TaskState.sent) if starts_on_submit \
            else (TaskState.sending,)
        #: the state a task is in as it is submitted: its event is held for the operation's
        #: start to write (the executor's before_start, or the job just before it submits)
        self.submitted = TaskState.started if starts_on_submit else TaskState.sent
        self.whole: set[int] = set()  # tasks whose full record this attempt is in the events
        #: each task's last full record, with what it was made from (see :meth:`_record`)
        self.made: dict[int, tuple[dict[str, Any], tuple[Any, ...], int]] = {}
        #: digests of tasks read the same way with the same plain inputs (see take_digest)
        self.digests: dict[Any, tuple[Any, tuple[str, str]]] = {}
        #: each task's full record as the events now hold it (what a later event of the
        #: same attempt need only say the changes to); emptied when the file is rewritten
        self.written: dict[int, dict[str, Any]] = {}
        self.events: journal_format.EventLog | None = None
        # what a resume needs to redact what this job derived (the job it resumes too)
        self.data[journal_format.SECRET_DIGESTS] = list(secret_digests or [])
        self.digested: set[str] = set()
        self.secrets_seen = 0  # how many secrets the last look found
        self.first_secrets = -1  # how many the first write was redacted with

    # -- Observer hooks

    def secrets_known(self, secrets: set[str]) -> None:
        """Share the job's live set: every event is redacted with what is known when it
        is written, which includes the inputs of the task it reports."""
        with self.lock:
            secrets.update(self.secrets)
            self.secrets = secrets

    def job_started(self, job_id: str, instances: dict[str, Instance], runs: list[TaskRun]) -> None:
        self.data["changeId"] = job_id
        self.path = journal_path(self.root, job_id)
        journal_format.private_directory(self.path.parent)
        self.instances, self.runs = instances, runs
        if self.on_job_id is not None:
            self.on_job_id(job_id)
        self.write()

    def task_changed(self, run: TaskRun) -> None:
        """One event, written before the transition takes effect: the task's full record
        the first time this attempt (what resume needs of a task killed in flight), then
        the fields that changed, with the instances it touched (as it is sent, the node
        state its start gave its instance: nothing else of an instance changes then)."""
        if self.path is None or run.state in self.skipped:
            return
        with self.lock:
            task = run.task
            instances = self.instances
            leaving = run.state in LEAVING
            # the instances it touched: its own (not as it is sent), those its result made,
            # and any created since the last write
            names = [] if leaving else [n for n in (task.target, task.source, task.peer)
                                        if n and n in instances]
            if run.result is not None and run.result.resources:
                names += [n for r in run.result.resources
                          if (n := str(r.get("name") or "")) and n in instances]
            if len(self.known) < len(instances):
                names += [n for n in list(instances) if n not in self.known]
            if len(names) > 1:
                names = list(dict.fromkeys(names))
            if names:
                self.known.update(names)
            in_events = task.number in self.whole
            full = (run.result is not None or not in_events
                    or run.state not in (TaskState.sent, TaskState.started))
            if run.state == TaskState.rescheduled:
                self.whole.discard(task.number)  # the next attempt starts with a full record
            elif full:
                self.whole.add(task.number)
            if full:
                base = self.made.get(task.number)
                record, changed = self._made(run)
                last = self.written.get(task.number) if in_events else None
                self.written[task.number] = record
                body = record if last is None \
                    else event_body(last, record, changed) if changed is not None \
                    and base is not None and base[0] is last \
                    else changed_fields(last, record)
            else:
                body = task_progress(run)
            event: dict[str, Any] = {"task": body}
            if names or not leaving:
                event["instances"] = snapshot_instances(
                    {n: instances[n] for n in names}, self.secrets, copy=False)
            target = instances.get(task.target) if leaving else None
            if target is not None and task.target not in names:
                # a task about to run changed its instance's node state only (creating):
                # that, not the instance's whole record again (journal_format.fold)
                event[journal_format.STATES] = {
                    task.target: str(target.state) if target.state else None}
            self._append_locked(event, hold=True, covered=run.state == self.submitted)

    def job_changed(self, state: JobState) -> None:
        self.data["state"] = str(state)
        self._append({"state": str(state)})

    def _append(self, event: dict[str, Any]) -> None:
        if self.path is None:
            return
        with self.lock:
            self._append_locked(event)

    def _record(self, run: TaskRun) -> dict[str, Any]:
        return self._made(run)[0]

    def _made(self, run: TaskRun) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The task's full record, and the fields made again when it was made from the last
        one (None: made whole, or the last one as it is). The last one made, while neither
        the task nor the secrets it is redacted with changed since (secrets only accumulate,
        so their count tells); with only some fields changed (an outcome), it with those
        made again; a job's final rewrite then reuses what the tasks' last events carried
        instead of redacting every task again."""
        made = self.made.get(run.task.number)
        if run.inputs and run.digest is None and self.key is not None:
            # taken first, as the record would take it: then part of what it is made from
            take_digest(run, self.key, self.digests)
        now = fingerprint(run)
        inputs = None
        if made is not None and made[2] == len(self.secrets):
            if made[1] == now:
                return made[0], None
            updated = updated_record(run, self.secrets, made[0], made[1], now)
            if updated is not None:
                self.made[run.task.number] = (updated[0], now, len(self.secrets))
                return updated
            if all(made[1][i] == now[i] for i in SAME_INPUTS):  # redacted once an attempt
                inputs = made[0]["inputs"]
        record = task_record(run, self.secrets, self.key, inputs=inputs)
        self.made[run.task.number] = (record, now, len(self.secrets))
        return record, None

    def _new_digests(self) -> list[str]:
        """Digests of the secrets learnt since the last look (secrets only accumulate)."""
        if len(self.secrets) == self.secrets_seen:
            return []
        known = list(self.secrets)
        self.secrets_seen = len(known)
        fresh = [s for s in known if s not in self.digested and len(s) >= MIN_SECRET_LENGTH]
        self.digested.update(fresh)
        key = self.key() if fresh else None
        if key is None:  # outside git there is no key: nothing of them is kept
            return []
        found = digested.entries(key, {f for s in fresh for f in variants(s)})
        self.data[journal_format.SECRET_DIGESTS].extend(found)
        return found

    def _append_locked(self, event: dict[str, Any], hold: bool = False,
                       covered: bool = False) -> None:
        assert self.path is not None
        found = self._new_digests()
        if found:
            event = {**event, journal_format.SECRET_DIGESTS: found}
        self.seq += 1
        if self.events is None:
            self.events = journal_format.EventLog(self.path, SYNC_INTERVAL)
        self.events.append(event, self.seq, hold=hold, covered=covered)

    def flush(self) -> None:
        """The events held back are written (on any thread: an operation is about to
        start, or the job ends)."""
        events = self.events
        if events is not None:
            events.flush()

    def waiting(self) -> None:
        """The job is about to wait: the events held back are written, unless the last is
        the start of an operation just submitted, whose start writes them all."""
        events = self.events
        if events is not None:
            events.flush(covered=False)

    # -- the end of the job

    def finished(self, result: JobResult) -> None:
        """An event: the journal is rewritten once the records are (mark_recorded)."""
        self.data["state"] = str(result.state)
        self.data["status"] = str(result.status)
        with self.lock:
            self.secrets = result.secrets
        self._append({"state": self.data["state"], "status": self.data["status"]})

    def mark_recorded(self, writes: yamlio.Writes | None = None) -> None:
        """The job's one rewrite of the whole journal, what git keeps (with ``writes``)."""
        self.data["recorded"] = True
        self.write(writes)

    def discard(self) -> None:
        """Nothing ran: nothing to resume, no journal left behind."""
        if self.path is None:
            return
        with self.lock:
            if self.events is not None:
                self.events.close()
                self.events = None
            self.path.unlink(missing_ok=True)
            journal_format.events_path(self.path).unlink(missing_ok=True)

    def write(self, writes: yamlio.Writes | None = None) -> None:
        """The whole journal, atomically: when the job starts and once it is recorded."""
        if self.path is None:
            return
        with self.lock:
            if self.events is not None:
                self.events.close()
                self.events = None
            if (self.data["recorded"] and self.first_secrets == len(self.secrets)
                    and set(self.written) == {r.task.number for r in self.runs}
                    and journal_format.write_final(self.path, self.data, self.seq, writes)):
                return  # its first write and every event, as they were written
            data = dict(self.data)
            data["instances"] = snapshot_instances(self.instances, self.secrets, copy=False)
            start = not data["recorded"] and self.seq == 0
            data["tasks"] = [task_head(r) if start and r.state == TaskState.pending
                             else self._record(r) for r in list(self.runs)]
            self._new_digests()
            data[journal_format.SECRET_DIGESTS] = list(self.data[journal_format.SECRET_DIGESTS])
            self.known = set(data["instances"])
            self.written.clear()  # the events that follow start from the whole file
            self.first_secrets = len(self.secrets) if start else -1
            journal_format.write_journal(self.path, data, self.seq, writes)


# ----------------------------------------------------------------------- reading back


@dataclass
class JournalFile:
    """A journal read back from disk: its path and its events merged."""
    path: Path
    data: dict[str, Any]

    @property
    def change_id(self) -> str:
        return str(self.data.get("changeId") or "")

    @property
    def state(self) -> str:
        return str(self.data.get("state") or "")

    @property
    def pid(self) -> int:
        return int(self.data.get("pid") or -1)

    @property
    def recorded(self) -> bool:
        return bool(self.data.get("recorded"))

    @property
    def tasks(self) -> list[dict[str, Any]]:
        return list(self.data.get("tasks") or [])

    @property
    def secret_digests(self) -> list[str]:
        found = self.data.get(journal_format.SECRET_DIGESTS)
        return [str(d) for d in found] if is_list(found) else []


def read_journal(path: Path) -> JournalFile:
    data = journal_format.read_journal(path)
    if data is None:  # written whole as YAML by an older version (a small file)
        if path.stat().st_size > OLD_JOURNAL_BYTES:
            raise ValueError("not a journal")
        data = yamlio.to_plain(yamlio.load_file(path)) or {}
    return JournalFile(path, data)


_warned: set[Path] = set()


def list_journals(root: Path, damaged: list[Path] | None = None) -> list[JournalFile]:
    """Every journal under jobs/, oldest first (changeIds sort by time). A journal that
    cannot be read (random bytes, not a journal) is skipped with a warning, once per
    process, and listed in ``damaged``: readers go on, and whoever guards a killed job's
    lock can tell its journal was there."""
    found: list[JournalFile] = []
    for path in sorted((root / records.JOBS_DIR).glob(f"{PREFIX}*.yaml")):
        try:
            journal = read_journal(path)
            if not is_map(journal.data) or not is_list(journal.tasks):
                raise ValueError("not a journal")
        except Exception as exc:  # damaged in any way: reported, never a traceback
            if damaged is not None:
                damaged.append(path)
            if path not in _warned:
                _warned.add(path)
                why = exc.message if isinstance(exc, UnfurlLiteError) else \
                    "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else \
                    str(exc) if type(exc) is ValueError else f"{type(exc).__name__}: {exc}"
                log.warning("warning: %s: damaged journal skipped: %s", path, why)
            continue
        if journal.change_id:
            found.append(journal)
    return sorted(found, key=lambda j: j.change_id)


def _unredact(value: Any) -> Any:
    if value == REDACTED:
        return Sensitive(REDACTED)
    if is_map(value):
        return {k: _unredact(v) for k, v in value.items()}
    if is_list(value):
        return [_unredact(v) for v in value]
    return value


def _datetime(text: Any) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def restore_run(run: TaskRun, record: dict[str, Any]) -> TaskRun:
    """Fill a fresh TaskRun (of the re-planned task) from its journal record."""
    run.state = TaskState(record["state"])
    run.change_id = record.get("changeId")
    run.previous_id = record.get("previousId")
    run.attempts = int(record.get("attempts") or 0)
    status = str(record.get("status"))
    run.status = Status(status) if status in Status.__members__ else None
    run.changed = bool(record.get("changed"))
    prior = str(record.get("priorState"))
    run.prior_state = NodeState(prior) if prior in NodeState.__members__ else None
    run.started_at = _datetime(record.get("startedAt"))
    run.ended_at = _datetime(record.get("endedAt"))
    run.message = record.get("message")
    run.carried = bool(record.get("carried"))
    run.interrupted = record.get("interrupted")
    run.retries = list(record.get("retries") or [])
    run.worker = record.get("worker")
    run.inputs = _unredact(record.get("inputs") or {})
    digest = record.get("digest")
    if is_list(digest) and len(digest) == 2:
        run.digest = (str(digest[0]), str(digest[1]))
    result = record.get("result")
    if result:
        run.result = OperationResult(
            success=bool(result.get("success")),
            modified=result.get("modified"),
            error=result.get("error"),
            outputs=dict(result.get("outputs") or {}),
            attributes=dict(result.get("attributes") or {}),
            ran=result.get("ran") is not False,
        )
    return run
