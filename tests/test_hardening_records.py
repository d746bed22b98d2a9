"""Issue 16 items 5-11: records that hostile names, torn files, kills at commit time, full
disks and read-only directories cannot forge, hide, leave uncommitted or half-written."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Invoke, Project, ensemble_yaml, git, shell_node

RECURSIVE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
metadata: &r {self: *r}
spec:
  service_template:
    topology_template:
      node_templates:
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create: echo hi
"""


def test_recursive_alias_is_refused_and_spec_kept(project: Project, invoke: Invoke) -> None:
    project.write(RECURSIVE)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "ensemble.yaml:3:11: recursive alias" in result.output
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1
    assert project.ensemble.read_text() == RECURSIVE
    assert not (project.root / "jobs.tsv").exists()


def test_recursive_alias_in_a_sequence_is_refused(project: Project, invoke: Invoke) -> None:
    project.write(RECURSIVE.replace("&r {self: *r}", "&r [1, *r]"))
    result = invoke("validate")
    assert result.exit_code == 1 and "recursive alias" in result.output


def test_shared_alias_is_not_recursive(project: Project, invoke: Invoke) -> None:
    project.write(RECURSIVE.replace("metadata: &r {self: *r}", "metadata: {a: &r {x: 1}, b: *r}"))
    assert invoke("validate").exit_code == 0
