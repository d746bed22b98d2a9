"""A value against the TOSCA type its definition declares, by toscaparser's rules (what
Unfurl 1.2.0 checks when a task sets an attribute: case 152)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.model.constraints import constraint_problem
from unfurl_lite.model.tosca_values import DataTypes, type_problem, with_defaults

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
    ("scalar-unit.size", 10, '"10" is not a valid scalar-unit.'),
    ("scalar-unit.size", "-1 GB", '"-1 GB" is not a valid scalar-unit.'),
    ("scalar-unit.size", "+1 GB", '"+1 GB" is not a valid scalar-unit.'),
    ("scalar-unit.size", "1e3 MB", 'The unit "e3" is not valid. Valid units are '
     '"[\'B\', \'GB\', \'GiB\', \'KiB\', \'MB\', \'MiB\', \'TB\', \'TiB\', \'kB\']".'),
    ("scalar-unit.size", "10 GHz", 'The unit "GHz" is not valid. Valid units are '
     '"[\'B\', \'GB\', \'GiB\', \'KiB\', \'MB\', \'MiB\', \'TB\', \'TiB\', \'kB\']".'),
    ("scalar-unit.size", "2 gb", None),  # toscaparser matches a unit in any case
    ("scalar-unit.size", ".5GB", None),
    ("scalar-unit.time", "30 s", None),
    ("scalar-unit.frequency", "1 GB",
     'The unit "GB" is not valid. Valid units are "[\'GHz\', \'Hz\', \'MHz\', \'kHz\']".'),
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


@settings(max_examples=examples(200))
@given(plain)
def test_null_and_untyped_definitions_accept_every_value(value):
    assert type_problem({"type": "string"}, None) is None
    assert type_problem({}, value) is None
    assert type_problem(None, value) is None
    assert type_problem({"type": "any"}, value) is None


@settings(max_examples=examples(200))
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


LIMITS = DataTypes({
    "acme.Limits": {"derived_from": "tosca.datatypes.Root", "properties": {
        "cpus": {"type": "integer", "constraints": [{"in_range": [1, 16]}]},
        "tier": {"type": "string", "constraints": [{"valid_values": ["small", "large"]}]},
        "ratio": {"type": "float", "default": 0.5, "constraints": [{"greater_than": 0}]},
        "name": {"type": "string", "required": False,
                 "constraints": [{"min_length": 2}, {"max_length": 4}, {"pattern": "[a-z]+"}]},
    }},
    "acme.Big": {"derived_from": "acme.Limits", "properties": {"disks": {
        "type": "list", "required": False, "entry_schema": {"type": "scalar-unit.size"}}}},
    "acme.Port": {"derived_from": "integer", "constraints": [{"greater_or_equal": 1024}]},
})


@pytest.mark.parametrize(("definition", "value", "problem"), [
    ({"type": "acme.Limits"}, {"cpus": 4, "tier": "small"}, None),
    ({"type": "acme.Limits"}, {"cpus": 64, "tier": "small"},
     'The value "64" of property "cpus" is out of range "(min:1, max:16)".'),
    # a field is judged as given: text does not compare with the bound (toscaparser)
    ({"type": "acme.Limits"}, {"cpus": "8", "tier": "small"},
     'The value "8" of property "cpus" is out of range "(min:1, max:16)".'),
    ({"type": "acme.Limits"}, {"cpus": 2, "tier": "huge"},
     'The value "huge" of property "tier" is not valid. Expected a value from "[small, large]".'),
    ({"type": "acme.Limits"}, {"tier": "small"},
     'Data value of type "acme.Limits" is missing required field "[\'cpus\']".'),
    ({"type": "acme.Limits"}, {"cpus": 2, "tier": "small", "colour": "red"},
     'Data value of type "acme.Limits" contains unknown field "colour". '
     "Refer to the definition to verify valid values."),
    ({"type": "acme.Limits"}, {"cpus": 2, "tier": "small", "name": "Web"},
     'The value "Web" of property "name" does not match pattern "[a-z]+".'),
    ({"type": "acme.Limits"}, {"cpus": 2, "tier": "small", "name": "x"},
     'Length of value "x" of property "name" must be at least "2".'),
    ({"type": "acme.Big"}, {"cpus": 2, "tier": "small", "disks": ["1 GB", "many"]},
     '"many" is not a valid scalar-unit.'),
    ({"type": "acme.Limits"}, "small", 'small must be of type "acme.Limits".'),
    ({"type": "acme.Port"}, 80,
     'The value "80" of property "" must be greater than or equal to "1024".'),
    ({"type": "acme.Port"}, 8080, None),
    # a property's own value is converted first (toscaparser's Property.validate)
    ({"type": "integer", "constraints": [{"greater_or_equal": 1}]}, "3", None),
    ({"type": "integer", "constraints": [{"greater_or_equal": 1}]}, 0,
     'The value "0" of property "" must be greater than or equal to "1".'),
    ({"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "1 GB"}]}, "10 MB",
     'The value "10 MB" of property "" must be greater than or equal to "1 GB".'),
    ({"type": "scalar-unit.size", "constraints": [{"in_range": ["1 GB", "1 TB"]}]}, "10 GB",
     None),
    ({"type": "list", "entry_schema": {"type": "integer",
                                       "constraints": [{"greater_or_equal": 1024}]}},
     [8080, 80], 'The value "80" of property "None" must be greater than or equal to "1024".'),
    ({"type": "list", "constraints": [{"valid_values": [1, 2]}]}, [1, 2], None),
    ({"type": "tosca.datatypes.Credential"}, {"user": "me"},
     'Data value of type "tosca.datatypes.Credential" is missing required field "[\'token\']".'),
    ({"type": "tosca.datatypes.network.PortDef"}, 70000,
     'The value "70000" of property "" is out of range "(min:1, max:65535)".'),
])
def test_data_types_and_constraints_by_toscaparsers_rules(definition, value, problem):
    assert type_problem(definition, value, LIMITS) == problem


def test_expressions_are_judged_when_evaluated_not_as_written():
    functions = frozenset({"get_input", "eval"})
    definition = {"type": "acme.Limits"}
    assert type_problem(definition, {"get_input": "limits"}, LIMITS, "l", functions) is None
    assert type_problem(definition, {"cpus": {"eval": "::x"}, "tier": "small"}, LIMITS,
                        "l", functions) is None
    assert type_problem({"type": "integer"}, "{{ SELF.n }}", LIMITS, "n", functions) is None


def test_a_data_types_defaults_fill_what_a_value_leaves_out():
    value = {"cpus": 4, "tier": "small"}
    assert with_defaults({"type": "acme.Limits"}, value, LIMITS) == {**value, "ratio": 0.5}
    assert with_defaults({"type": "acme.Limits"}, {**value, "ratio": 1}, LIMITS)["ratio"] == 1
    assert with_defaults({"type": "map"}, value, LIMITS) is value
    assert with_defaults({"type": "acme.Limits"}, "text", LIMITS) == "text"


def test_a_data_type_that_derives_from_itself_does_not_loop():
    looping = DataTypes({"a.A": {"derived_from": "a.B", "properties": {"x": {"type": "integer"}}},
                         "a.B": {"derived_from": "a.A"}})
    assert type_problem({"type": "a.A"}, {"x": "no"}, looping) == '"no" is not an integer.'


@settings(max_examples=examples(200))
@given(st.integers(-100, 100), st.integers(-100, 100), st.integers(-100, 100))
def test_in_range_holds_exactly_between_its_bounds(value, low, high):
    found = constraint_problem({"in_range": [low, high]}, value, "p")
    assert (found is None) == (low <= value <= high)
    assert (constraint_problem({"greater_than": low}, value, "p") is None) == (value > low)
    assert (constraint_problem({"less_or_equal": high}, value, "p") is None) == (value <= high)
