"""The journal's copies of a task's values: one walk for plain data gives exactly what
redacting and then making plain gives, whatever the value holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.load import yamlio
from unfurl_lite.record.journal_tasks import plain_redacted
from unfurl_lite.security.redaction import redact
from unfurl_lite.security.taint import Sensitive, Tainted


class Label(str):
    """A string subclass, as a temporary file's path or a ruamel scalar is."""


keys = st.one_of(st.text(max_size=6), st.integers(), st.booleans(), st.none(),
                 st.builds(Label, st.text(max_size=4)))
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12),
    st.builds(Label, st.text(max_size=8)), st.builds(Sensitive, st.text(max_size=8)),
    st.builds(Tainted, st.text(max_size=8)),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(keys, inner, max_size=4)),
    max_leaves=20,
)


@given(values, st.sampled_from([(), ("s3cr3t-value",)]))
def test_one_walk_is_redact_then_plain(value: Any, known: tuple[str, ...]) -> None:
    secrets = set(known)
    assert plain_redacted(value, secrets) == yamlio.to_plain(redact(value, secrets))


def test_a_secret_in_plain_text_is_still_redacted() -> None:
    secrets = {"s3cr3t-value"}
    copied = plain_redacted({"out": "token s3cr3t-value", 1: [Sensitive("x")]}, secrets)
    assert copied == {"out": "token <<REDACTED>>", "1": ["<<REDACTED>>"]}


small = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(keys, inner, max_size=2)), max_leaves=5)


@given(st.dictionaries(st.text(max_size=3), small, max_size=2),
       st.dictionaries(st.text(max_size=3), small, max_size=2))
def test_a_snapshot_encoded_at_once_is_written_as_its_copy(attributes: dict[str, Any],
                                                           extra: dict[str, Any]) -> None:
    """Records encoded at once skip the copy of what is plain already: the journal's JSON
    of them is the copy's, byte for byte."""
    from unfurl_lite.model.entities import Instance
    from unfurl_lite.record import journal_format
    from unfurl_lite.record.journal import snapshot_instances

    instance = Instance(name="db", template="db", attributes=attributes, extra=extra)
    for secrets in (set(), {"s3cr3t-value"}):
        copied = snapshot_instances({"db": instance}, secrets)
        shared = snapshot_instances({"db": instance}, secrets, copy=False)
        assert journal_format._json(shared) == journal_format._json(copied)


def test_an_event_is_encoded_as_the_configured_encoder_encodes_it() -> None:
    """The events' encoder called directly gives the JSONEncoder's text byte for byte:
    non-finite floats, text the encoder does not know (``default=str``), any character."""
    from unfurl_lite.record import journal_format

    event = {"task": {"number": 1, "changed": False, "status": None, "duration": 0.1,
                      "odd": [float("nan"), float("inf"), -float("inf"), 1e300, -0.0],
                      "text": ["é\u2028\"\\\n\t\x00", Label("tmp/x"), "\ud800"],
                      "marked": Sensitive("s"), "other": {1, 2}.__class__},
             "nested": {"a": {"b": [{}, [], ""]}}}
    assert journal_format._json(event) == journal_format._ENCODER.encode(event)


plain_inputs = st.dictionaries(
    st.sampled_from(["command", "count", "flag"]),
    st.one_of(st.sampled_from([1, 1.0, True, 0, False, "1", "true", None]),
              st.text(max_size=4), st.lists(st.integers(), max_size=2)),
    max_size=3)


@given(st.lists(plain_inputs, min_size=1, max_size=4))
def test_a_digest_shared_by_tasks_is_the_one_each_would_take(inputs: list[dict[str, Any]]) -> None:
    """Tasks that read the same way with the same plain inputs share one digest (taken
    once a job); a value equal in Python but of another type (1, 1.0, True) is another
    digest, as it is when each task takes its own."""
    from unfurl_lite.expressions.reads import Reads
    from unfurl_lite.plan.tasks import Task
    from unfurl_lite.record import records
    from unfurl_lite.record.journal_tasks import take_digest
    from unfurl_lite.run.outcome import TaskRun

    reads = Reads(("command", "count", "flag"))
    memo: dict[Any, Any] = {}
    for number, given_inputs in enumerate(inputs, 1):
        task = Task(number, "n", "n", None, "add", "deploy")
        shared = TaskRun(task, inputs=dict(given_inputs))
        alone = TaskRun(task, inputs=dict(given_inputs))
        shared.reads = alone.reads = reads
        take_digest(shared, lambda: None, memo)
        assert shared.digest == records.task_digest(alone, lambda: None)


@given(st.datetimes(timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=2))])))
def test_a_time_is_written_as_isoformat_writes_it(moment: datetime) -> None:
    """The journal's times (UTC ones made from their fields) read as ``isoformat`` gives
    them, microseconds or none, any year."""
    from unfurl_lite.record.journal_tasks import _iso

    assert _iso(moment) == moment.isoformat()


@given(st.builds(
    lambda status, state, created, config, protected, attributes, extra, effective: (
        status, state, created, config, protected, attributes, extra, effective),
    st.sampled_from(["ok", "error", "pending", "absent"]),
    st.sampled_from([None, "created", "started", "deleted"]),
    st.sampled_from([None, False, "A01"]), st.sampled_from([None, "A02"]), st.booleans(),
    st.dictionaries(st.sampled_from(["a", "b"]), leaves, max_size=2),
    st.dictionaries(st.sampled_from(["x", "created", "requirements"]), small, max_size=2),
    st.sampled_from([None, "ok", "degraded"])))
def test_a_new_instance_record_is_the_one_made_field_by_field(fields: tuple[Any, ...]) -> None:
    """An instance's record made anew (every journal event makes one) is the record made
    from an empty one, key for key and in the same order."""
    from unfurl_lite.model.entities import Instance, NodeState, Status
    from unfurl_lite.record.records import instance_record

    status, state, created, config, protected, attributes, extra, effective = fields
    instance = Instance(name="db", template="db", status=Status(status),
                        state=NodeState(state) if state else None, created=created,
                        last_config_change=config, protected=protected,
                        attributes=attributes, extra=extra)
    for secrets in (set(), {"s3cr3t-value"}):
        made = instance_record(instance, Status(effective) if effective else None, None, secrets)
        emptied = instance_record(instance, Status(effective) if effective else None, {},
                                  secrets)
        assert list(made.items()) == list(emptied.items())
