"""An instance's attributes and its template's properties are one namespace, as in Unfurl
1.2.0 (unfurl-cases 182): a resultTemplate that sets an attribute to the value of the
property of the same name changes nothing and records nothing; another value is recorded."""

from __future__ import annotations

import pytest

ENSEMBLE = """apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Web:
        derived_from: tosca.nodes.Root
        properties:
          port: {type: integer}
    topology_template:
      node_templates:
        web:
          type: Web
          properties:
            port: 8080
          interfaces:
            Standard:
              configure:
                implementation: Template
                inputs:
                  resultTemplate:
                    attributes:
                      port: %s
                      seen: "{{ SELF.port }}"
"""


@pytest.mark.parametrize(("written", "recorded"), [("8080", None), ("9090", 9090)])
def test_an_attribute_set_to_its_propertys_value_is_not_recorded(project, invoke, written,
                                                                  recorded):
    project.write(ENSEMBLE % written)
    assert invoke("deploy", "--approve").exit_code == 0
    attributes = project.status()["web"]["attributes"]
    assert attributes.get("port") == recorded and attributes["seen"] == 8080
    put = next(line for line in project.jobs_tsv() if "operation=configure" in line)
    assert ("::web::port" in put.split("digestPut=")[1].split("\t")[0]) == bool(recorded)
