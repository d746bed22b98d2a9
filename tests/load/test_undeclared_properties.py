"""A property a template sets that its type does not declare is not one, as in Unfurl 1.2.0
(recorded: tests/data/unfurl-cases/168, 187, 205, 206): ``SELF.x`` is missing, ``::t::x``
null, and ``get_property`` naming it is refused when the ensemble loads, with Unfurl's
words (a template typed directly with a normative type keeps them: a deliberate
difference). What a type declares: the document's types, TOSCA's normative ones and Unfurl's own
(as its TOSCA 1.3 definitions and tosca-ext.yaml declare them); ``metadata:
{additionalProperties: true}`` on the template or its nearest type with metadata (Unfurl's
``unfurl.nodes.Generic``) keeps them all; a type not known here keeps them too."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse
from unfurl_lite.model.lineage import (
    NORMATIVE_DEFAULTS,
    NORMATIVE_PROPERTIES,
    normative_values,
    undeclared_properties,
)

NAMES = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


def test_each_normative_type_declares_what_unfurl_declares() -> None:
    assert undeclared_properties(("tosca.nodes.Root",), {}, {}, ("x",)) == {"x"}
    assert undeclared_properties(("Root",), {}, {}, ("x",)) == {"x"}  # Unfurl's short name
    assert undeclared_properties(("tosca.nodes.DBMS",), {}, {},
                                 ("port", "component_version", "x")) == {"x"}
    assert undeclared_properties(("tosca:BlockStorage",), {}, {},
                                 ("name", "size", "volume_id", "snapshot_id", "x")) == {"x"}
    assert undeclared_properties(("unfurl.nodes.Generic",), {}, {}, ("x",)) == frozenset()
    assert undeclared_properties(("unfurl.nodes.Default",), {}, {}, ("x",)) == frozenset()
    assert undeclared_properties(("cloudify.nodes.Root",), {}, {}, ("x",)) == frozenset()


@given(st.sampled_from(sorted(NORMATIVE_PROPERTIES)), st.sets(NAMES), st.sets(NAMES))
def test_a_type_of_the_document_adds_to_its_normative_parent(
        parent: str, declared: set[str], given_names: set[str]) -> None:
    chain = ("Mine", parent)
    found = undeclared_properties(chain, dict.fromkeys(declared), {"Mine": {}}, given_names)
    if NORMATIVE_PROPERTIES[parent][2] or parent == "unfurl.nodes.Default":
        assert found == frozenset()
        return
    inherited: set[str] = set()
    name: str | None = parent
    while name is not None:
        name, own, _ = NORMATIVE_PROPERTIES[name]
        inherited.update(own)
    assert found == given_names - declared - inherited
    # additionalProperties on the template, or on the type, keeps every one
    assert undeclared_properties(chain, {}, {"Mine": {}}, given_names,
                                 {"additionalProperties": True}) == frozenset()
    assert undeclared_properties(chain, {}, {"Mine": {"additionalProperties": True}},
                                 given_names) == frozenset()


def test_the_nearest_metadata_decides() -> None:
    """tosca-parser reads the template's metadata, else the nearest type that has one: a
    type with metadata but no additionalProperties closes what an ancestor opened."""
    chain = ("Closed", "unfurl.nodes.Generic")
    assert undeclared_properties(chain, {}, {"Closed": {"owner": "me"}}, ("x",)) == {"x"}
    assert undeclared_properties(chain, {}, {"Closed": {}}, ("x",)) == frozenset()
    assert undeclared_properties(("tosca.nodes.Root",), {}, {}, ("x",),
                                 {"additionalProperties": False}) == {"x"}


ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Closed:
        derived_from: tosca.nodes.Root
      Open:
        derived_from: tosca.nodes.Root
        metadata: {additionalProperties: true}
    topology_template:
      outputs:
        out: {value: {get_property: [app, release]}}
      node_templates:
        app:
          type: TYPE
          properties:
            release: v1
          interfaces:
            Standard:
              configure:
                implementation: Template
                inputs:
                  query: {eval: .::release}
                  resultTemplate:
                    attributes:
                      seen: "{{ inputs.query }}"
                      direct: "{{ SELF.release }}"
                      after: never
"""


def test_get_property_of_an_undeclared_property_is_refused_as_unfurl(project, invoke):
    project.write(ENSEMBLE.replace("TYPE", "Closed"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert ('get_property function referencing property "release" not found in node '
            'template "app"') in result.output
    assert "additionalProperties" in result.output and "ensemble.yaml:13:" in result.output
    project.write(ENSEMBLE.replace("TYPE", "Open"))
    assert invoke("validate").exit_code == 0
    # typed directly tosca.nodes.Root: free-form properties kept (a deliberate difference)
    project.write(ENSEMBLE.replace("TYPE", "tosca.nodes.Root"))
    assert invoke("validate").exit_code == 0


def test_an_undeclared_property_is_not_seen_and_attributes_before_a_failure_are_kept(
        project, invoke):
    """The query finds nothing (null); ``SELF.release`` fails the resultTemplate there:
    what it set before (``seen``) is kept, as Unfurl keeps it, and the task fails."""
    project.write(ENSEMBLE.replace("TYPE", "Closed").replace(
        "      outputs:\n        out: {value: {get_property: [app, release]}}\n", ""))
    assert invoke("deploy", "--approve").exit_code == 64
    app = project.status()["app"]
    assert app["attributes"] == {"seen": None}
    assert app["readyState"] == {"local": "unknown", "state": "configuring"}
    row = project.jobs_tsv()[-1]
    # null digests as nothing, as Unfurl digests it (sha1 of no bytes)
    assert "\tdigestKeys=query\tdigestValue=da39a3ee5e6b4b0d3255bfef95601890afd80709\t" in row
    assert "\tdigestPut=::app::seen\t" in row


def test_normative_defaults_are_declared_and_reach_templates_of_derived_types(
        tmp_path: Path) -> None:
    """Unfurl 1.2.0's TOSCA 1.3 definitions give a few normative properties defaults
    (unfurl-cases 271, 273): a template of the type, or of a type of the document derived
    from it, reads them unless it sets its own."""
    for type_name, defaults in NORMATIVE_DEFAULTS.items():
        name: str | None = type_name
        declared: set[str] = set()
        while name is not None:
            name, own, _ = NORMATIVE_PROPERTIES[name]
            declared.update(own)
        assert set(defaults) <= declared, type_name
    assert normative_values(("Mine", "tosca.nodes.network.Port"))[0] == {
        "order": 0, "is_default": False}
    assert normative_values(("tosca:BlockStorage",))[0] == {"size": "0 MB", "name": ""}
    path = tmp_path / "ensemble.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            node_types:
              MyNet:
                derived_from: tosca.nodes.network.Network
            topology_template:
              node_templates:
                net: {type: MyNet, properties: {ip_version: 6}}
                port: {type: tosca.nodes.network.Port}
        """))
    templates = load_ensemble(path).topology.templates
    assert templates["net"].properties == {"ip_version": 6, "dhcp_enabled": True}
    assert templates["port"].properties == {"order": 0, "is_default": False}


def test_get_property_of_self_in_a_relationship_reads_the_relationship() -> None:
    """In a requirement's relationship, SELF is the relationship (tosca-parser's context):
    its own property is read, as Unfurl 1.2.0 does (run with it: `echo hello`), so the
    source template's type not declaring it is no reason to refuse."""
    text = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    relationship_types:
      MyConn:
        derived_from: tosca.relationships.DependsOn
        properties:
          x: {type: string, default: d}
    node_types:
      App:
        derived_from: tosca.nodes.Root
    topology_template:
      node_templates:
        b:
          type: tosca.nodes.Root
        a:
          type: App
          requirements:
            - dependency:
                node: b
                relationship:
                  type: MyConn
                  properties:
                    x: hello
                  interfaces:
                    Configure:
                      operations:
                        pre_configure_source:
                          implementation: echo {{ inputs.v }}
                          inputs:
                            v: {get_property: [SELF, x]}
"""
    assert semantic_problems(parse(text, "e.yaml"), "e.yaml") == []
