"""What a platform engineer who knows Cloudify tries after the seeds: operations of a
hosted instance see their own host, connected nodes stay healthy when one of their
targets is scaled in, rolled back or removed by an update, execute_operation of an
operation every node's interface type declares does nothing where it is not mapped."""

from __future__ import annotations

import json

from tests.plan.test_workflows import deployed, ensemble, node, ok, ran, rel_op, reset, respec

SCALABLE = {"scalable": {"properties": {"default_instances": 2, "max_instances": 5}}}


LINK = {
    "type": "cloudify.relationships.connected_to",
    "interfaces": {
        "Configure": {"operations": {n: rel_op(n) for n in ("add_target", "remove_target")}}
    },
}


def _hosted(standard=("create", "delete")) -> dict:
    body = node(standard=standard, requirements=[{"host": "vm"}])
    body["interfaces"]["Standard"]["operations"]["create"] = (
        'echo "{{ SELF.name }} on {{ HOST.name }}" >> ops.log')
    return body


def test_a_hosted_instance_sees_its_own_host_instance(project, invoke):
    vm = {**node(standard=("create", "delete")), "capabilities": SCALABLE}
    project.write("jobs/*.log\nops.log\n", name=".gitignore")
    project.write(ensemble({"vm": vm, "app": _hosted()}))
    ok(invoke("deploy", "--approve"))
    assert sorted(line for line in ran(project) if " on " in line) == [
        "app on vm", "app_1 on vm_1"]
    reset(project)
    ok(invoke("scale", "vm", "--approve"))
    assert "app_2 on vm_2" in ran(project)
    reset(project)
    ok(invoke("heal", "app_1", "--force-reinstall", "--approve"))
    assert "app_1 on vm_1" in ran(project)


def _effective(project, name: str) -> str:
    ready = project.status()[name]["readyState"]
    return ready.get("effective", ready["local"])


def _connected(project, invoke) -> None:
    worker = {**node(standard=("create", "delete")), "capabilities": SCALABLE}
    lb = node(standard=("create",), requirements=[{"backend": {"node": "worker",
                                                                "relationship": LINK}}])
    deployed(project, invoke, {"worker": worker, "lb": lb})


def test_scaling_in_a_target_leaves_its_connected_node_healthy(project, invoke):
    _connected(project, invoke)
    ok(invoke("scale", "worker", "--delta", "-1", "--approve"))
    assert ran(project)[0] == "lb->worker_1 remove_target"
    assert _effective(project, "lb") == "ok"
    result = ok(invoke("status", "--json"))
    assert "error" not in json.dumps(json.loads(result.stdout)["instances"])


def test_a_rolled_back_scale_out_leaves_the_connected_node_as_it_was(project, invoke):
    _connected(project, invoke)
    before = project.status()["lb"]
    respec(project, {
        "worker": {**node(standard=("create", "delete")), "capabilities": SCALABLE},
        "lb": node(standard=("create",), requirements=[{"backend": {
            "node": "worker", "relationship": LINK}}]),
    })
    text = project.ensemble.read_text()
    failing = text.replace('create: echo "{{ SELF.name }} create" >> ops.log',
                           'create: test {{ SELF.name }} != worker_3 && '
                           'echo "{{ SELF.name }} create" >> ops.log')
    assert failing.count("!= worker_3") == 2  # worker's and lb's create
    project.write(failing)
    result = invoke("scale", "worker", "--delta", "2", "--approve")
    assert result.exit_code == 64, result.output
    assert "lb->worker_2 remove_target" in ran(project)  # the rollback unlinked it
    assert set(project.status()) == {"worker", "worker_1", "lb"}
    assert _effective(project, "lb") == "ok"
    ready = project.status()["lb"]["requirements"][0]["backend"]["readyState"]
    assert ready == before["requirements"][0]["backend"]["readyState"]


def test_an_update_that_drops_a_requirement_drops_its_relationship(project, invoke):
    templates = {
        "db": node(standard=("create", "delete")),
        "app": node(standard=("create",), requirements=[{"database": {
            "node": "db", "relationship": LINK}}]),
    }
    deployed(project, invoke, templates)
    respec(project, {"app": node(standard=("create",))})
    ok(invoke("update", "--approve"))
    assert ran(project)[:2] == ["app->db remove_target", "db delete"]
    assert set(project.status()) == {"app"}
    assert "requirements" not in project.status()["app"]
    assert _effective(project, "app") == "ok"


def test_execute_operation_of_a_lifecycle_operation_no_node_maps_does_nothing(project, invoke):
    """Every TOSCA node's type declares the Standard interface (tosca.nodes.Root; Unfurl's
    adds Install), and
    every Cloudify node's its lifecycle, validation and monitoring interfaces
    (cloudify.nodes.Root): an operation of those that a node does not map does nothing."""
    deployed(project, invoke, {
        "db": node(standard=("create",)),
        "app": node(standard=("create", "configure"), requirements=[{"dependency": "db"}]),
    })
    for name in ("Standard.configure", "cloudify.interfaces.lifecycle.configure"):
        result = ok(invoke("execute-operation", name, "--approve"))
        assert f"db: nothing to run: {name} has no implementation" in result.output
        assert ran(project) == ["app configure"]
        reset(project)
    for name in ("cloudify.interfaces.lifecycle.poststart",
                 "cloudify.interfaces.validation.check_status",
                 "cloudify.interfaces.monitoring.start", "Standard.stop",
                 "Install.discover", "unfurl.interfaces.Install.restart"):
        result = ok(invoke("execute-operation", name, "--approve"))
        assert ran(project) == [], name
    refused = invoke("execute-operation", "Maintenance.backup", "--approve")
    assert refused.exit_code == 1 and "has no operation" in refused.output


def test_parameter_errors_name_the_workflow_typed_and_point_dry_run_at_its_flag(project, invoke):
    deployed(project, invoke, {"db": node(standard=("create", "delete"))})
    result = invoke("uninstall", "-p", "ignore_falure=true", "--approve")
    assert result.exit_code == 2
    assert "unknown parameter 'ignore_falure' for uninstall: did you mean 'ignore_failure'?" \
        in result.output
    for command in (("uninstall",), ("execute-operation", "Standard.create"), ("heal",)):
        result = invoke(*command, "-p", "dry_run=true", "--approve")
        assert result.exit_code == 2 and "give --dry-run" in result.output, result.output
    assert ran(project) == []
