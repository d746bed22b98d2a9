"""What toscaparser checks when Unfurl 1.2.0 loads a document, refused at validate: a
template's property values against their types, data types and constraints, and the
topology's inputs (unfurl-cases 211, 212); the ensemble's own ``environment.inputs`` and
templates written inline in ``spec.instances``, read as Unfurl reads them (201, 207)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.load.test_validate import problems_in
from unfurl_lite.load.loader import load_ensemble

TYPES = """\
spec:
  inputs: {tier: %s}
  service_template:
    data_types:
      acme.Limits:
        derived_from: tosca.datatypes.Root
        properties:
          cpus: {type: integer, constraints: [{in_range: [1, 16]}]}
          ratio: {type: float, default: 0.5}
    node_types:
      acme.Service:
        derived_from: tosca.nodes.Root
        properties:
          limits: {type: acme.Limits}
          ports: {type: list, entry_schema: {type: integer}}
          label: {type: string, required: false}
    topology_template:
      inputs:
        tier: {type: string, constraints: [{valid_values: [small, large]}]}
      node_templates:
        svc:
          type: acme.Service
          properties:
            limits: %s
            ports: %s
            label: 6.5
"""


def messages(tmp_path: Path, tier: str, limits: str, ports: str) -> list[str]:
    return [p.message for p in problems_in(tmp_path, TYPES % (tier, limits, ports))]


def test_values_their_types_accept_are_valid(tmp_path: Path) -> None:
    # a number given for a string property is read as text, as toscaparser reads it
    assert messages(tmp_path, "small", "{cpus: 4}", "[80, '443']") == []
    # expressions are judged once evaluated, when a task sets them
    assert messages(tmp_path, "small", "{cpus: {get_input: tier}}",
                    "'{{ SELF.ports }}'") == []


def test_a_value_a_constraint_refuses_is_refused_with_toscaparsers_words(tmp_path: Path) -> None:
    assert messages(tmp_path, "small", "{cpus: 64}", "[80]") == [
        'The value "64" of property "cpus" is out of range "(min:1, max:16)". '
        'in node template "svc"']
    assert messages(tmp_path, "small", "{cpus: 1}", "[80, http]") == [
        '"http" is not an integer. in node template "svc"']
    assert messages(tmp_path, "huge", "{cpus: 1}", "[80]") == [
        'The value "huge" of property "tier" is not valid. Expected a value from '
        '"[small, large]". (topology input "tier")']


def test_a_data_types_defaults_reach_the_template(tmp_path: Path) -> None:
    path = tmp_path / "ensemble.yaml"
    path.write_text("apiVersion: unfurl/v1alpha1\nkind: Ensemble\n"
                    + TYPES % ("small", "{cpus: 4}", "[80]"))
    properties = load_ensemble(path).topology.templates["svc"].properties
    assert properties["limits"] == {"cpus": 4, "ratio": 0.5}


def test_environment_inputs_and_inline_templates_are_read_as_unfurl(tmp_path: Path) -> None:
    path = tmp_path / "ensemble.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        environment:
          inputs: {cpus: 2}
        spec:
          inputs: {cpus: 1, zone: a}
          instances:
            anInstance:
              template:
                type: unfurl.nodes.Default
              readyState: pending
          service_template:
            topology_template:
              inputs:
                cpus: {type: integer}
                zone: {type: string}
        """))
    ensemble = load_ensemble(path)
    assert ensemble.topology.inputs == {"cpus": 2, "zone": "a"}  # the environment's win
    assert ensemble.topology.templates["anInstance"].type == "unfurl.nodes.Default"
    assert ensemble.instances["anInstance"].template == "anInstance"


def test_the_rest_of_an_ensembles_environment_is_refused_by_name(tmp_path: Path) -> None:
    found = problems_in(tmp_path, "environment:\n  variables: {FOO: bar}\n  inputs: {}\n"
                        "spec: {service_template: {}}\n")
    assert [p.message for p in found] == [
        "Unfurl's `environment.variables` in an ensemble is not supported"]


def test_a_type_derived_from_a_normative_one_has_its_typed_properties(tmp_path: Path) -> None:
    """Unfurl 1.2.0 refuses ``port: abc`` on a template of ``Mine``, derived from a
    Database ('"abc" is not an integer.'), as on a Database itself; no name in the
    document says Database but the type's parent."""
    text = """\
spec:
  service_template:
    node_types:
      Mine: {derived_from: tosca.nodes.Database}
      MyServer: {derived_from: tosca.nodes.DBMS}
    topology_template:
      node_templates:
        db: {type: Mine, properties: {port: abc}, requirements: [{host: server}]}
        server: {type: MyServer, requirements: [{host: vm}]}
        vm: {type: tosca.nodes.Compute}
"""
    assert [p.message for p in problems_in(tmp_path, text)] == [
        '"abc" is not an integer. in node template "db"']
