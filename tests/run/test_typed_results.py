"""Values a task sets are checked against the types their names declare, as Unfurl 1.2.0:
a value the type refuses fails the task ("Validation failure while evaluating ..."), the
value is kept and the instance's status is unknown (case 152); a value that fits, or a
name nothing declares, is set as before."""

from __future__ import annotations

import pytest

from tests.conftest import SERVICE_HEAD

HEAD = SERVICE_HEAD + """\
    node_types:
      acme.Typed:
        derived_from: tosca.nodes.Root
        properties:
          settings: {type: map, required: false}
        attributes:
          port: {type: integer}
          tags: {type: list, entry_schema: {type: string}}
    topology_template:
      node_templates:
        app:
          type: acme.Typed
          interfaces:
            Standard:
              configure:
                implementation: Template
                inputs:
                  resultTemplate:
                    attributes:
"""


@pytest.mark.parametrize(("name", "value", "words"), [
    ("settings", "'blue-3'", '"blue-3" is not a map.'),  # a property's type
    ("port", "'eighty'", '"eighty" is not an integer.'),  # an attribute's
    ("tags", "[a, 3]", '"3" is not a string.'),  # an entry of a list
])
def test_a_value_its_type_refuses_fails_the_task(project, invoke, name, value, words):
    project.write(HEAD + f"                      {name}: {value}\n")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64, result.output
    assert f'Validation failure while evaluating "{name}" on "app": {words}' in result.output
    status = project.status()["app"]
    assert status["readyState"] == {"local": "unknown", "state": "configuring"}
    assert name in status["attributes"]  # kept, as Unfurl keeps it
    assert "created" not in status
    assert project.jobs_tsv()[1].split("\t")[2] == "status=error"


def test_values_that_fit_their_types_are_set(project, invoke):
    project.write(HEAD + "                      settings: {color: blue}\n"
                  "                      port: '8080'\n"
                  "                      tags: [a, b]\n"
                  "                      free: 3\n")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["app"]["attributes"] == {
        "settings": {"color": "blue"}, "port": "8080", "tags": ["a", "b"], "free": 3}
