"""An implementation's ``preConditions`` as Unfurl 1.2.0 checks them (tests/test_configurator.py;
unfurl-cases 410): a JSON schema the target's values (its attributes, then its
properties) must meet before the operation runs. One that fails is "could not run": the
task fails, nothing of its done or resultTemplate applies, its instance keeps its status
and digests nothing; one that passes digests every value the check read."""

from __future__ import annotations

from tests.conftest import Project, run_in_process
from tests.run.test_result_variables import rows  # jobs.tsv's task rows by target

ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Sized:
        derived_from: tosca.nodes.Root
        properties:
          size: {type: string}
          label: {type: string, default: x}
        interfaces:
          Standard:
            operations:
              configure:
                implementation:
                  className: Template
                  preConditions:
                    properties:
                      size: {pattern: "^[0-9]+$"}
                    required: [size]
                inputs:
                  resultTemplate:
                    attributes:
                      done_with: "{{ SELF.size }}"
    topology_template:
      node_templates:
        good:
          type: Sized
          properties: {size: "3"}
        bad:
          type: Sized
          properties: {size: big}
"""


def test_preconditions_gate_the_operation(project: Project) -> None:
    project.write(ENSEMBLE)
    proc = run_in_process(project.root, "deploy", "--approve", "--jobexitcode", "error")
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "invalid preconditions: 'big' does not match '^[0-9]+$' in size" in proc.stdout
    recorded = rows(project)
    assert recorded["good"]["status"] == "ok"
    assert recorded["good"]["digestKeys"] == "::good::label,::good::size"
    assert recorded["bad"]["status"] == "error"
    assert recorded["bad"]["digestKeys"] == ""
    assert project.local("good") == "ok"
    assert project.local("bad") == "pending"  # could not run: its status stays
    assert "done_with" not in (project.status()["bad"].get("attributes") or {})
