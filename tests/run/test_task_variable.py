"""The ``task`` variable in operation inputs and resultTemplates, with the keys Unfurl's
TaskView gives templates (tests/data/unfurl-cases/34-interface-defaults: Unfurl 1.2.0 runs
``echo running {{ task.operation }}`` for each operation)."""

from __future__ import annotations

from tests.conftest import ensemble_yaml

SPEC = ensemble_yaml("""\
node:
  type: tosca.nodes.Root
  interfaces:
    defaults:
      implementation: Shell
      inputs:
        command: "echo {{ task.operation }}/{{ task.reason }}/{{ task.target }}/{{ task.workflow }}"
        resultTemplate:
          attributes:
            last: "{{ task.operation }}: {{ stdout | trim }}"
    Standard:
      operations:
        create:
        configure:
""")


def test_templates_see_the_task(project, invoke):
    project.write(SPEC)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["node"]["attributes"] == {
        "last": "configure: configure/add/node/deploy"}
    assert "create/add/node/deploy" in (project.root / "jobs.tsv").read_text() or any(
        "create/add/node/deploy" in p.read_text() for p in (project.root / "jobs").glob("*"))
