"""A value against the TOSCA type its definition declares, by toscaparser's rules (what
Unfurl 1.2.0 checks when a task sets an attribute: case 152)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.model.tosca_values import type_problem

plain = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                  st.text(max_size=8), st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=3))


@pytest.mark.parametrize(("type_name", "value", "problem"), [
    ("map", "blue-3", '"blue-3" is not a map.'),
    ("map", {"color": "blue"}, None),
    ("tosca:map", [1], '"[1]" is not a map.'),
    ("list", {"a": 1}, "\"{'a': 1}\" is not a list."),
    ("string", 8080, '"8080" is not a string.'),
    ("string", "8080", None),
    ("integer", "42", None),  # toscaparser converts text
    ("integer", "4.2", '"4.2" is not an integer.'),
    ("float", "1e3", None),
    ("boolean", "TRUE", None),
    ("boolean", "yes", '"yes" is not a boolean.'),
    ("version", "1.2.0", None),
    ("version", "one", '"one" is not a valid version.'),
    ("scalar-unit.size", "10 GB", None),
    ("scalar-unit.size", 10, '"10" is not a valid scalar-unit.size.'),
    ("timestamp", "2026-11-26T12:00:00Z", None),
    ("range", [1, "UNBOUNDED"], None),
    ("range", [3, 1], '"[3, 1]" is not a valid range.'),
    ("my.datatypes.Thing", "anything", None),  # data types are not judged here
    ("any", object, None),
])
def test_toscaparsers_rules(type_name, value, problem):
    assert type_problem({"type": type_name}, value) == problem


def test_entries_are_checked_against_the_entry_schema():
    schema = {"type": "list", "entry_schema": {"type": "integer"}}
    assert type_problem(schema, [1, "2"]) is None
    assert type_problem(schema, [1, "two"]) == '"two" is not an integer.'
    assert type_problem({"type": "map", "entry_schema": "string"}, {"a": 1}) \
        == '"1" is not a string.'


@settings(max_examples=examples(200), deadline=None)
@given(plain)
def test_null_and_untyped_definitions_accept_every_value(value):
    assert type_problem({"type": "string"}, None) is None
    assert type_problem({}, value) is None
    assert type_problem(None, value) is None
    assert type_problem({"type": "any"}, value) is None


@settings(max_examples=examples(200), deadline=None)
@given(plain)
def test_each_value_fits_the_types_of_its_shape(value):
    """What YAML gives is accepted by the type of its own shape and refused by the
    container types it is not."""
    shape = {bool: "boolean", int: "integer", float: "float", str: "string", list: "list",
             dict: "map"}.get(type(value))
    if value is None or shape is None:
        return
    assert type_problem({"type": shape}, value) is None
    if not isinstance(value, dict):
        assert type_problem({"type": "map"}, value) == f'"{value}" is not a map.'
    if not isinstance(value, list):
        assert type_problem({"type": "list"}, value) == f'"{value}" is not a list.'
