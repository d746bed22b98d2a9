"""`unfurl plan`: ordered tasks with reasons, nothing run, text and JSON."""

from __future__ import annotations

import json

from tests.conftest import REFERENCE, ensemble_yaml


def test_plan_runs_nothing_and_orders_by_requirements(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    before = project.commits()
    result = invoke("plan")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Plan for deploy:"
    assert lines.index("  db (add)") < lines.index("  app (add)")
    assert "    2. Standard.configure [add] after 1" in lines
    assert project.commits() == before and not project.jobs_tsv()


def test_plan_json_is_machine_readable(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    data = json.loads(invoke("plan", "--json").output)
    assert data["workflow"] == "deploy"
    assert [(t["target"], t["operation"], t["reason"], t["after"]) for t in data["tasks"]] == [
        ("db", "Standard.create", "add", []),
        ("app", "Standard.configure", "add", [1]),
    ]
    assert data["new_instances"] == ["app", "db"]


def test_unfurl_written_ensemble_loads_validates_and_plans(project, invoke):
    project.write((REFERENCE / "ensemble.after.yaml").read_text())
    assert invoke("validate").exit_code == 0
    deploy = invoke("plan")
    assert "nothing to do" in deploy.output and "db: skipped: already ok" in deploy.output
    undeploy = invoke("plan", "--workflow", "undeploy")
    assert "1. Standard.delete [undeploy]" in undeploy.output
    assert "app: skipped: no delete operation" in undeploy.output


def test_undeploy_plan_is_the_reverse_of_deploy(project, invoke):
    project.write(ensemble_yaml("""\
a: {type: tosca.nodes.Root, interfaces: {Standard: {create: "true", delete: "true"}}}
b:
  type: tosca.nodes.Root
  requirements: [{host: a}]
  interfaces: {Standard: {create: "true", delete: "true"}}
c:
  type: tosca.nodes.Root
  requirements: [{dependency: {node: b}}]
  interfaces: {Standard: {create: "true", delete: "true"}}
"""))
    assert invoke("deploy", "-a").exit_code == 0
    data = json.loads(invoke("plan", "-w", "undeploy", "--json").output)
    assert [t["target"] for t in data["tasks"]] == ["c", "b", "a"]
    assert [t["after"] for t in data["tasks"]] == [[], [1], [2]]


def test_unknown_status_plans_a_check_first(project, invoke):
    project.write(ensemble_yaml("""\
db:
  type: tosca.nodes.Root
  interfaces:
    Standard: {create: "true"}
    Install: {check: "true"}
""") + """\
status:
  instances:
    db:
      template: db
      readyState: {local: unknown, state: created}
""")
    data = json.loads(invoke("plan", "--json").output)
    assert [(t["operation"], t["reason"]) for t in data["tasks"]] == [
        ("Install.check", "check"), ("Standard.create", "add")]  # as 03b: never changed
    assert data["tasks"][1]["skipWhen"] == "ok"
    result = invoke("deploy", "-a")
    assert result.exit_code == 0, result.output
    # as Unfurl (tests/data/unfurl120/03b-unknown-status-deploy): a check that reports no
    # status leaves the instance unknown, so create runs
    assert "skipped: already ok" not in result.output
    assert project.local("db") == "ok"
