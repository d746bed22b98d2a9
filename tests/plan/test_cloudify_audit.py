"""What a platform engineer who knows Cloudify tries after the seeds: operations of a
hosted instance see their own host, connected nodes stay healthy when one of their
targets is scaled in, rolled back or removed by an update, execute_operation of an
operation every node's interface type declares does nothing where it is not mapped."""

from __future__ import annotations

from tests.plan.test_workflows import deployed, node, ok, ran, reset


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
