"""A mapping value that reads its own other keys while it is evaluated (Unfurl's
``f: {a: 1, b: {eval: .::f::a}}``, probed in tests/data/unfurl120/queries/unfurl-tests):
each key is evaluated on its own, so references between keys resolve in any order, and
only a key that needs itself is a circular reference."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.lazy import LazyValues

KEYS = ["a", "b", "c", "d", "e"]


def properties(raw_f: dict[str, Any]) -> LazyValues:
    """Properties holding one mapping ``f``; ``{"eval": "k"}`` inside it reads ``f::k``."""

    def evaluate(value: Any) -> Any:
        if isinstance(value, dict) and "eval" in value:
            return props["f"][value["eval"]]
        if isinstance(value, dict):
            return {k: evaluate(v) for k, v in value.items()}
        return value

    props = LazyValues({"f": raw_f}, lambda key, value: evaluate(value))
    return props


def resolved(raw: dict[str, Any], key: str, seen: tuple[str, ...] = ()) -> Any:
    value = raw[key]
    if isinstance(value, dict):
        if key in seen or value["eval"] in (*seen, key):
            raise ExpressionError("cycle")
        return resolved(raw, value["eval"], (*seen, key))
    return value


@settings(max_examples=examples(200))
@given(st.dictionaries(st.sampled_from(KEYS), st.one_of(
    st.integers(0, 9), st.sampled_from(KEYS).map(lambda k: {"eval": k})), min_size=1))
def test_keys_of_a_mapping_read_each_other_in_any_order(raw):
    while any(isinstance(v, dict) and v["eval"] not in raw for v in raw.values()):
        raw = {k: v for k, v in raw.items() if not isinstance(v, dict) or v["eval"] in raw}
    if not raw:
        return
    try:
        expected = {k: resolved(raw, k) for k in raw}
    except ExpressionError:
        with pytest.raises(ExpressionError, match="circular"):
            dict(properties(raw)["f"])
        return
    assert dict(properties(raw)["f"]) == expected


def test_a_key_that_needs_itself_is_still_circular():
    with pytest.raises(ExpressionError, match="'b' refers to itself"):
        properties({"a": 1, "b": {"eval": "b"}})["f"]
