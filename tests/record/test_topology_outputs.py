"""status.outputs: the topology's outputs evaluated after each job, as Unfurl 1.2.0 writes
them (tests/data/unfurl-cases/22-outputs/expected/deploy.ensemble.yaml); secrets stay
redacted."""

from __future__ import annotations

from tests.conftest import safe_load

SPEC = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      acme.Web:
        derived_from: tosca.nodes.Root
        properties:
          port: {type: integer}
    topology_template:
      outputs:
        url:
          value:
            concat: ["http://", {get_attribute: [web, host_name]}, ":",
                     {get_property: [web, port]}]
        port:
          value: {get_property: [web, port]}
        token:
          value: {get_env: OUTPUT_TOKEN}
      node_templates:
        web:
          type: acme.Web
          properties:
            port: 8080
          interfaces:
            Standard:
              create:
                implementation: Template
                inputs:
                  resultTemplate:
                    attributes:
                      host_name: example.org
"""


def test_outputs_are_evaluated_into_the_status(project, invoke, monkeypatch):
    monkeypatch.setenv("OUTPUT_TOKEN", "s3cret-out")
    project.write(SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    outputs = safe_load(project.ensemble.read_text())["status"]["outputs"]
    assert outputs["url"] == "http://example.org:8080"
    assert outputs["port"] == 8080
    assert outputs["token"] != "s3cret-out"
    assert "s3cret-out" not in project.ensemble.read_text()
