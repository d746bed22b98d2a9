"""Unfurl's lifecycle workflows as plans: deploy, undeploy, check and discover.

Deploy brings every instance to ``ok`` (adding, repairing, or reconfiguring what changed
since it last ran); undeploy takes them down, dependents first.
"""

from __future__ import annotations

from collections.abc import Sequence

from unfurl_lite.model import changeid, dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import (
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Priority,
    Status,
)
from unfurl_lite.plan import tosca
from unfurl_lite.plan.lifecycle import add_install_tasks, add_uninstall_tasks, implemented
from unfurl_lite.plan.tasks import (
    ADD,
    CHECK,
    DISCOVER,
    FORCE,
    MISSING,
    RECONFIGURE,
    REPAIR,
    REPAIR_ERROR,
    UNDEPLOY,
    Builder,
    Plan,
)
from unfurl_lite.plan.topology import (
    instance_graph,
    not_instantiated,
    operationless,
    planned_instances,
    select,
    unrequired_defaults,
)


def _deploy_reason(instance: Instance, force: bool) -> str | None:
    """Unfurl's DeployPlan.include_instance: ``add`` for an instance no job touched yet,
    ``missing`` for one that is not there (unknown after a failed operation, pending,
    absent), ``error`` to repair a failed one."""
    if force:
        return FORCE
    if instance.status == Status.ok:
        return None
    if instance.last_config_change is None and instance.last_state_change is None:
        return ADD
    if instance.status in (Status.unknown, Status.pending, Status.absent):
        return MISSING
    if instance.status == Status.error:
        return REPAIR_ERROR
    return REPAIR


def _check_op(template: NodeTemplate) -> Operation | None:
    return implemented(template, "Install", "check")


def plan_deploy(
    ensemble: Ensemble, instance_names: Sequence[str] = (), force: bool = False,
    start_without_operation: bool = False,
) -> Plan:
    """``start_without_operation``: Cloudify's install, where every instance ends
    ``started`` (a step with no operation does nothing, the instance goes through it)."""
    instances = planned_instances(ensemble)
    deps = instance_graph(ensemble, instances)
    wanted = (dependencies.closure(deps, select(instances, instance_names)) if instance_names
              else set(deps))
    builder = Builder("deploy")
    # as Unfurl: a default template nothing requires is left out, unless asked for by name
    unrequired = frozenset() if instance_names else unrequired_defaults(ensemble.topology)
    _note_directives(ensemble, instances, builder, unrequired)
    wanted -= {n for n, i in instances.items()
               if i.template in unrequired and n not in ensemble.instances}
    idle: list[frozenset[str]] = []  # templates with no operation, found when first needed
    replaces = tosca.replacing(ensemble.spec, "deploy")
    recorded: dict[tuple[str, str], tuple[str, str]] = {}
    for name in dependencies.topological_order(deps):
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
        if template.priority is Priority.ignore:  # root: {node: X} does not require it
            builder.note(name, "skipped: not required by the topology's root node")
            continue
        reason = _deploy_reason(instance, force)
        after = [builder.last[d] for d in deps[name] if d in builder.last]
        directives = template.directives
        if "discover" in directives and _discover(builder, instance, template, after):
            continue
        if reason is None and _waits_on_pending(ensemble, deps[name], idle):
            reason = MISSING
        if reason is None and "check" in directives and _check_op(template) is not None:
            # Unfurl's ``check`` directive: an instance already ok is checked on every
            # deploy, from ``unknown``, and nothing else runs on it
            builder.add(name, template.name, _check_op(template), CHECK, after,
                        done_status=Status.unknown)
            continue
        if reason is None:
            changed = _configure_changed(ensemble, instance, template, recorded)
            if changed is None:
                builder.note(name, "skipped: already ok")
                continue
            op, since = changed
            from unfurl_lite.plan.baselines import changed_reads, environment_read

            what = changed_reads(ensemble, name, op, since)
            read = environment_read(ensemble, name, op)
            also = f"; they read the environment variables {', '.join(read)}" if read else ""
            builder.note(name, f"reconfigure: the inputs of {op.qualified_name} changed since "
                               f"it last ran ({since})" + (f": {', '.join(what)}" if what else "")
                         + also)
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
            builder, ensemble, instance, instances, reason, after, skip_when,
            pass_through=start_without_operation,
        )
    # as Unfurl: a job that runs something records every instance it planned for, even one
    # with nothing to run (it stays pending); a job that runs nothing records none
    kept = wanted if builder.last else set()
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in kept}
    plan = builder.plan(new, force=force)
    plan.cloudify = start_without_operation
    return plan


def _note_directives(
    ensemble: Ensemble, instances: dict[str, Instance], builder: Builder,
    unrequired: frozenset[str],
) -> None:
    """Say why a template with a directive has no instance in the plan."""
    planned = {i.template for i in instances.values()}
    recorded = {i.template for i in ensemble.instances.values()} if unrequired else set()
    for name, template in ensemble.topology.templates.items():
        why = template.directives and not_instantiated(template)
        if why and name not in planned:
            builder.note(name, why)
        elif name in unrequired and name not in recorded:
            builder.note(name, 'skipped: a template with the "default" directive that no '
                               "other template requires")


def _discover(
    builder: Builder, instance: Instance, template: NodeTemplate, after: list[int]
) -> bool:
    """Unfurl's ``discover`` directive: until its instance is operational, deploy runs only
    Install.discover on it, never its lifecycle. True when the instance is planned here."""
    op = implemented(template, "Install", "discover")
    if instance.status not in (Status.ok, Status.degraded):
        if op is None:
            builder.note(instance.name, 'not discovered: the "discover" directive, and no '
                                        "Install.discover operation")
        else:
            builder.add(instance.name, template.name, op, DISCOVER, after)
        return True
    return False


def _waits_on_pending(
    ensemble: Ensemble, dependencies: list[str], idle: list[frozenset[str]]
) -> bool:
    """Unfurl: an instance whose (recorded) dependency is still pending is itself pending
    in effect, so deploy runs it again (reason ``missing``), e.g. after a discover that
    reported nothing. A template with no operation is not pending in effect (``idle``
    caches those templates for the plan)."""
    pending = [
        ensemble.instances[d].template for d in dependencies
        if d in ensemble.instances and ensemble.instances[d].status == Status.pending
    ]
    if pending and not idle:
        idle.append(operationless(ensemble.topology))
    return any(t not in idle[0] for t in pending)


def _found_not_created(instance: Instance, directives: tuple[str, ...]) -> bool:
    """An instance its ``discover`` or ``check`` directive found rather than created: Unfurl's
    undeploy leaves it ("instance wasn't created by this ensemble")."""
    return not instance.created and bool({"discover", "check"} & set(directives))


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
    from unfurl_lite.plan.baselines import deployed_digests, digest_now, recorded_keys

    if not recorded:
        recorded.update(deployed_digests(ensemble) or {("", ""): ("", "")})
    last = recorded.get((instance.name, op.qualified_name))
    if last is None or not last[1]:
        return None
    now = digest_now(ensemble, instance.name, op, recorded_keys(last))
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
    if isinstance(instance.created, str) and not changeid.is_changeid(instance.created):
        # as Unfurl: made by another instance's operation (a resultTemplate, ``::NAME``)
        return ("skipped: creation and deletion is managed by another instance "
                f"{instance.created}")
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
    dependents = dependencies.reverse(deps)
    wanted = set(select(instances, instance_names)) if instance_names else set(instances)
    builder = Builder("undeploy")
    replaces = tosca.replacing(ensemble.spec, "undeploy")
    for name in reversed(dependencies.topological_order(deps)):
        if name not in wanted:
            continue
        instance = instances[name]
        why = is_removable(instance, destroy_discovered)
        directives = getattr(ensemble.topology.templates.get(instance.template), "directives", ())
        if "protected" in directives and not why:
            why = 'skipped: instance with "protected" directive'
        unmanaged = not instance.created and not delete_without_operation
        if (unmanaged or _found_not_created(instance, directives)) and not why \
                and not destroy_discovered:
            # as Unfurl: e.g. an instance a failed Shell create left ``unknown``
            why = "skipped: instance wasn't created by this ensemble (use --destroy-discovered)"
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
        # as Unfurl 1.2.0 (tests/data/unfurl120/14-directives/check): undeploy never checks
        # first, even an instance whose status is unknown
        add_uninstall_tasks(
            builder, ensemble, instance, instances, UNDEPLOY, after, None, ignore_failure,
            mark_deleted=delete_without_operation,
        )
    plan = builder.plan({}, destroy_discovered=destroy_discovered)
    plan.cloudify = delete_without_operation
    return plan


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
