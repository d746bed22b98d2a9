"""Two of Unfurl 1.2.0's status rules: an attribute default a task reads is recorded as
the instance's own (tests/data/unfurl-cases/143-docs-node-type-override), and a deploy not
limited to some instances runs only those whose priority is ``required``
(165-docs-status-priority-optional)."""

from __future__ import annotations

from tests.conftest import ENSEMBLE_HEAD, Project, run_in_process

JOB = ("deploy", "--approve", "--dirty=ok")

TYPES = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Noted:
        derived_from: tosca.nodes.Root
        properties:
          level: {type: integer, default: 1}
        attributes:
          note: {type: string, default: from-type}
          unread: {type: string, default: never-read}
          empty: {type: string}
    topology_template:
      node_templates:
        kid:
          type: Noted
          interfaces:
            Standard:
              create: echo "{{ SELF.note }} {{ SELF.level }} {{ SELF.empty }}"
        other:
          type: Noted
          interfaces:
            Standard:
              create: echo "{{ '::kid::unread' | eval }}"
        untouched:
          type: Noted
          interfaces:
            Standard:
              create: echo nothing read
"""


def test_an_attribute_default_a_task_reads_is_recorded(project: Project) -> None:
    project.write(TYPES)
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status = project.status()
    # read by its own task, and by another instance's task through a query; one without a
    # default is kept null, as Unfurl keeps it (unfurl-cases 192)
    assert status["kid"]["attributes"] == {"note": "from-type", "unread": "never-read",
                                           "empty": None}
    # a property is no attribute; an attribute never read is not kept
    assert "attributes" not in status["other"] and "attributes" not in status["untouched"]


def test_a_recorded_attribute_is_not_replaced_by_the_default(project: Project) -> None:
    project.write(TYPES)
    assert run_in_process(project.root, *JOB).returncode == 0
    text = project.ensemble.read_text().replace("note: from-type", "note: set-by-hand", 1)
    project.write(text.replace("default: from-type", "default: changed-default"))
    run_in_process(project.root, *JOB)
    assert project.status()["kid"]["attributes"]["note"] == "set-by-hand"


OPTIONAL = ENSEMBLE_HEAD + """\
        nice_to_have:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create:
                implementation: exit 1
                inputs:
                  done: {modified: true}
        must_have:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo needed
status:
  instances:
    nice_to_have:
      template: nice_to_have
      priority: optional
      readyState:
        local: pending
"""


def test_a_deploy_runs_only_required_instances(project: Project) -> None:
    project.write(OPTIONAL)
    plan = run_in_process(project.root, "plan")
    assert "nice_to_have: skipped: its priority is optional, not required" in plan.stdout
    proc = run_in_process(project.root, *JOB, "--jobexitcode", "error")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status = project.status()
    assert status["nice_to_have"]["readyState"] == {"local": "pending"}
    assert status["must_have"]["readyState"]["local"] == "ok"
    assert [line.split("\t")[3] for line in project.jobs_tsv()[1:]] == ["target=::must_have"]


def test_an_optional_instance_asked_for_by_name_runs_and_fails_degraded(
    project: Project,
) -> None:
    project.write(OPTIONAL)
    proc = run_in_process(project.root, *JOB, "--instance", "nice_to_have",
                          "--jobexitcode", "error")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert project.status()["nice_to_have"]["readyState"]["local"] == "degraded"
