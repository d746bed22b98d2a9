"""A deployment's history from what is committed: jobs.tsv, the job files, and git.

Nothing here reads a local cache, so a fresh clone has the whole history. jobs.tsv is read
once, as a stream; each job's workflow comes from the head of its ``jobs/`` file (Unfurl's
job line has no workflow field); one ``git log`` over the job files (through the git layer)
finds the commit that recorded each job.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unfurl_lite.errors import ChangeIdError, HistoryError
from unfurl_lite.load import gitobjects, gitrepo
from unfurl_lite.load.gitrepo import Commit
from unfurl_lite.load.jobslog import log_records
from unfurl_lite.load.yamlio import MAX_FILE_BYTES, parse_plain
from unfurl_lite.model import changeid
from unfurl_lite.model import status_layout as layout
from unfurl_lite.model.narrow import is_list, is_map, new_list
from unfurl_lite.record import records
from unfurl_lite.record.interrupted import killed, resume_command
from unfurl_lite.record.liveness import pid_alive
from unfurl_lite.run.observer import RUNNING, execution_status

#: states of a job that has not ended: waiting for the lock, starting, running, cancelling
NOT_ENDED = ("pending", "queued", *sorted(RUNNING))


@dataclass
class TaskLine:
    """One task line of jobs.tsv."""

    change_id: str
    status: str
    target: str  # instance name, without Unfurl's leading ``::``
    operation: str
    digest_keys: str
    digest_value: str
    summary: str
    previous_id: str = ""


@dataclass
class JobRecord:
    """One job: its jobs.tsv line and task lines, joined with its job file and commit."""

    change_id: str
    status: str
    start_time: str
    summary: str
    spec_digest: str = ""
    start_commit: str = ""
    previous_id: str = ""
    changelog: str = ""
    tasks: list[TaskLine] = field(default_factory=new_list)
    workflow: str = ""
    job_file: Path | None = None
    commit: Commit | None = None
    #: "cancelled" for a cancelled job; for one not ended, its journal's state (started,
    #: cancelling, force_cancelling, kill_cancelling), or pending / queued before it starts
    state: str = ""
    since: datetime | None = None  # when a pending or queued job (no changeId yet) began

    @property
    def shown_status(self) -> str:
        """What a user reads as the job's outcome: a cancelled job is not "ok", one that
        has not ended shows where it is."""
        return self.state if self.state in ("cancelled", *NOT_ENDED) else self.status

    @property
    def execution(self) -> str:
        """Cloudify's execution status: pending, queued, started, cancelling,
        force_cancelling, kill_cancelling, cancelled, terminated or failed."""
        return execution_status(self.state, self.status)

    @property
    def prefix(self) -> str:
        return self.change_id[:8]

    @property
    def time(self) -> datetime:
        if not self.change_id and self.since is not None:
            return self.since
        return changeid.decode(self.change_id)

    @property
    def targets(self) -> set[str]:
        return {t.target for t in self.tasks}

    def as_json(self) -> dict[str, Any]:
        return {
            "changeId": self.change_id or None,
            "time": iso(self.time),
            "workflow": self.workflow or None,
            "state": self.state or None,
            "execution": self.execution,
            "status": self.shown_status,
            "summary": self.summary,
            "commit": self.commit.hexsha if self.commit else None,
            "author": self.commit.author if self.commit else None,
            "committed": self.commit.date if self.commit else None,
            "startCommit": self.start_commit or None,
            "specDigest": self.spec_digest or None,
            "jobFile": str(self.job_file) if self.job_file else None,
            "changelog": self.changelog or None,
            "tasks": [
                {
                    "changeId": t.change_id,
                    "target": t.target,
                    "operation": t.operation,
                    "status": t.status,
                }
                for t in self.tasks
            ],
        }


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ------------------------------------------------------------------------------ jobs.tsv


def _task_line(record: dict[str, str]) -> TaskLine:
    return TaskLine(
        change_id=record["changeId"],
        status=record.get("status", ""),
        target=record.get("target", "").removeprefix("::"),
        operation=record.get("operation", ""),
        digest_keys=record.get("digestKeys", ""),
        digest_value=record.get("digestValue", ""),
        summary=record.get("summary", ""),
        previous_id=record.get("previousId", ""),
    )


def inline_log(ensemble: Path | None) -> tuple[list[Any] | None, dict[str, Any] | None]:
    """The ensemble's inline ``changes:`` log and its lastJob, read without validating the
    spec (the history stays readable when it is broken); (None, None) when it has none."""
    if ensemble is None or not ensemble.exists():
        return None, None
    try:
        text = ensemble.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None, None
    if not re.search(r"^changes:", text, re.MULTILINE):
        return None, None  # the common case, without parsing the file
    from ruamel.yaml import YAML  # start-up: keeps ruamel (35 modules) off history's import

    try:
        doc = YAML(typ="safe").load(text)
    except Exception:  # any damage in an old file: its changes are not listed
        return None, None
    if not is_map(doc) or not isinstance(doc.get("changes"), list):
        return None, None
    last = doc.get("lastJob")
    return doc["changes"], last if is_map(last) else None


def read_jobs(jobs_tsv: Path, ensemble: Path | None = None) -> Iterator[JobRecord]:
    """Jobs in file (= time) order, each with its task lines; one pass over the file.
    Jobs logged inline in the ``ensemble``'s ``changes:`` come first."""
    current: JobRecord | None = None
    for record in log_records(jobs_tsv, *inline_log(ensemble)):
        cid = record["changeId"]
        if not changeid.is_changeid(cid):
            continue
        if cid.endswith("0000"):
            if current is not None:
                yield current
            current = JobRecord(
                change_id=cid,
                status=record.get("status", ""),
                start_time=record.get("startTime", ""),
                summary=record.get("summary", ""),
                spec_digest=record.get("specDigest", ""),
                start_commit=record.get("startCommit", ""),
                previous_id=record.get("previousId", ""),
                changelog=record.get("changelog", ""),
            )
        elif current is not None and cid[:8] == current.prefix:
            current.tasks.append(_task_line(record))
    if current is not None:
        yield current


# ----------------------------------------------------------------------------- job files

_WORKFLOW = re.compile(r"^\s*workflow:\s*['\"]?([\w.-]+)")
_STATE = re.compile(
    r"^\s*state:\s*['\"]?(cancelled|cancelling|force_cancelling|kill_cancelling)\b")


def job_file_of(root: Path, job: JobRecord) -> Path | None:
    """``jobs/job<start>-<prefix>.yaml``, else any job file with the prefix, else the changelog."""
    if job.start_time:
        path = root / records.JOBS_DIR / records.job_file_name(job.start_time[:19], job.prefix)
        if path.exists():
            return path
    found = sorted((root / records.JOBS_DIR).glob(f"job*-{job.prefix}.yaml"))
    if found:
        return found[0]
    if job.changelog and (root / job.changelog).exists():
        return root / job.changelog
    return None


_warned: set[Path] = set()


def _damaged(path: Path, why: str) -> None:
    """A job record that cannot be read is said once per process; readers go on."""
    if path not in _warned:
        _warned.add(path)
        logging.getLogger(__name__).warning("warning: %s: damaged job record: %s", path, why)


def _head_of(path: Path) -> tuple[str, str]:
    """(workflow, state) of the job record's first change; only its head is read."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            _damaged(path, f"larger than {MAX_FILE_BYTES} bytes")
            return "", ""
        return _read_head(path)
    except UnicodeDecodeError as exc:
        _damaged(path, f"not UTF-8 text (byte {exc.start + 1})")
    except OSError as exc:
        _damaged(path, exc.strerror or str(exc))
    return "", ""


def _read_head(path: Path) -> tuple[str, str]:
    entries = 0
    workflow = state = ""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("- "):
                entries += 1
                if entries > 1:
                    break
            if entries != 1:
                continue
            if not workflow and (match := _WORKFLOW.match(line)):
                workflow = match.group(1)
            elif match := _STATE.match(line):
                state = "cancelled"
    return workflow, state


def _complete(job: JobRecord) -> None:
    """A job logged inline has no job line: its summary, status and times come from its
    record in jobs/ (when the log was written here), else from its tasks."""
    if job.summary:
        return
    entries = []
    if job.job_file is not None:
        try:
            entries = load_job_file(job.job_file)
        except HistoryError:
            entries = []
    head = entries[0] if entries and str(entries[0].get("changeId")) == job.change_id else {}
    ready = head.get("readyState")
    job.summary = str(head.get("summary") or f"{len(job.tasks)} tasks")
    if is_map(ready) and (ready.get("effective") or ready.get("local")):
        job.status = str(ready.get("effective") or ready["local"])  # the tasks' aggregate
    job.start_time = job.start_time or str(head.get("startTime") or "")
    job.spec_digest = job.spec_digest or str(head.get("specDigest") or "")
    job.start_commit = job.start_commit or str(head.get("startCommit") or "")


def running_jobs(root: Path) -> list[JobRecord]:
    """Jobs that have not ended, newest first: they reach jobs.tsv only when they end.
    Those waiting for the lock (``queued``), the one holding it that has not started its
    first task (``pending``), and those running (their journal's state: ``started`` or
    being cancelled) whose process is alive. A job whose process was killed before it
    recorded itself stays in its journal's state, as a Cloudify execution whose
    dispatcher died stays ``started``, until ``unfurl resume`` records it."""
    # start-up: keeps record.lock, record.queue (20 modules) off `status` until running_jobs() runs
    from unfurl_lite.record import lock, queue
    from unfurl_lite.record.journal import list_journals

    journals = list_journals(root)
    found: list[JobRecord] = []
    for journal in journals:
        if journal.state not in RUNNING or not changeid.is_changeid(journal.change_id):
            continue
        if pid_alive(journal.pid):
            summary = f"running (pid {journal.pid})"
        elif killed(journal):
            summary = (f"interrupted: its process (pid {journal.pid}) died; "
                       f"finish it with `{resume_command(journal)}`")
        else:
            continue
        found.append(JobRecord(
            change_id=journal.change_id, status="", start_time="", summary=summary,
            workflow=str(journal.data.get("workflow") or ""), state=journal.state,
        ))  # fmt: skip
    holder = lock.holder(root)
    if holder is not None and holder.alive and holder.pid > 0 and not any(
        j.change_id == holder.change_id for j in journals
    ):
        found.append(JobRecord(
            change_id="", status="", start_time="", summary=f"starting (pid {holder.pid})",
            workflow=holder.command, state="pending",
            since=datetime.fromtimestamp(holder.since, UTC),
        ))  # fmt: skip
    found.extend(
        JobRecord(change_id="", status="", start_time="", summary=f"waiting for the lock "
                  f"(pid {w.pid})", workflow=w.command, state="queued", since=w.since)
        for w in queue.list_waiting(root)
    )
    return list(reversed(found))


def _found_by(root: Path, job: JobRecord, instance: str) -> bool:
    """Did one of the job's tasks report ``instance`` (a discover creating it)? Only
    jobs that ran a check or discover can have; a quick text search rules most out."""
    path = job_file_of(root, job)
    if path is None or f"::{instance}" not in path.read_text(encoding="utf-8", errors="replace"):
        return False
    try:
        entries = load_job_file(path)
    except HistoryError:
        return False
    return any(f"::{instance}" in (entry.get("resources") or []) for entry in entries)


def load_job_file(path: Path) -> list[dict[str, Any]]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        data = parse_plain(path.read_text(encoding="utf-8"))
    except Exception as exc:  # a damaged job file is reported, not fatal
        raise HistoryError(f"cannot read {path}: {exc}") from None
    changes = data.get("changes") if is_map(data) else None
    return [c for c in changes or [] if is_map(c)]


# ------------------------------------------------------------------------------------ git


def job_commits(root: Path) -> dict[str, Commit]:
    """job prefix -> the commit that added its job file (one ``git log`` for all jobs)."""
    commits: dict[str, Commit] = {}
    for commit, names in gitrepo.commits_adding(root, records.JOBS_DIR, records.CHANGES_DIR):
        for name in names:
            match = re.search(r"-(A[0-9A-Za-z]{7})\.yaml$", name)
            if match:
                # newest first: keep the oldest commit that added the file
                commits[match.group(1)] = commit
        subject = re.search(r"\bjob (A[0-9A-Za-z]{7})", commit.subject)
        if subject and subject.group(1) not in commits:
            commits[subject.group(1)] = commit
    return commits


# ------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Filters:
    """What `unfurl history` narrows the jobs to."""
    instance: str | None = None
    since: str | None = None  # a changeId or an ISO date/time
    workflow: str | None = None
    limit: int | None = None


def since_key(text: str) -> str:
    """A string that every changeId at or after ``text`` (a changeId or a date) sorts above."""
    if changeid.is_changeid(text):
        return str(changeid.parse(text).job)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise HistoryError(
            f"--since {text!r} is neither a changeId nor a date",
            hint="e.g. --since 2026-11-22, --since '2026-11-22 18:30' or --since A6BMIY9e",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ticks = changeid.ticks_of(moment)
    if ticks < 0:
        return "A"  # before changeIds began: everything
    try:
        return str(changeid.ChangeId(ticks, 0))
    except ChangeIdError:
        return "B"  # past the last encodable year: nothing


def history(
    root: Path, jobs_tsv: Path, filters: Filters = Filters(), with_git: bool = True,
    ensemble: Path | None = None,
) -> list[JobRecord]:
    """Jobs newest first, filtered; only jobs that pass the cheap filters open their files."""
    since = since_key(filters.since) if filters.since else None
    chosen: list[JobRecord] = []
    for job in read_jobs(jobs_tsv, ensemble):
        if since and job.change_id < since:
            continue
        if filters.instance and filters.instance not in job.targets \
                and not _found_by(root, job, filters.instance):
            continue
        chosen.append(job)
    chosen.reverse()
    result: list[JobRecord] = []
    if not filters.instance:
        logged = {j.change_id for j in chosen}
        chosen[:0] = [
            j for j in running_jobs(root)
            if (not since or j.change_id >= since) and j.change_id not in logged
        ]
    for job in chosen:
        if job.state not in NOT_ENDED:
            job.job_file = job_file_of(root, job)
            job.workflow, job.state = _head_of(job.job_file) if job.job_file else ("", "")
            _complete(job)
        if filters.workflow and job.workflow != filters.workflow:
            continue
        result.append(job)
        if filters.limit and len(result) >= filters.limit:
            break
    if with_git and result:
        commits = job_commits(root)
        for job in result:
            job.commit = commits.get(job.prefix)
    return result


def find_job(
    root: Path, jobs_tsv: Path, text: str, ensemble: Path | None = None
) -> tuple[JobRecord, TaskLine | None]:
    """The job a changeId names, and the task line when it names a task."""
    try:
        wanted = changeid.parse(text)
    except ChangeIdError as exc:
        raise HistoryError(str(exc), hint="list changeIds with `unfurl history`") from None
    prefix = str(wanted)[:8]
    for job in read_jobs(jobs_tsv, ensemble):
        if job.prefix != prefix:
            continue
        task = None
        if not wanted.is_job:
            task = next((t for t in job.tasks if t.change_id == str(wanted)), None)
            if task is None and not _in_job_file(root, job, str(wanted)):
                raise HistoryError(f"job {job.change_id} has no task {wanted}")
        job.job_file = job_file_of(root, job)
        job.workflow, job.state = _head_of(job.job_file) if job.job_file else ("", "")
        _complete(job)
        job.commit = job_commits(root).get(job.prefix)
        return job, task
    running = next((j for j in running_jobs(root) if j.change_id and j.prefix == prefix), None)
    if running is not None and wanted.is_job:  # not logged yet: it has not ended
        return running, None
    raise HistoryError(
        f"no job {prefix} in {jobs_tsv.name}", hint="list changeIds with `unfurl history`"
    )


def _in_job_file(root: Path, job: JobRecord, change_id: str) -> bool:
    path = job_file_of(root, job)
    return bool(path) and any(
        str(c.get("changeId")) == change_id for c in load_job_file(path)  # type: ignore[arg-type]
    )


def job_entries(job: JobRecord) -> list[dict[str, Any]]:
    return load_job_file(job.job_file) if job.job_file else []


def file_at(root: Path, commit: str, path: str) -> str | None:
    """A file's text at a commit (``path`` relative to ``root``), None if it was not there."""
    return gitobjects.file_at(root, commit, path)


def ensemble_diff(root: Path, ensemble: str, base: str | None, head: str | None) -> str:
    """``git diff`` of the ensemble between two commits; head None is the working tree;
    base None is the commit's own change (its diff against its parent)."""
    return gitrepo.diff(root, ensemble, base, head)


def status_at(text: str | None) -> dict[str, dict[str, Any]]:
    """instance -> {status, state} from an ensemble's text (empty when there is none)."""
    if not text:
        return {}
    from ruamel.yaml import YAML  # start-up: keeps ruamel (35 modules) off history's import

    try:
        doc = YAML(typ="safe").load(text)
    except Exception:  # a version that does not parse has no status to show
        return {}
    document: Mapping[str, Any] = doc or {}
    status: Mapping[str, Any] = document.get("status") or {}
    found: dict[str, dict[str, Any]] = {}
    for name, (record, _) in layout.flatten(status.get("instances") or {}).items():
        recorded: Mapping[str, Any] = record or {}
        ready: Mapping[str, Any] = recorded.get("readyState") or {}
        found[str(name)] = {"status": ready.get("local"), "state": ready.get("state")}
    return found


def status_changes(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old != new:
            changes.append({"instance": name, "before": old, "after": new})
    return changes


def written_secrets(text: str | None) -> set[str]:
    """Secrets written in an ensemble's text, found without loading it: ``{eval: {sensitive:
    X}}`` anywhere, and the values of inputs and properties whose definitions are sensitive.
    A diff shows versions of the spec other than the current one (and context lines around
    what changed), so each version's own secrets must be redacted from it."""
    if not text:
        return set()
    from ruamel.yaml import YAML  # start-up: keeps ruamel (35 modules) off history's import

    try:
        doc = YAML(typ="safe").load(text)
    except Exception:  # unparsable: nothing to learn (the current secrets still apply)
        return set()
    found: set[str] = set()
    sensitive_names: set[str] = set()
    _scan_secrets(doc, found, sensitive_names)
    if sensitive_names:
        _scan_named(doc, sensitive_names, found)
    return {s for s in found if s}


def _is_sensitive_definition(value: Any) -> bool:
    # start-up: keeps load.builder off history's import until _is_sensitive_definition() runs
    from unfurl_lite.load.builder import SENSITIVE_TYPES

    if not is_map(value):
        return False
    metadata = value.get("metadata")
    flagged = is_map(metadata) and metadata.get("sensitive") is True
    return flagged or value.get("type") in SENSITIVE_TYPES


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _scan_secrets(node: Any, found: set[str], names: set[str]) -> None:
    if is_map(node):
        for key, value in node.items():
            if key == "sensitive" and _scalar(value):
                found.add(str(value))
            if _is_sensitive_definition(value):
                names.add(str(key))
                for field in ("default", "value"):
                    found |= _literals(value.get(field))
            _scan_secrets(value, found, names)
    elif is_list(node):
        for item in node:
            _scan_secrets(item, found, names)


def _literals(value: Any) -> set[str]:
    """The literal text in a sensitive value, e.g. the fallback of ``{eval: {get_env: [NAME,
    fallback]}}`` (the variable's name is not secret)."""
    if _scalar(value):
        return {str(value)}
    if is_map(value):
        found: set[str] = set()
        for key, item in value.items():
            if key == "get_env" and is_list(item):
                item = item[1:]
            found |= _literals(item)
        return found
    if is_list(value):
        return {text for item in value for text in _literals(item)}
    return set()


def _scan_named(node: Any, names: set[str], found: set[str]) -> None:
    """Scalar values given under a sensitive input's or property's name (over-redacting a
    same-named value elsewhere is the safe mistake)."""
    if is_map(node):
        for key, value in node.items():
            if str(key) in names and _scalar(value):
                found.add(str(value))
            _scan_named(value, names, found)
    elif is_list(node):
        for item in node:
            _scan_named(item, names, found)
