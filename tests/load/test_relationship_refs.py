"""``get_attribute``/``get_property`` in the relationships requirements use (a relationship
template named, a relationship type named, one written inline, one a node type declares)
are refused at validate where Unfurl 1.2.0 refuses them at load, in its words; before,
only an inline relationship's own operations were judged, and ``SELF`` there not at all.
Each probe was run with Unfurl 1.2.0 (``unfurl --home '' validate``, tenth sitting);
``test_unfurl_still_answers_so`` re-asks it when Unfurl 1.2.0 is installed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, git, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

HEAD = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      MyDb:
        derived_from: tosca.nodes.Root
        properties:
          port: {type: integer}
      App:
        derived_from: tosca.nodes.Root
        requirements:
          - db: {node: MyDb, relationship: MyRel}
    relationship_types:
      MyRel:
        derived_from: tosca.relationships.Root
        properties:
          relprop: {type: string, default: hi}
          unset: {type: string, required: false}
"""
ON_TYPE = """\
        interfaces:
          Configure:
            post_configure_source:
              implementation: echo "x={{ inputs.x }}"
              inputs:
                x: VALUE
"""
LINK = """\
      relationship_templates:
        link:
          type: MyRel
          PROPERTIES
          interfaces:
            Configure:
              post_configure_source:
                implementation: echo "x={{ inputs.x }}"
                inputs:
                  x: VALUE
"""
TEMPLATES = """\
      node_templates:
        mydb:
          type: MyDb
          properties: {port: 5432}
        app:
          type: App
"""


def ensemble(where: str, value: str, properties: str = "{}") -> str:
    """``value`` as an input of the relationship's operation: on its type (used by the
    type's own requirement declaration, or named by the template), on a relationship
    template the requirement names, or on one nothing uses."""
    text = HEAD + (ON_TYPE.replace("VALUE", value) if where in ("type", "named") else "")
    text += "    topology_template:\n"
    if where in ("template", "unused"):
        text += LINK.replace("VALUE", value).replace("PROPERTIES", f"properties: {properties}")
    text += TEMPLATES
    if where == "named":
        text += "          requirements:\n            - db: {node: mydb, relationship: MyRel}\n"
    if where == "template":
        text += "          requirements:\n            - db: {node: mydb, relationship: link}\n"
    return text


MISSING_ATTRIBUTE = 'Attribute "nosuch" was not found in node template "{}"'
MISSING_PROPERTY = ('get_property function referencing property "nosuch" not found in node '
                    'template "{}"')
SELF_ATTRIBUTE = 'Node template "SELF" was not found'

#: (where, the input's value, Unfurl 1.2.0's words or None)
PROBES = [
    ("type", "{get_attribute: [TARGET, nosuch]}", MISSING_ATTRIBUTE.format("mydb")),
    ("named", "{get_attribute: [SOURCE, nosuch]}", MISSING_ATTRIBUTE.format("app")),
    ("template", "{get_property: [TARGET, nosuch]}", MISSING_PROPERTY.format("mydb")),
    ("template", "{get_attribute: [mydb, nosuch]}", MISSING_ATTRIBUTE.format("mydb")),
    ("type", "{get_property: [SELF, nosuch]}", MISSING_PROPERTY.format("db")),
    ("template", "{get_property: [SELF, nosuch]}", MISSING_PROPERTY.format("link")),
    ("named", "{get_attribute: [SELF, relprop]}", SELF_ATTRIBUTE),
    # what the relationship, its ends and the templates have
    ("type", "{get_attribute: [TARGET, port]}", None),
    ("named", "{get_attribute: [SOURCE, tosca_id]}", None),
    ("template", "{get_property: [SELF, relprop]}", None),
    ("template", "{get_property: [SELF, unset]}", None),
    ("named", "{get_property: [SOURCE, tosca_id]}", MISSING_PROPERTY.replace(
        "nosuch", "tosca_id").format("app")),  # an attribute, not a property
    # a relationship template no requirement uses: not judged
    ("unused", "{get_attribute: [TARGET, nosuch]}", None),
    ("unused", "{get_property: [SELF, nosuch]}", None),
]
IDS = [f"probe{i}" for i in range(len(PROBES))]


@pytest.mark.parametrize(("where", "value", "refused"), PROBES, ids=IDS)
def test_refused_where_unfurl_refuses_it(where: str, value: str, refused: str | None) -> None:
    found = [p.message for p in semantic_problems(parse(ensemble(where, value), "e.yaml"),
                                                  "e.yaml")]
    if refused is None:
        assert found == []
    else:
        assert len(found) == 1 and refused in found[0], found


@pytest.mark.parametrize("function", ["{get_attribute: [TARGET, port]}",
                                      "{get_property: [SOURCE, tosca_id]}",
                                      "{get_property: [SELF, relprop]}"])
def test_an_end_read_in_a_relationships_properties_is_refused_by_name(function: str) -> None:
    """Unfurl 1.2.0 cannot load it: "'CommentedMap' object has no attribute
    'type_definition'" (or 'get_properties'), a traceback's words, not a verdict."""
    text = ensemble("template", "hi", properties="{unset: " + function + "}")
    (found,) = semantic_problems(parse(text, "e.yaml"), "e.yaml")
    assert "in a relationship's properties (property 'unset' of relationship 'link') is " \
        "not supported: Unfurl 1.2.0 cannot load it" in found.message
    assert found.path is not None and found.path.endswith("link.properties.unset")
    named = ensemble("template", "hi", properties="{unset: {get_property: [mydb, port]}}")
    assert semantic_problems(parse(named, "e.yaml"), "e.yaml") == []


def test_the_refusal_is_where_the_input_is_written(project: Project, invoke: Invoke) -> None:
    project.write(ensemble("template", "{get_attribute: [TARGET, nosuch]}"))
    result = invoke("validate")
    assert result.exit_code == 1
    line = project.ensemble.read_text().splitlines().index(
        "                  x: {get_attribute: [TARGET, nosuch]}") + 1
    assert f"ensemble.yaml:{line}:" in result.output
    assert MISSING_ATTRIBUTE.format("mydb") in result.output


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("where", "value", "refused"), PROBES, ids=IDS)
def test_unfurl_still_answers_so(tmp_path: Path, where: str, value: str,
                                 refused: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(where, value))
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == (1 if refused else 0), output
    if refused:
        assert refused in output, output
