"""A node template with Unfurl's ``imported: ENSEMBLE:TEMPLATE`` key is one Unfurl 1.2.0
selects from another ensemble (NodeSpec.abstract: "select"): none is imported here, so it
is left out of every job, as Unfurl leaves it (unfurl-cases 285); it used to be deployed
as a plain template."""

from __future__ import annotations

from tests.conftest import Invoke, Project, safe_load

ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
        shared_db:
          type: tosca.nodes.Root
          imported: production:db
          interfaces:
            Standard:
              configure: echo configured the shared db
        app:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure: echo configured app
"""


def test_an_imported_template_is_selected_and_never_deployed(project: Project,
                                                             invoke: Invoke) -> None:
    project.write(ENSEMBLE)
    plan = invoke("plan")
    assert plan.exit_code == 0, plan.output
    assert "could not find external instance for template shared_db" in plan.output
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "1 task" in result.output
    instances = safe_load(project.ensemble.read_text())["status"]["instances"]
    assert list(instances) == ["app"]
