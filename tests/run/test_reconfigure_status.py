"""A deploy's reconfigure (what an operation read changed) as Unfurl 1.2.0 records it: no
workflow step ends with it, so only what the operation did counts (unfurl-cases 327-332)."""

from __future__ import annotations

import pytest

from tests.conftest import Project, run_in_process

JOB = ("deploy", "--approve", "--dirty=ok")


def node(done: str, result_template: str = "") -> str:
    return f"""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Svc:
        derived_from: tosca.nodes.Root
        properties:
          level: {{type: integer}}
    topology_template:
      node_templates:
        svc:
          type: Svc
          properties:
            level: 1
          interfaces:
            Standard:
              configure:
                implementation: Template
                inputs:
                  run: "{{{{ SELF.level }}}}"
                  done: {done}{result_template}
"""


@pytest.mark.parametrize(("done", "result_template", "changed"), [
    ("{status: ok}", "", False),
    ("{}", "", False),
    ("{status: ok, modified: true}", "", True),
    ("{status: ok}", "\n                  resultTemplate: {attributes: {seen: '{{ run }}'}}", True),
    ("{status: \"{{ 'degraded' if SELF.level == 2 else 'ok' }}\"}", "", True),
])
def test_a_reconfigure_is_changed_only_by_what_its_operation_did(
        project: Project, done: str, result_template: str, changed: bool) -> None:
    project.write(node(done, result_template))
    assert run_in_process(project.root, *JOB).returncode in (0, 64)
    first = project.status()["svc"]["lastConfigChange"]
    text = project.ensemble.read_text().replace("level: 1\n", "level: 2\n")
    project.write(text)
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode in (0, 64), proc.stdout + proc.stderr
    rows = project.jobs_tsv()
    assert "operation=configure" in rows[-1] and "reason" not in rows[-1].split("\t")[0]
    summary = next(f for f in rows[-2].split("\t") if f.startswith("summary="))
    assert ("1 changed" in summary) is changed, summary
    assert (project.status()["svc"]["lastConfigChange"] != first) is (
        changed and "degraded" not in done)
