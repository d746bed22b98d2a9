"""Redaction when a job knows no secret takes a short road; it must write what the
general walk writes, marked values (Sensitive, Tainted) and record forms included."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.security.redaction import _redacted, redact
from unfurl_lite.security.taint import REDACTED, Sensitive, Tainted


class Queried:
    """An object that writes itself as a record (an instance a query gave)."""

    def __init__(self, form: Any) -> None:
        self.form = form

    def record_form(self) -> Any:
        return self.form


LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12),
    st.text(min_size=1, max_size=12).map(Sensitive),
    st.text(min_size=1, max_size=12).map(Tainted),
)
TREES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
        inner.map(Queried),
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300))
@given(tree=TREES, secrets=st.sampled_from([set(), [], (), {"ab"}]))
def test_no_secret_known_redacts_as_the_general_walk(tree: Any, secrets: Any) -> None:
    assert redact(tree, secrets) == _redacted(tree, secrets, [], None)


def test_marked_values_are_replaced_inside_plain_containers() -> None:
    value = {"a": [1, Sensitive("hunter22"), {"b": Tainted("x")}], "c": "plain"}
    out = redact(value)
    assert out == {"a": [1, REDACTED, {"b": REDACTED}], "c": "plain"}
    assert out is not value and out["a"] is not value["a"]  # a copy, as before
