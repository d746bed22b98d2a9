"""Cloudify's install, uninstall and execute_operation as the seed describes them: every
instance ends started after install, a dry run of any workflow simulates every task, and
execute_operation's kwargs may not redefine an operation's inputs unless allowed."""

from __future__ import annotations

import pytest

from tests.plan.test_workflows import deployed, ensemble, node, ok, op, ran, rel_op


def test_install_leaves_instances_without_start_started(project, invoke):
    project.write(ensemble({
        "db": node(standard=("create",)),
        "app": node(standard=("create", "configure"), requirements=[{"dependency": "db"}]),
        "cfg": node(standard=()),  # no operation at all
    }))
    ok(invoke("install", "--approve"))
    assert {n: project.state(n) for n in ("db", "app", "cfg")} == dict.fromkeys(
        ("db", "app", "cfg"), "started")
    assert {n: project.local(n) for n in ("db", "app", "cfg")} == dict.fromkeys(
        ("db", "app", "cfg"), "ok")


def test_deploy_keeps_unfurls_states(project, invoke):
    project.write(ensemble({"db": node(standard=("create",))}))
    ok(invoke("deploy", "--approve"))
    assert project.state("db") == "created"  # as Unfurl 1.2.0


def test_scale_out_instances_without_start_end_started(project, invoke):
    worker = node(standard=("create", "delete"))
    worker["capabilities"] = {"scalable": {"properties": {"max_instances": 3}}}
    deployed(project, invoke, {"worker": worker})
    ok(invoke("scale", "worker", "--approve"))
    assert project.state("worker_1") == "started"


WORKFLOWS = [
    ("install", "--force"), ("uninstall",), ("deploy", "--force"), ("heal",),
    ("heal", "--force-reinstall"), ("scale", "db"), ("update", "--workflow-id", "uninstall"),
    ("start",), ("stop",), ("restart",), ("execute-operation", "Standard.configure"),
]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: "-".join(w))
def test_dry_run_on_every_cloudify_workflow_simulates_every_task(project, invoke, workflow):
    db = node()
    db["capabilities"] = {"scalable": {"properties": {"max_instances": 3}}}
    deployed(project, invoke, {"db": db, "app": node(requirements=[{"dependency": "db"}])})
    before = project.ensemble.read_text()
    commits = project.commits()
    result = invoke(*workflow, "--dry-run", "--approve", "--json")
    if workflow[0] == "deploy":  # Unfurl's own deploy: a command without a dry-run form fails
        assert result.exit_code == 64, result.output
        return
    assert result.exit_code == 0, result.output
    import json

    tasks = json.loads(result.stdout)["tasks"]
    assert tasks and all(t["state"] in ("succeeded", "skipped") for t in tasks), tasks
    assert ran(project) == []  # nothing ran
    assert project.ensemble.read_text() == before and project.commits() == commits


def test_execute_operation_kwargs_may_not_redefine_inputs_by_default(project, invoke):
    app = node(standard=("create",))
    app["interfaces"]["Standard"]["operations"]["configure"] = {
        "implementation": {"className": "Shell"},
        "inputs": {"command": op("configure") + " {{ inputs.port }}", "port": 80}}
    deployed(project, invoke, {"app": app})
    result = invoke("execute-operation", "Standard.configure", "--operation-kwargs",
                    '{"port": 8080}', "--approve")
    assert result.exit_code == 1, result.output
    assert "duplicate definition of 'port'" in result.output
    assert "--allow-kwargs-override" in result.output and ran(project) == []
    ok(invoke("execute-operation", "Standard.configure", "--operation-kwargs",
              '{"port": 8080}', "--allow-kwargs-override", "--approve"))
    assert ran(project) == ["app configure 8080"]
    ok(invoke("execute-operation", "-p", "operation=Standard.configure",
              "-p", "operation_kwargs={extra: 1}", "--approve"))  # a new input is fine
    result = invoke("execute-operation", "-p", "operation=Standard.configure",
                    "-p", "operation_kwargs={port: 1}", "-p", "allow_kwargs_override=false",
                    "--approve")
    assert result.exit_code == 1


def test_start_and_stop_parms_may_redefine_inputs(project, invoke):
    app = node(standard=("create",))
    app["interfaces"]["Standard"]["operations"]["start"] = {
        "implementation": {"className": "Shell"},
        "inputs": {"command": op("start") + " {{ inputs.mode }}", "mode": "normal"}}
    deployed(project, invoke, {"app": app})
    ok(invoke("start", "--operation-parms", '{"mode": "safe"}', "--approve"))
    assert ran(project) == ["app start safe"]


def _two_sided(target_interfaces: dict) -> dict:
    lifecycle = "cloudify.interfaces.relationship_lifecycle"
    source = {n: rel_op(f"source {n}") for n in ("preconfigure", "establish", "unlink")}
    return {
        "db": node(standard=("create", "delete")),
        "app": node(requirements=[{"database": {"node": "db", "relationship": {
            "type": "cloudify.relationships.connected_to",
            "interfaces": {lifecycle: {"operations": source}},
            "target_interfaces": target_interfaces}}}]),
    }


def test_relationship_lifecycle_on_the_target_side_runs_on_the_target(project, invoke):
    """Cloudify's target_interfaces: each step runs the source's operation, then the
    target's, relationship by relationship, as the seed orders the lifecycle."""
    import json

    lifecycle = "cloudify.interfaces.relationship_lifecycle"
    target = {lifecycle: {"operations": {
        n: rel_op(f"target {n}") for n in ("preconfigure", "postconfigure", "establish", "unlink")
    }}}
    project.write(ensemble(_two_sided(target)))
    ok(invoke("validate"))
    result = ok(invoke("install", "--approve", "--json"))
    assert ran(project) == [
        "db create", "app create", "app->db source preconfigure", "app->db target preconfigure",
        "app configure", "app->db target postconfigure", "app start",
        "app->db source establish", "app->db target establish",
    ]
    ran_on = {t["operation"]: t["target"] for t in json.loads(result.stdout)["tasks"]
              if "RelationshipLifecycle" in t["operation"] and t["target"] == "db"}
    assert set(ran_on) == {f"RelationshipLifecycle.{n}" for n in (
        "preconfigure", "postconfigure", "establish")}  # each target-side one ran on db
    (project.root / "ops.log").unlink()
    ok(invoke("uninstall", "--approve"))
    assert ran(project) == ["app stop", "app->db source unlink", "app->db target unlink",
                            "app delete", "db delete"]


def test_target_side_operations_with_a_tosca_form_are_refused_by_name(project, invoke):
    target = {"Configure": {"operations": {"add_source": "true"}}}
    project.write(ensemble(_two_sided(target)))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "interface 'Configure' in `target_interfaces` is not supported" in result.output
    assert "add_source" in result.output  # the TOSCA form to use instead
    lifecycle = "cloudify.interfaces.relationship_lifecycle"
    project.write(ensemble(_two_sided({lifecycle: {"operations": {"connect": "true"}}})))
    result = invoke("validate")
    assert result.exit_code == 1 and "unknown operation 'connect'" in result.output


def test_an_operation_declared_but_not_mapped_does_nothing(project, invoke):
    """Seed: executing an operation a node declares without mapping it to an
    implementation does nothing; one it does not declare at all is an error."""
    app = node(standard=("create",))
    app["interfaces"]["Standard"]["operations"]["configure"] = {"inputs": {"x": 1}}
    deployed(project, invoke, {"app": app})
    result = ok(invoke("execute-operation", "Standard.configure", "--approve"))
    assert "nothing to run: Standard.configure has no implementation" in result.output
    assert ran(project) == []
    refused = invoke("execute-operation", "Maintenance.backup", "--approve")
    assert refused.exit_code == 1 and "has no operation" in refused.output
