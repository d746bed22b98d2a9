"""Unfurl 1.2.0's rule for an instance with several operations in deploy and undeploy:
only its last task ends its workflow (status, lastConfigChange, created, "changed"), as
captured in tests/data/unfurl-cases/19-shell-lifecycle/expected/."""

from __future__ import annotations

from tests.conftest import ensemble_yaml

LIFECYCLE = ensemble_yaml("""\
web:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: echo creating web
      configure: echo configuring web
      start: echo starting web
      stop: echo stopping web
      delete: echo deleting web
""")


def rows(project):
    return [dict(f.split("=", 1) for f in line.split("\t")[1:]) | {"id": line.split("\t")[0]}
            for line in project.jobs_tsv()]


def test_only_the_last_task_of_a_deploy_sets_status_created_and_last_change(project, invoke):
    project.write(LIFECYCLE)
    assert invoke("deploy", "--approve").exit_code == 0
    job, create, configure, start = rows(project)
    assert "(1 changed, 3 ok," in job["summary"]
    assert "status pending)" in create["summary"]
    assert "status pending)" in configure["summary"]
    assert "status ok)" in start["summary"]
    assert create["previousId"] == configure["previousId"] == start["previousId"] == ""
    web = project.status()["web"]
    assert web["created"] == web["lastConfigChange"] == start["id"]


def test_undeploy_chains_delete_to_the_deploy_and_leaves_stop_out(project, invoke):
    project.write(LIFECYCLE)
    assert invoke("deploy", "--approve").exit_code == 0
    start = rows(project)[-1]
    assert invoke("undeploy", "--approve").exit_code == 0
    job, stop, delete = rows(project)[-3:]
    assert "(1 changed, 2 ok," in job["summary"]
    assert stop["previousId"] == ""
    assert "status ok)" in stop["summary"]
    assert delete["previousId"] == start["id"]
    assert "status absent)" in delete["summary"]
    assert project.status()["web"]["lastConfigChange"] == delete["id"]


def test_a_check_that_changes_an_attribute_changed_its_instance(project, invoke):
    """tests/data/unfurl-cases/47-check-sets-attribute: Unfurl counts it changed and makes
    it the instance's lastConfigChange."""
    project.write(ensemble_yaml("""\
watched:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: echo made
    Install:
      check:
        implementation: Shell
        inputs:
          command: echo 7
          resultTemplate:
            attributes:
              seen: "{{ stdout | trim }}"
"""))
    assert invoke("deploy", "--approve").exit_code == 0
    assert invoke("check", "--approve").exit_code == 0
    job, check = rows(project)[-2:]
    assert "(1 changed, 1 ok," in job["summary"]
    assert project.status()["watched"]["lastConfigChange"] == check["id"]
    assert invoke("check", "--approve").exit_code == 0  # the same value again: no change
    assert "(0 changed, 1 ok," in rows(project)[-2]["summary"]
