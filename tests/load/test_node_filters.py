"""A requirement's ``node_filter`` picks its target among the templates of the wanted type,
as tosca-parser's ``match_nodefilter`` judges them for Unfurl 1.2.0 (unfurl-cases 134:
two DBMS templates, the filter's ``name`` chooses one)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.load.node_filters import matches
from unfurl_lite.load.structure import implied_requirements


def caps(**given: dict[str, Any]) -> Any:
    return lambda name: given.get(name)


def test_a_plain_value_must_equal_the_property() -> None:
    node_filter = {"properties": [{"name": "mydb"}]}
    assert matches(node_filter, {"name": "mydb"}, caps())
    assert not matches(node_filter, {"name": "otherdb"}, caps())
    assert not matches(node_filter, {}, caps())  # a property it does not have


def test_a_constraint_clause_is_judged_with_scalar_units() -> None:
    node_filter = {"capabilities": [{"host": {"properties": [
        {"mem_size": {"in_range": ["2 GB", "20 GB"]}}]}}]}
    assert matches(node_filter, {}, caps(host={"mem_size": "4096 MB"}))
    assert not matches(node_filter, {}, caps(host={"mem_size": "1 GB"}))
    assert not matches(node_filter, {}, caps())  # no such capability
    assert matches({"properties": [{"port": {"valid_values": [80, 443]}}]}, {"port": 443},
                   caps())


def test_an_expression_is_not_judged_and_an_empty_filter_matches_nothing() -> None:
    assert matches({"properties": [{"name": {"eval": "::x::name"}}]}, {"name": 1}, caps())
    assert not matches({}, {"name": 1}, caps())


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-50, 50))
def test_in_range_is_inclusive(value: int, low: int, high: int) -> None:
    node_filter = {"properties": [{"n": {"in_range": [low, high]}}]}
    assert matches(node_filter, {"n": value}, caps()) == (low <= value <= high)


def test_the_filter_chooses_among_templates_of_the_wanted_type() -> None:
    service = {
        "node_types": {"App": {"derived_from": "tosca.nodes.Root", "requirements": [
            {"db": {"node": "tosca.nodes.DBMS", "occurrences": [1, 1]}}]}},
        "topology_template": {"node_templates": {
            "mydb": {"type": "tosca.nodes.DBMS", "properties": {"name": "mydb"}},
            "otherdb": {"type": "tosca.nodes.DBMS", "properties": {"name": "otherdb"}},
            "app": {"type": "App", "requirements": [
                {"db": {"node_filter": {"properties": [{"name": "otherdb"}]}}}]},
            "plain": {"type": "App"},
        }},
    }
    found = implied_requirements(service)
    assert [t for r, _, t in found["app"] if r == "db"] == ["otherdb"]
    assert [t for r, _, t in found["plain"] if r == "db"] == ["mydb"]  # the first
