"""Reading the history, running nothing: history, show (one job or task), diff.

Each works from what is committed (jobs.tsv, the job files, git), without loading or
validating the spec, so the history stays readable when the spec is broken; the spec is
read only to learn which values are secret, so that old records holding them are
redacted again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unfurl_lite.errors import HistoryError, UnfurlLiteError
from unfurl_lite.expressions.context import spec_secrets, wrapped_inputs
from unfurl_lite.load.jobslog import jobs_log_setting
from unfurl_lite.model import changeid
from unfurl_lite.model.narrow import new_list
from unfurl_lite.record import history as hist
from unfurl_lite.record.history import Filters, JobRecord
from unfurl_lite.security.paths import jobs_log_path
from unfurl_lite.security.redaction import redact, redact_text
from unfurl_lite.security.taint import secrets_in


def ensemble_paths(ensemble: str | Path | None) -> tuple[Path, Path]:
    """The ensemble file and its jobs log, without loading (or validating) the spec, so
    history and the dashboard stay fast and readable even when the spec is broken; the
    log is resolved, and refused, as every job resolves it (``jobs_log_path``)."""
    # start-up: keeps load.loader (8 modules) off inspect's import until ensemble_paths() runs
    from unfurl_lite.load.loader import resolve_path

    path = resolve_path(ensemble)
    try:
        setting = jobs_log_setting(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # unreadable: the default log, as the loader would
        setting = None
    if not isinstance(setting, str) or not setting:  # not a path: the loader refuses it
        setting = None
    return path, jobs_log_path(path.parent, setting, allow_outside=True, writing=False)


def history(ensemble: str | Path | None = None,
            filters: Filters | None = None) -> list[JobRecord]:
    """Jobs newest first (with the commit that recorded each), as ``filters`` select."""
    path, jobs_tsv = ensemble_paths(ensemble)
    filters = filters or Filters()
    jobs = hist.history(path.parent, jobs_tsv, filters, ensemble=path)
    if filters.instance and not jobs:
        _known_instance(path, jobs_tsv, filters.instance)
    return jobs


def _known_instance(path: Path, jobs_tsv: Path, name: str) -> None:
    """No job touched ``name``: fine for an instance the spec or the history knows (not
    deployed yet, say), a HistoryError with a did-you-mean for a name nothing knows."""
    # start-up: keeps load.loader (8 modules) off `history` until _known_instance() runs
    from unfurl_lite.load.loader import load_ensemble
    from unfurl_lite.load.problems import did_you_mean

    known = {t.target for job in hist.read_jobs(jobs_tsv, path) for t in job.tasks}
    try:
        loaded = load_ensemble(path)
        known |= set(loaded.instances) | set(loaded.topology.templates)
    except UnfurlLiteError:  # a broken spec: the history alone says what is known
        pass
    if name not in known:
        raise HistoryError(
            f"no instance named {name!r} in this ensemble or its history",
            hint=did_you_mean(name, sorted(known)) or "run `unfurl status` to list them",
        )


def project_secrets(path: Path) -> set[str]:
    """The secrets the current spec holds (:func:`expressions.context.spec_secrets`, plus
    sensitive values inside its inputs), redacted again in case old records hold them."""
    try:
        # start-up: keeps load.loader (8 modules) off inspect's import until project_secrets() runs
        from unfurl_lite.load.loader import load_ensemble

        topology = load_ensemble(path).topology
        return spec_secrets(topology) | set(secrets_in(wrapped_inputs(topology)))
    except Exception:  # a broken spec: history and show stay readable
        return set()


def written_secrets(root: Path, rel: str, commits: list[str | None]) -> set[str]:
    """The secrets written in each version of the ensemble a diff shows (None: the
    working tree), so that a secret since removed from the spec stays redacted."""
    found: set[str] = set()
    for commit in commits:
        if commit is None:
            text = (root / rel).read_text(encoding="utf-8") if (root / rel).exists() else None
        else:
            text = hist.file_at(root, commit, rel)
        found |= hist.written_secrets(text)
    return found


@dataclass
class Shown:
    """One job or task as ``unfurl show`` presents it, secrets redacted."""

    job: JobRecord
    record: dict[str, Any] | None  # the job's or task's entry in the job file
    is_job: bool
    tasks: list[dict[str, Any]] = field(default_factory=new_list)  # the job's task entries
    diff: str = ""  # the ensemble's diff in the job's commit

    def as_json(self) -> dict[str, Any]:
        return {"job": self.job.as_json(), "record": self.record,
                "tasks": self.tasks if self.is_job else None, "diff": self.diff or None}


def show(change_id: str, ensemble: str | Path | None = None, with_diff: bool = True) -> Shown:
    """The job or task ``change_id`` names: its record, its tasks, and the diff of the
    ensemble in the commit that recorded it."""

    path, jobs_tsv = ensemble_paths(ensemble)
    root = path.parent
    job, task = hist.find_job(root, jobs_tsv, change_id, path)
    secrets = project_secrets(path)
    entries = [redact(e, secrets) for e in hist.job_entries(job)]
    record = entries[0] if entries else None
    is_job = str(changeid.parse(change_id)).endswith("0000")
    shown = record
    if not is_job:
        wanted = str(changeid.parse(change_id))
        shown = next((e for e in entries if str(e.get("changeId")) == wanted), None)
        if shown is None and task is not None:
            shown = {"changeId": task.change_id, "target": f"::{task.target}",
                     "operation": task.operation, "status": task.status, "summary": task.summary}
        is_job = shown is record
    diff = ""
    if job.commit and with_diff:
        rel = str(path.relative_to(root))
        sha = job.commit.hexsha
        secrets |= written_secrets(root, rel, [f"{sha}^", sha])
        diff = redact_text(hist.ensemble_diff(root, rel, None, sha), secrets)
    return Shown(job, shown, is_job, entries[1:] if is_job else [], diff)


@dataclass
class EnsembleDiff:
    """What changed in the ensemble between two jobs, or since one, or in one."""

    from_label: str
    to_label: str
    kind: str  # "between", "since" or "job"
    instances: list[dict[str, Any]]  # {instance, before, after}, status and state each
    diff: str

    def as_json(self) -> dict[str, Any]:
        return {"from": self.from_label, "to": self.to_label, "instances": self.instances,
                "diff": self.diff}


def diff(first: str, second: str | None = None,
         ensemble: str | Path | None = None) -> EnsembleDiff:
    """What job ``first`` changed; with ``second``, what changed between the two jobs;
    with ``second`` "now", what changed since ``first``."""
    path, jobs_tsv = ensemble_paths(ensemble)
    root = path.parent
    rel = str(path.relative_to(root))
    since = second is not None and second.lower() == "now"
    jobs = [hist.find_job(root, jobs_tsv, c, path)[0] for c in (first, second)
            if c and c != "now"]
    if since:
        jobs = jobs[:1]
    for job in jobs:
        if job.commit is None:
            raise HistoryError(
                f"job {job.change_id} was not committed, so git has no state to compare",
                hint="commit its records, or compare with a committed job",
            )
    if len(jobs) == 2 and jobs[0].change_id > jobs[1].change_id:
        jobs.reverse()
    shas = [j.commit.hexsha for j in jobs if j.commit]
    base: str
    head: str | None
    if len(jobs) == 2:
        base, head, from_label, to_label = shas[0], shas[1], jobs[0].change_id, jobs[1].change_id
        text, kind = hist.ensemble_diff(root, rel, base, head), "between"
    elif since:
        base, head, from_label, to_label = shas[0], None, jobs[0].change_id, "now"
        text, kind = hist.ensemble_diff(root, rel, base, None), "since"
    else:  # the job's own change: its commit against the one before it
        base, head = f"{shas[0]}^", shas[0]
        from_label, to_label = f"{jobs[0].change_id}^", jobs[0].change_id
        text, kind = hist.ensemble_diff(root, rel, None, head), "job"
    before = hist.status_at(hist.file_at(root, base, rel))
    after = hist.status_at(
        hist.file_at(root, head, rel) if head else path.read_text(encoding="utf-8")
    )
    secrets = project_secrets(path) | written_secrets(root, rel, [base, head])
    return EnsembleDiff(from_label, to_label, kind, hist.status_changes(before, after),
                        redact_text(text, secrets))
