"""Unfurl's lifecycle workflows as plans: deploy, undeploy, check and discover.

Deploy brings every instance to ``ok`` (adding, repairing, or reconfiguring what changed
since it last ran); undeploy takes them down, dependents first.
"""

from __future__ import annotations

from collections.abc import Sequence

from unfurl_lite.load.loader import Ensemble
from unfurl_lite.model import graph
from unfurl_lite.model.entities import (
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Status,
)
from unfurl_lite.plan import tosca
from unfurl_lite.plan.lifecycle import add_install_tasks, add_uninstall_tasks, implemented
from unfurl_lite.plan.tasks import (
    ADD,
    CHECK,
    DISCOVER,
    FORCE,
    RECONFIGURE,
    REPAIR,
    UNDEPLOY,
    Builder,
    Plan,
)
from unfurl_lite.plan.topology import instance_graph, planned_instances, select


def _deploy_reason(instance: Instance, force: bool) -> str | None:
    if force:
        return FORCE
    if instance.status == Status.ok:
        return None
    if instance.status in (Status.pending, Status.absent) or (
        instance.created is None
        and (instance.status == Status.unknown and instance.state in (None, NodeState.initial))
    ):
        return ADD
    return REPAIR


def _check_op(template: NodeTemplate) -> Operation | None:
    return implemented(template, "Install", "check")


def plan_deploy(
    ensemble: Ensemble, instance_names: Sequence[str] = (), force: bool = False
) -> Plan:
    instances = planned_instances(ensemble)
    deps = instance_graph(ensemble, instances)
    wanted = graph.closure(deps, select(instances, instance_names)) if instance_names else set(deps)
    builder = Builder("deploy")
    replaces = tosca.replacing(ensemble.spec, "deploy")
    recorded: dict[tuple[str, str], tuple[str, str]] = {}
    for name in graph.topological_order(deps):
        if name not in wanted:
            continue
        instance = instances[name]
        template = ensemble.topology.templates.get(instance.template)
        if template is None:
            builder.note(
                name, f"skipped: its template {instance.template!r} is no longer in the spec"
            )
            continue
        if instance.discovered and not force:
            builder.note(name, "skipped: discovered, not managed by deploy")
            continue
        reason = _deploy_reason(instance, force)
        after = [builder.last[d] for d in deps[name] if d in builder.last]
        if reason is None:
            changed = _configure_changed(ensemble, instance, template, recorded)
            if changed is None:
                builder.note(name, "skipped: already ok")
                continue
            op, since = changed
            from unfurl_lite.plan.baselines import environment_read

            read = environment_read(ensemble, name, op)
            also = f"; they read the environment variables {', '.join(read)}" if read else ""
            builder.note(name, f"reconfigure: the inputs of {op.qualified_name} changed since "
                               f"it last ran ({since}){also}")
            builder.add(name, template.name, op, RECONFIGURE, after,
                        running_state=NodeState.configuring, done_state=NodeState.configured,
                        done_status=Status.ok)
            continue
        if replaces and tosca.replace_lifecycle(
            replaces, builder, ensemble, instance, instances, after
        ):
            continue
        skip_when = None
        check = _check_op(template)
        if instance.status == Status.unknown and check is not None and not force:
            builder.add(name, template.name, check, CHECK, after)
            skip_when = Status.ok
        add_install_tasks(
            builder, ensemble, instance, instances, reason, after, skip_when, pass_through=False
        )
    # as Unfurl: a job that runs something records every instance it planned for, even one
    # with nothing to run (it stays pending); a job that runs nothing records none
    kept = wanted if builder.last else set()
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in kept}
    return builder.plan(new, force=force)


def _configure_changed(
    ensemble: Ensemble,
    instance: Instance,
    template: NodeTemplate,
    recorded: dict[tuple[str, str], tuple[str, str]],
) -> tuple[Operation, str] | None:
    """Unfurl's change detection: the configure operation (and the changeId of its last run)
    when the digest of its inputs, rendered now, differs from the one it last ran with.

    ``recorded`` caches the recorded digests, read only once an instance has a configure
    (as rendering inputs, its imports cost a cold plan that needs none)."""
    op = implemented(template, "Standard", "configure") or implemented(
        template, "Lifecycle", "configure"
    )
    if op is None or instance.discovered:
        return None
    from unfurl_lite.plan.baselines import deployed_digests, digest_now

    if not recorded:
        recorded.update(deployed_digests(ensemble) or {("", ""): ("", "")})
    last = recorded.get((instance.name, op.qualified_name))
    if last is None or not last[1]:
        return None
    now = digest_now(ensemble, instance.name, op)
    return (op, last[0]) if now is not None and now != last[1] else None


def is_removable(instance: Instance, destroy_discovered: bool = False) -> str | None:
    """Why undeploy leaves an instance alone, or None when it should be removed."""
    if instance.status == Status.absent or instance.state == NodeState.deleted:
        return "skipped: already absent"
    if instance.status == Status.pending and instance.state in (None, NodeState.initial):
        return "skipped: never deployed"
    if instance.discovered and not destroy_discovered:
        return "skipped: discovered, not created by unfurl (use --destroy-discovered)"
    if instance.protected:
        return "skipped: protected"
    return None


def plan_undeploy(
    ensemble: Ensemble,
    instance_names: Sequence[str] = (),
    destroy_discovered: bool = False,
    ignore_failure: bool = False,
    delete_without_operation: bool = False,
) -> Plan:
    """``delete_without_operation``: Cloudify's uninstall (see add_uninstall_tasks)."""
    instances = dict(ensemble.instances)
    deps = instance_graph(ensemble, instances)
    dependents = graph.reverse(deps)
    wanted = set(select(instances, instance_names)) if instance_names else set(instances)
    builder = Builder("undeploy")
    replaces = tosca.replacing(ensemble.spec, "undeploy")
    for name in reversed(graph.topological_order(deps)):
        if name not in wanted:
            continue
        instance = instances[name]
        why = is_removable(instance, destroy_discovered)
        directives = getattr(ensemble.topology.templates.get(instance.template), "directives", ())
        if "protected" in directives and not why:
            why = 'skipped: instance with "protected" directive'
        if why:
            builder.note(name, why)
            continue
        template = ensemble.topology.templates.get(instance.template)
        if template is None:
            builder.note(
                name, f"skipped: its template {instance.template!r} is no longer in the spec"
            )
            continue
        after = [builder.last[d] for d in dependents.get(name, ()) if d in builder.last]
        if replaces and tosca.replace_lifecycle(
            replaces, builder, ensemble, instance, instances, after
        ):
            continue
        skip_when = None
        check = _check_op(template)
        if instance.status == Status.unknown and check is not None:
            builder.add(name, template.name, check, CHECK, after)
            skip_when = Status.absent
        add_uninstall_tasks(
            builder, ensemble, instance, instances, UNDEPLOY, after, skip_when, ignore_failure,
            mark_deleted=delete_without_operation,
        )
    return builder.plan({}, destroy_discovered=destroy_discovered)


def plan_install_operation(
    ensemble: Ensemble,
    workflow: str,
    interface: str,
    operation: str,
    reason: str,
    instance_names: Sequence[str] = (),
) -> Plan:
    """check and discover: one Install operation per instance that has it, all in parallel."""
    instances = planned_instances(ensemble)
    wanted = set(select(instances, instance_names)) if instance_names else set(instances)
    builder = Builder(workflow)
    for name, instance in instances.items():
        if name not in wanted:
            continue
        template = ensemble.topology.templates.get(instance.template)
        op = implemented(template, interface, operation) if template else None
        if op is None or template is None:
            builder.note(
                name,
                f"not {'checked' if operation == 'check' else 'discovered'}: "
                f"no {operation} operation",
            )
            continue
        builder.add(name, template.name, op, reason, ())
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in builder.last}
    return builder.plan(new)


def plan_check(ensemble: Ensemble, instance_names: Sequence[str] = ()) -> Plan:
    return plan_install_operation(ensemble, "check", "Install", "check", CHECK, instance_names)


def plan_discover(ensemble: Ensemble, instance_names: Sequence[str] = ()) -> Plan:
    return plan_install_operation(
        ensemble, "discover", "Install", "discover", DISCOVER, instance_names
    )
