"""The records a job leaves, in Unfurl's formats: status in ensemble.yaml, jobs.tsv,
``jobs/job<time>-<id>.yaml`` for every job and ``changes/job<time>-<id>.yaml`` for jobs
that changed something. Every write is atomic; nothing here decides anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from unfurl_lite.expressions.digest import KeyProvider, digestable, input_digest
from unfurl_lite.expressions.reads import Reads, dependency_records, plain_reads, reads_digest
from unfurl_lite.load import emit, yamlio
from unfurl_lite.load.jobslog import escape_field, read_jobs_tsv
from unfurl_lite.load.jobslog import last_job_id as last_job_id
from unfurl_lite.model import changeid
from unfurl_lite.model import status_layout as layout
from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.model.narrow import YAMLList, YAMLMap, is_list, is_map, new_list
from unfurl_lite.run.observer import CANCELLING
from unfurl_lite.security.redaction import redact, redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.ensemble import Ensemble
    from unfurl_lite.run.outcome import JobResult, TaskRun

JOBS_DIR = "jobs"
CHANGES_DIR = "changes"


# ------------------------------------------------------------------------------ jobs.tsv


def tsv_line(fields: list[tuple[str, Any]], change_id: str) -> str:
    cells = [escape_field(change_id)]
    for key, value in fields:
        text = "" if value is None else str(value)
        cells.append(f"{key}={escape_field(text)}")
    return "\t".join(cells) + "\n"


def previous_job_id(ensemble: Ensemble) -> str | None:
    """The newest job recorded for the ensemble: its ``lastJob`` or its log's last job."""
    last = (ensemble.last_job or {}).get("changeId")
    from_log = last_job_id(ensemble.jobs_tsv, ensemble.changes)
    candidates = [c for c in (last, from_log) if c and changeid.is_changeid(c)]
    return max(candidates) if candidates else None


# ------------------------------------------------------------------------------- status


def readystate_record(instance: Instance, effective: Status | None) -> dict[str, str]:
    ready = {"local": str(instance.status)}
    if instance.state is not None:
        ready["state"] = str(instance.state)
    if effective is not None and effective != instance.status:
        ready["effective"] = str(effective)
    return ready


def instance_record(
    instance: Instance, effective: Status | None, existing: Any, secrets: set[str]
) -> dict[str, Any]:
    """The instance's status entry. A round-trip ``existing`` entry is updated in place to
    keep its comments; a plain one is copied, keeping its key order."""
    if existing is None:  # a new record (the journal's, every event): the same, made directly
        record = _new_record(instance, effective, secrets)
    elif is_map(existing) and type(existing) is not dict:  # ruamel's CommentedMap
        record = existing
        _set_fields(record, instance, effective, secrets)
    else:
        record = dict(existing) if is_map(existing) else {}
        _set_fields(record, instance, effective, secrets)
    for key, value in instance.extra.items():
        if record.get(key) != value:
            record[key] = value
    if instance.relationships:
        record["requirements"] = _relationship_records(
            instance, record.get("requirements"), secrets
        )
    elif "requirements" in record and _all_relationships(record["requirements"]):
        record.pop("requirements")  # the job dropped them (an update removed the requirement)
    return record


def _new_record(instance: Instance, effective: Status | None, secrets: set[str]
                ) -> dict[str, Any]:
    """What :func:`_set_fields` makes of an empty record, in its order."""
    record: dict[str, Any] = {}
    if instance.template is not None:
        record["template"] = instance.template
    record["priority"] = str(instance.priority)
    record["readyState"] = readystate_record(instance, effective)
    if instance.last_state_change is not None:
        record["lastStateChange"] = instance.last_state_change
    if instance.last_config_change is not None:
        record["lastConfigChange"] = instance.last_config_change
    if instance.created is not None:
        record["created"] = instance.created
    if instance.protected:
        record["protected"] = instance.protected
    if instance.attributes:
        record["attributes"] = redact(instance.attributes, secrets)
    return record


def _set_fields(record: Any, instance: Instance, effective: Status | None,
                secrets: set[str]) -> None:
    """The instance's own fields into ``record`` (None: the key goes)."""
    values: list[tuple[str, Any]] = [
        ("template", instance.template),
        ("priority", str(instance.priority)),
        ("readyState", readystate_record(instance, effective)),
        ("lastStateChange", instance.last_state_change),
        ("lastConfigChange", instance.last_config_change),
        ("created", instance.created),
        ("protected", instance.protected or None),
        ("attributes", redact(instance.attributes, secrets) if instance.attributes else None),
    ]
    for key, value in values:
        if value is None:
            record.pop(key, None)
        else:
            record[key] = value


def _all_relationships(existing: Any) -> bool:
    """Entries the loader reads as relationship instances, every one of them."""
    return is_list(existing) and bool(existing) and all(
        is_map(entry) and len(entry) == 1
        and isinstance(next(iter(entry.values())), dict) for entry in existing)


def _relationship_records(instance: Instance, existing: Any, secrets: set[str]) -> list[Any]:
    """Unfurl's ``requirements:`` list of an instance: ``- name: {relationship instance}``."""
    before: dict[str, Any] = {}
    for entry in existing if is_list(existing) else ():
        if is_map(entry) and len(entry) == 1:
            before.update(entry)
    return [
        {name: instance_record(rel, None, before.get(name), secrets)}
        for name, rel in instance.relationships.items()
    ]


def update_status(
    document: Any,
    instances: Mapping[str, Instance],
    effective: Mapping[str, Status],
    last_job: Mapping[str, Any],
    jobs_log: str | None,
    secrets: set[str],
    forgotten: Iterable[str] = (),
    hosts: Mapping[str, str] | None = None,
    inline_changes: Iterable[Mapping[str, Any]] | None = None,
    outputs: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> None:
    """Write instances' status and lastJob into the document: the round-trip one, or the
    file's plain data when only those sections will be rewritten. An instance with an entry
    in ``hosts`` is written under its host's record, as Unfurl writes it. With
    ``inline_changes`` (an ensemble logging its jobs inline) the tasks are appended to its
    ``changes:`` list and no ``jobsLog`` is written, as Unfurl does."""
    forgotten = set(forgotten)
    found_status: object = document.get("status")
    status: YAMLMap = found_status if is_map(found_status) else {}
    if status is not found_status:
        document["status"] = status
    status.setdefault("inputs", {})
    status.setdefault("outputs", {})
    if outputs:  # the topology's outputs, evaluated (already redacted)
        status["outputs"] = dict(outputs)
    if inputs:  # and its inputs' values
        status["inputs"] = dict(inputs)
    found_instances: object = status.get("instances")
    recorded: YAMLMap = found_instances if is_map(found_instances) else {}
    found = layout.flatten(recorded, detach=True)
    records = {n: r for n, (r, _) in found.items() if n not in forgotten}
    parents: dict[str, str | None] = {n: p for n, (_, p) in found.items()}
    for name, instance in instances.items():
        records[name] = instance_record(instance, effective.get(name), records.get(name), secrets)
        parents[name] = (hosts or {}).get(name)
    status["instances"] = layout.nest(records, parents, [*found, *instances], type(recorded))
    document["lastJob"] = redact(dict(last_job), secrets)
    if jobs_log is not None:
        document["jobsLog"] = jobs_log
    if inline_changes is not None:
        found_log: object = document.get("changes")
        logged: YAMLList = found_log if is_list(found_log) else []
        logged.extend(redact(dict(c), secrets) for c in inline_changes)  # a CommentedSeq stays
        document["changes"] = logged


# --------------------------------------------------------------------------- job files


@dataclass
class JobFiles:
    """Relative paths of what one job writes, for the commit."""

    ensemble: Path
    jobs_tsv: Path | None  # None: the ensemble logs its jobs inline
    job_file: Path
    changes_file: Path | None = None
    extra: list[Path] = field(default_factory=new_list)
    #: ensemble.yaml as the job wrote it (a statusfile.Written), not a path to commit
    status: Any = field(default=None, compare=False)

    def all(self) -> list[Path]:
        paths = [self.ensemble, self.job_file]
        if self.jobs_tsv is not None:
            paths.insert(1, self.jobs_tsv)
        if self.changes_file is not None:
            paths.append(self.changes_file)
        return paths + self.extra


def job_file_name(start_label: str, job_prefix: str) -> str:
    return f"job{start_label}-{job_prefix}.yaml"


def write_job_files(
    job_file: Path, changes_file: Path | None, manifest: str,
    entries: list[Mapping[str, Any]], changes: list[Mapping[str, Any]], secrets: set[str],
    writes: yamlio.Writes | None = None,
) -> None:
    """The job's file (``entries``: the job, then every task in detail) and its changes
    file (``changes``: the job, then what ran, as :func:`summary_entry` gives it). The two
    share their values, so each value is redacted once and each entry's text is emitted
    once for both (a changes entry's is made from the pieces of its detailed entry's, see
    emit.Shared). A job that knows no secret writes plain data as it is: redaction would
    copy it unchanged, and a marked value (Sensitive, Tainted) or an object with a record
    form is not plain, which the direct emitter refuses, so such a document is redacted
    first as any other. ``writes``: the files join those (see yamlio.Writes), else they
    are written at once."""
    if writes is None:
        with yamlio.Writes() as own:
            write_job_files(job_file, changes_file, manifest, entries, changes, secrets, own)
        return
    if not secrets and not getattr(secrets, "hashed", None):
        shared = _shared(entries, changes if changes_file is not None else [])
        job_text = emit.dump({"manifest": manifest, "changes": list(entries)}, shared)
        changes_text = None if job_text is None or changes_file is None else \
            emit.dump({"manifest": manifest, "changes": list(changes)}, shared)
        if job_text is not None and (changes_file is None or changes_text is not None):
            writes.replace(job_file, job_text)
            if changes_file is not None and changes_text is not None:
                writes.replace(changes_file, changes_text)
            return
    redacted: dict[int, Any] = {}

    def once(entry: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in entry.items():
            if id(value) not in redacted:
                redacted[id(value)] = redact(value, secrets)
            out[key] = redacted[id(value)]
        return out

    job_entries = [once(e) for e in entries]
    change_entries = [once(c) for c in changes] if changes_file is not None else []
    shared = _shared(job_entries, change_entries)
    writes.replace(job_file, yamlio.dump({"manifest": manifest, "changes": job_entries}, shared))
    if changes_file is not None:
        writes.replace(changes_file,
                       yamlio.dump({"manifest": manifest, "changes": change_entries}, shared))


def _shared(entries: Sequence[Mapping[str, Any]], changes: Sequence[Mapping[str, Any]]
            ) -> emit.Shared:
    """Each change entry declared a part of the job file's entry with its very changeId
    (the job's own entry is in both: a part of itself)."""
    shared = emit.Shared()
    by_change = {id(e.get("changeId")): e for e in entries if type(e) is dict}
    for change in changes:
        whole = by_change.get(id(change.get("changeId")))
        if whole is not None and type(change) is dict:
            shared.view(change, whole)
    return shared


def missing_lines(path: Path, lines: list[str]) -> list[str]:
    """Those of ``lines`` whose changeId has no complete line in the log at ``path``."""
    logged = {record["changeId"] for record in read_jobs_tsv(path)}
    return [line for line in lines if line.split("\t", 1)[0] not in logged]


def append_tsv(path: Path, lines: list[str], secrets: set[str],
               writes: yamlio.Writes | None = None) -> None:
    text = "".join(redact_text(line, secrets) for line in lines)
    if writes is None:
        yamlio.append_lines(path, text)
    else:
        writes.append_lines(path, text)


# ------------------------------------------------------------------ entries of one job


def job_entry(
    result: JobResult,
    options: Mapping[str, Any],
    spec_digest_value: str,
    changelog: str | None,
) -> dict[str, Any]:
    """The job's own record, as lastJob, the first change and jobs.tsv's job line show it."""
    entry: dict[str, Any] = {
        "changeId": result.job_id,
        "startTime": changeid.timestamp(result.started_at),
        "endTime": changeid.timestamp(result.ended_at),
    }
    if result.previous_id:
        entry["previousId"] = result.previous_id
    entry.update(
        workflow=result.workflow,
        options=dict(options),
        summary=result.summary,
        startCommit=result.start_commit or "",
        specDigest=spec_digest_value,
        readyState=job_ready_state(result),
    )
    if str(result.state) in ("cancelled", *CANCELLING):
        entry["state"] = str(result.state)
    if changelog:
        entry["changelog"] = changelog
    return entry


def job_ready_state(result: JobResult) -> dict[str, str]:
    """The job's readyState as Unfurl 1.2.0 writes it: ``local`` is the job's own status,
    ok when it ran to its end (even with failed tasks); ``effective`` its tasks'
    aggregate, written when it differs (``error`` when a task failed). A cancelled job
    did not run to its end: its own status is the aggregate."""
    status = str(result.status)
    if str(result.state) in ("cancelled", *CANCELLING):
        return {"local": status}
    return {"local": "ok"} if status == "ok" else {"effective": status, "local": "ok"}


def digest_put(run: TaskRun, target: str) -> str:
    """Unfurl's digestPut: the attributes the task set, as expressions, less those it read
    and then set to the value it read (Unfurl records a change, or a write it never read;
    it joins a set, in no fixed order: sorted here)."""
    read = dict(run.reads.dependencies) if run.reads else {}
    _unset = object()
    return ",".join(sorted(
        f"{target}::{name}" for name, value in (run.result.attributes if run.result else {}).items()
        if read.get(f"{target}::{name}", _unset) != value
    ))


def task_entry(
    run: TaskRun, instance: Instance | None, type_name: str, detailed: bool,
    key: KeyProvider | None = None,
) -> dict[str, Any]:
    """One task as Unfurl's job file (``detailed``) or changes file records it: target,
    operation, digest keys and the instance's status after it, in Unfurl's key order."""
    task = run.task
    op = task.operation
    digest_keys, digest_value = task_digest(run, key)
    status = str(instance.status) if instance else "unknown"
    relationship = task.requirement is not None and task.source is not None
    target = (
        f"::{task.source}::.requirements::[.name={task.requirement.name}]"
        if relationship and task.requirement is not None
        else f"::{task.target}"
    )
    ran_status = _task_status(run) if run.ran else status  # Unfurl: the task's own status
    entry: dict[str, Any] = {
        "changeId": run.change_id,
        "target": target,
        "priority": str(instance.priority) if instance else "required",
        "readyState": {"local": ran_status},
        "implementation": {
            "operation": task.name,
            "className": op.implementation.unfurl_class_name if op and op.implementation else "",
        },
        "reason": task.reason,
        "inputs": digestable(run.inputs),
        **(
            {"result": run.result.outputs} if run.result and run.result.outputs else {}
        ),
        **({"dependencies": dependency_records(run.reads)}
           if run.reads and dependency_records(run.reads) else {}),
        "digestKeys": digest_keys,
        "digestValue": digest_value,
        "digestPut": digest_put(run, target),
        "summary": task_summary(
            run, type_name, str(run.target_status or status),
            str(instance.priority) if instance else "required",
        ),
    }
    if run.previous_id:  # right after the changeId, where Unfurl writes it
        entry = {"changeId": entry.pop("changeId"), "previousId": run.previous_id, **entry}
    if op is not None:  # the operation's full name, for planning (not in Unfurl's format)
        entry["interface"] = op.interface
    entry["status"] = str(run.status) if run.status else None
    entry["state"] = str(run.state)
    entry["attempts"] = run.attempts
    entry["worker"] = run.worker
    if run.retries:
        entry["retries"] = list(run.retries)
    if run.interrupted:
        entry["interrupted"] = run.interrupted
    if task.source:
        entry["source"] = f"::{task.source}"
    if task.peer:
        entry["relationshipTarget"] = f"::{task.peer}"
    if run.result is not None and run.result.attributes:
        entry["attributes"] = run.result.attributes
    found = [str(r.get("name")) for r in (run.result.resources if run.result else [])
             if r.get("name")]
    if found:  # instances the operation reported (a discover): history finds them
        entry["resources"] = [f"::{name}" for name in found]
    if run.message:
        entry["message"] = run.message
    return entry if detailed else summary_entry(entry)


#: what only the job file's task entries hold (the changes file and the log have the rest)
DETAILED_KEYS = frozenset({
    "result", "interface", "status", "state", "attempts", "worker", "retries", "interrupted",
    "source", "relationshipTarget", "attributes", "resources", "message",
})


def summary_entry(detailed: Mapping[str, Any]) -> dict[str, Any]:
    """A task's entry in the changes file and the log: its detailed entry (the job file's)
    without :data:`DETAILED_KEYS`, sharing the values."""
    return {key: value for key, value in detailed.items() if key not in DETAILED_KEYS}


def task_digest(run: TaskRun, key: KeyProvider | None = None) -> tuple[str, str]:
    """The task's (digestKeys, digestValue), computed once, from its inputs as rendered and
    what its operation read (a task whose reads are not known, carried by a resume from an
    older journal: what its inputs show, else all of them)."""
    if run.digest is None:
        reads = run.reads or _static_reads(run)
        rendered = digestable(run.inputs)
        run.digest = (reads_digest(reads, rendered, key) if reads is not None
                      else input_digest(rendered, key))
    return run.digest


def _static_reads(run: TaskRun) -> Reads | None:
    op = run.task.operation
    if op is None or op.implementation is None:
        return None
    raw = {k: op.inputs.get(k, v) for k, v in run.inputs.items()}
    return plain_reads(raw, op.environment, op.implementation.kind)


def task_summary(run: TaskRun, type_name: str, status: str, priority: str) -> str:
    task = run.task
    op = task.operation
    impl = op.implementation.unfurl_class_name if op and op.implementation else "none"
    # a relationship's operation runs on the relationship instance, named after its
    # requirement (``local_storage``), as Unfurl names it in the summary
    subject = task.requirement.name if task.requirement is not None and task.source \
        else task.target
    if task.requirement is None and task.template and task.template != subject:
        subject = f"{subject} ({task.template})"  # as Unfurl names an instance of another
    return (
        f"{task.name} on instance {subject} (type {type_name}, status {status}) "
        f"using configurator for {task.reason}: {op.qualified_name if op else task.name} ({impl}), "
        f"priority: {priority}, reason: {task.reason}"
    )


def job_tsv_line(entry: Mapping[str, Any]) -> str:
    fields: list[tuple[str, Any]] = []
    if entry.get("previousId"):
        fields.append(("previousId", entry["previousId"]))
    fields += [
        ("status", entry["readyState"].get("effective") or entry["readyState"]["local"]),
        ("startTime", entry["startTime"]),
        ("specDigest", entry["specDigest"]),
        ("startCommit", entry["startCommit"]),
        ("summary", entry["summary"]),
    ]
    if entry.get("changelog"):
        fields.append(("changelog", entry["changelog"]))
    return tsv_line(fields, entry["changeId"])


def _task_status(run: TaskRun) -> str:
    """A task's own status as Unfurl records it (jobs.tsv's ``status``, an entry's
    ``readyState``): ok when it succeeded, else what it ended as."""
    return "ok" if run.state.value == "succeeded" else (str(run.status) if run.status else "error")


def task_tsv_line(entry: Mapping[str, Any], run: TaskRun) -> str:
    status = _task_status(run)
    return tsv_line(
        [
            ("previousId", entry.get("previousId", "")),
            ("status", status),
            ("target", entry["target"]),
            ("operation", entry["implementation"]["operation"]),
            ("digestKeys", entry["digestKeys"]),
            ("digestValue", entry["digestValue"]),
            ("digestPut", entry["digestPut"]),
            ("summary", entry["summary"]),
        ],
        entry["changeId"],
    )
