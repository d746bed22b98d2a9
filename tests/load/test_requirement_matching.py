"""A requirement a type declares and a template leaves unconnected is matched as Unfurl
1.2.0's solver matches it (measured: unfurl-cases 446, 466, 468 and the experiments in
docs/unfurl-1.2.0-behaviour.md): a required one to the first other template of the wanted
type (a ``default`` template only when no other matches), an optional one never searched
for."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Invoke, Project
from unfurl_lite.load.structure import implied_requirements


def service(templates: dict[str, Any], optional: bool) -> dict[str, Any]:
    definition: dict[str, Any] = {"node": "Node"}
    if optional:
        definition["occurrences"] = [0, 1]
    node_types = {
        "Node": {"derived_from": "tosca.nodes.Root", "requirements": [{"another": definition}]},
        "Other": {"derived_from": "tosca.nodes.Root"},
    }
    return {"node_types": node_types, "topology_template": {"node_templates": templates}}


def matched(templates: dict[str, Any], name: str, optional: bool = False) -> str | None:
    found = implied_requirements(service(templates, optional))[name]
    return {req: target for req, _, target in found}["another"]


def test_a_required_one_takes_the_first_other_template_of_the_type() -> None:
    templates = {"a": {"type": "Node"}, "o": {"type": "Other"}, "b": {"type": "Node"},
                 "c": {"type": "Node"}}
    assert matched(templates, "a") == "b"
    assert matched(templates, "b") == "a"
    assert matched({"a": {"type": "Node"}}, "a") is None  # never itself


def test_an_optional_one_is_never_searched_for() -> None:
    assert matched({"a": {"type": "Node"}, "b": {"type": "Node"}}, "a", optional=True) is None
    named = service({"a": {"type": "Node"}, "b": {"type": "Node"}}, optional=True)
    named["node_types"]["Node"]["requirements"][0]["another"]["node"] = "b"
    assert {r: t for r, _, t in implied_requirements(named)["a"]}["another"] == "b"


def test_a_default_template_is_matched_only_when_nothing_else_is() -> None:
    default = {"type": "Node", "directives": ["default"]}
    assert matched({"s": {"type": "Node"}, "d": default, "a": {"type": "Node"}}, "s") == "a"
    assert matched({"s": {"type": "Node"}, "d": default, "e": {**default}}, "s") == "d"


@given(st.lists(st.tuples(st.sampled_from(["Node", "Other"]), st.booleans()),
                min_size=1, max_size=6), st.booleans())
def test_matching_follows_unfurls_rule(kinds: list[tuple[str, bool]], optional: bool) -> None:
    templates = {f"t{i}": {"type": kind, **({"directives": ["default"]} if default else {})}
                 for i, (kind, default) in enumerate(kinds)}
    for name, body in templates.items():
        if body["type"] != "Node":
            continue
        others = [n for n, b in templates.items() if b["type"] == "Node" and n != name]
        plain = [n for n in others if "directives" not in templates[n]]
        expected = None if optional else (plain or others or [None])[0]
        assert matched(templates, name, optional) == expected


LOOP = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Back:
        derived_from: tosca.nodes.Root
        requirements:
        - up: {node: Front}
        interfaces:
          Standard:
            configure: echo configured
      Front:
        derived_from: tosca.nodes.Root
        interfaces:
          Standard:
            configure: echo configured
    topology_template:
      node_templates:
        front:
          type: Front
          requirements:
          - dependency: back
        back:
          type: Back
        app:
          type: tosca.nodes.Root
          requirements:
          - dependency: front
          interfaces:
            Standard:
              configure: echo app
"""


def test_a_loop_a_type_closes_is_planned_in_unfurls_template_order(
        project: Project, invoke: Invoke) -> None:
    """front depends on back, whose type's ``up`` finds front (the one Front template):
    Unfurl walks from front to back, so back, front, app; a second walk over the planned
    instances would have put front first."""
    project.write(LOOP)
    result = invoke("deploy", "--approve", "--dirty=ok")
    assert result.exit_code == 0, result.output
    created = {name: record["created"] for name, record in project.status().items()}
    assert sorted(created, key=lambda n: created[n]) == ["back", "front", "app"]
