"""A task as the journal records it: its full record, what its events say of it, and
the record made again from the last one when only some of what it is made from changed.

A task's full record (its inputs and result redacted) is made for its first event of an
attempt; its outcome's event says only the fields that changed since. The outcome's record
is the first one with those fields made again (:func:`updated_record`): which of them
changed, its fingerprint says (what the record is made from, field by field), so the rest
(the inputs, the times, the head) is neither made again nor compared.
"""

from __future__ import annotations

from datetime import UTC, datetime

from unfurl_lite.expressions.digest import KeyProvider
from unfurl_lite.expressions.lazy import Labelled
from unfurl_lite.load import yamlio
from unfurl_lite.record import records
from unfurl_lite.run.observer import TaskState
from unfurl_lite.run.outcome import TaskRun
from unfurl_lite.security.redaction import redact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _iso(moment: datetime | None) -> str | None:
    """``moment.isoformat()``; a UTC time (every time a job takes) made from its fields,
    two fifths of the instructions of ``isoformat``, which formats through C's printf."""
    if moment is None:
        return None
    if moment.tzinfo is not UTC or moment.year < 1000:
        return moment.isoformat()
    text = (f"{moment.year}-{_TWO[moment.month]}-{_TWO[moment.day]}T{_TWO[moment.hour]}:"
            f"{_TWO[moment.minute]}:{_TWO[moment.second]}")
    micro = moment.microsecond
    return f"{text}.{str(1000000 + micro)[1:]}+00:00" if micro else f"{text}+00:00"


_TWO = [f"{number:02d}" for number in range(100)]


def fingerprint(run: TaskRun) -> tuple[Any, ...]:
    """What a task's record is made from (values, and the identity of its containers)."""
    return (run.state, run.change_id, run.previous_id, run.attempts, run.status, run.changed,
            run.prior_state, run.started_at, run.ended_at, run.message, run.carried,
            run.interrupted, len(run.retries), run.worker, id(run.inputs), run.digest,
            id(run.result))


#: the states in which a task is about to leave the job (its operation sent): their
#: events are written at once; an outcome's may wait for the next (see EventLog.append)
LEAVING = frozenset({TaskState.sending, TaskState.sent, TaskState.started})
#: the fingerprint's changeId, attempts and the inputs' identity: the same inputs
SAME_INPUTS = (1, 3, 14)
#: what an event says of its task whatever changed: which task it is, and its state
_HEAD = ("number", "target", "operation", "state")


def changed_fields(last: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """What a task's event says when the events already hold its full record ``last``
    for this attempt: the fields that changed, which the reader merges over it (an outcome
    event without the inputs it was sent with: about half the JSON). The full ``record``
    when its inputs changed or a field went away (a record with inputs replaces)."""
    if last.get("inputs") != record.get("inputs") or not record.keys() >= last.keys():
        return record
    out = {key: record[key] for key in _HEAD}
    for key, value in record.items():
        if key not in out and (key not in last or last[key] != value):
            out[key] = value
    return out


def task_head(run: TaskRun) -> dict[str, Any]:
    """A task not sent yet, as the journal's first write holds it: which task it is (what
    resume checks the plan made again against) and its state; its full record comes with
    its first event."""
    task = run.task
    return {
        "number": task.number,
        "target": task.target,
        "operation": task.operation.qualified_name if task.operation else None,
        "state": str(run.state),
    }


def task_progress(run: TaskRun) -> dict[str, Any]:
    """What changes between sending a task and its outcome (``sent``, ``started``): the
    full record went with ``sending`` and comes again with the outcome, and fold merges
    the fields in between."""
    return {
        **task_head(run),
        "changeId": run.change_id,
        "attempts": run.attempts,
        "startedAt": _iso(run.started_at),
        "worker": run.worker,
        "priorState": str(run.prior_state) if run.prior_state else None,
        "previousId": run.previous_id,
    }


def task_record(run: TaskRun, secrets: set[str],
                key: KeyProvider | None = None, inputs: Any = None) -> dict[str, Any]:
    """A task as the journal records it: its state, attempts and times, and its result's
    outputs with every secret the job knows redacted (``inputs``: the task's inputs as
    an earlier record redacted them with the same secrets)."""
    if run.inputs and run.digest is None and key is not None:
        take_digest(run, key)
    # a field at its default (journal_format.TASK_DEFAULTS) is left out: the reader puts
    # it back; a task's first event is a quarter smaller to make and to encode
    task = run.task
    record: dict[str, Any] = {
        "number": task.number,
        "target": task.target,
        "operation": task.operation.qualified_name if task.operation else None,
        "state": str(run.state),
        "changeId": run.change_id,
    }
    if run.previous_id is not None:
        record["previousId"] = run.previous_id
    record["attempts"] = run.attempts
    if run.status:
        record["status"] = str(run.status)
    if run.changed:
        record["changed"] = run.changed
    if run.prior_state:
        record["priorState"] = str(run.prior_state)
    record["startedAt"] = _iso(run.started_at)
    if run.ended_at:
        record["endedAt"] = _iso(run.ended_at)
    if run.message:
        record["message"] = redact(run.message, secrets)
    if run.carried:
        record["carried"] = run.carried
    if run.interrupted is not None:
        record["interrupted"] = run.interrupted
    if run.retries:
        record["retries"] = redact(list(run.retries), secrets)
    if run.worker is not None:
        record["worker"] = run.worker
    record["inputs"] = plain_redacted(run.inputs, secrets) if inputs is None else inputs
    record["digest"] = list(run.digest) if run.digest else None
    if run.result is not None:
        record["result"] = _result(run, secrets)
    return record


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def take_digest(run: TaskRun, key: KeyProvider,
                memo: dict[Any, tuple[Any, tuple[str, str]]] | None = None) -> None:
    """The task's digest (``records.task_digest``), taken once for every task of a job
    that read the same way (the same shared ``Reads``: see ``plain_reads``) the same plain
    inputs (``memo``, the job's): a digest is a function of those and the job's key. The
    values' types are part of what is compared (``1``, ``1.0`` and ``True`` are equal in
    Python, not in a digest)."""
    reads, inputs = run.reads, run.inputs
    if memo is None or reads is None or not (type(inputs) is dict or type(inputs) is Labelled):
        records.task_digest(run, key)
        return
    parts: list[tuple[str, type, Any]] = []
    for name, value in inputs.items():
        kind = type(value)
        if kind not in _PLAIN_SCALARS:
            records.task_digest(run, key)
            return
        parts.append((name, kind, value))
    ident = (id(reads), tuple(parts))
    found = memo.get(ident)
    if found is not None and found[0] is reads:
        run.digest = found[1]
        return
    memo[ident] = (reads, records.task_digest(run, key))


def plain_redacted(value: Any, secrets: set[str]) -> Any:
    """``to_plain(redact(value, secrets))``, in one walk when the job knows no secret: plain
    data is copied as it is (keys made text, as ``to_plain`` makes them), a task's rendered
    inputs (a ``Labelled`` mapping: a dict with a name for errors) as the dict it is;
    anything else in it (a marked value, a tuple, another subclass) goes through both."""
    if secrets or getattr(secrets, "hashed", None):
        return yamlio.to_plain(redact(value, secrets))
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if kind is dict or kind is Labelled:  # (a plain value taken as it is, without a call)
        return {k if type(k) is str else str(k):
                v if type(v) in _PLAIN_SCALARS else plain_redacted(v, secrets)
                for k, v in value.items()}
    if kind is list:
        return [plain_redacted(v, secrets) for v in value]
    return yamlio.to_plain(redact(value, secrets))


#: each fingerprint entry's field in the record (see :func:`fingerprint`)
_FIELDS = ("state", "changeId", "previousId", "attempts", "status", "changed", "priorState",
           "startedAt", "endedAt", "message", "carried", "interrupted", "retries", "worker",
           "inputs", "digest", "result")
#: entries whose change needs the whole record made again: changeId, attempts, inputs
#: (another attempt, or other inputs) and the digest (taken from the inputs)
_WHOLE = frozenset({1, 3, 14, 15})


def updated_record(run: TaskRun, secrets: set[str], last: dict[str, Any],
                   before: tuple[Any, ...], now: tuple[Any, ...]
                   ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The task's record ``last`` (made from ``before``, with the same secrets) with the
    fields whose part of the fingerprint changed (``now``) made again, and those fields;
    None when the whole record must be made again (another attempt or other inputs, a
    digest to take, a result gone)."""
    changed: dict[str, Any] = {}
    for index, value in enumerate(now):
        if value == before[index]:
            continue
        if index in _WHOLE:
            return None
        # the fields an outcome changes made here, the rest by _field
        if index == 0:
            changed["state"] = str(run.state)
        elif index == 4:
            changed["status"] = str(run.status) if run.status else None
        elif index == 5:
            changed["changed"] = run.changed
        elif index == 8:
            changed["endedAt"] = _iso(run.ended_at)
        elif index == 13:
            changed["worker"] = run.worker
        elif index == 16:
            if run.result is None:
                return None
            changed["result"] = _result(run, secrets)
        else:
            key = _FIELDS[index]
            changed[key] = _field(run, secrets, key)
    return {**last, **changed}, changed


def _field(run: TaskRun, secrets: set[str], key: str) -> Any:
    """One field of :func:`task_record` an outcome seldom changes (not the inputs, digest
    or result; the state, status, changed, endedAt and worker :func:`updated_record` makes
    itself)."""
    if key == "message":
        return redact(run.message, secrets) if run.message else None
    if key == "previousId":
        return run.previous_id
    if key == "priorState":
        return str(run.prior_state) if run.prior_state else None
    if key == "startedAt":
        return _iso(run.started_at)
    if key == "retries":
        return redact(list(run.retries), secrets) if run.retries else []
    if key == "carried":
        return run.carried
    return run.interrupted


def _result(run: TaskRun, secrets: set[str]) -> dict[str, Any]:
    result = run.result
    assert result is not None
    record = {
        "success": result.success,
        "modified": result.modified,
        "error": redact(result.error, secrets) if result.error else None,
        "outputs": plain_redacted(result.outputs, secrets),
        "attributes": plain_redacted(result.attributes, secrets),
    }
    if not result.ran:
        record["ran"] = False
    return record


def event_body(last: dict[str, Any], record: dict[str, Any],
               changed: dict[str, Any]) -> dict[str, Any]:
    """:func:`changed_fields` of a record :func:`updated_record` made from ``last``: its
    head and the fields made again whose value is not the one ``last`` holds."""
    out = {key: record[key] for key in _HEAD}
    for key, value in changed.items():
        if key not in out and (key not in last or last[key] != value):
            out[key] = value
    return out
