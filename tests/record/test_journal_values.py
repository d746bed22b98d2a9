"""The journal's copies of a task's values: one walk for plain data gives exactly what
redacting and then making plain gives, whatever the value holds."""

from __future__ import annotations

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
