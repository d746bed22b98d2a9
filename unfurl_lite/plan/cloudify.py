"""Cloudify's built-in workflows as plans: execute_operation, start, stop, restart, heal,
scale and update.

Each planner returns a :class:`Plan` the job engine runs like deploy's. Where Cloudify
decides at run time (heal after check_status, update after check_drift, scale's rollback)
the plan holds every possible step and a :class:`Guard` skips the ones that turn out not
to be needed, so ``--dryrun`` and the plan shown first list all of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from unfurl_lite.errors import PlanError
from unfurl_lite.load import previous
from unfurl_lite.load.loader import Ensemble
from unfurl_lite.model import graph
from unfurl_lite.model.entities import Instance, NodeState, NodeTemplate, Operation, Status
from unfurl_lite.plan.core import (
    ADD,
    CHECK,
    INSTALL,
    REPAIR,
    RUN,
    UNDEPLOY,
    UPDATE,
    Guard,
    Plan,
    RelationshipStep,
    _Builder,
    add_install_tasks,
    add_uninstall_tasks,
    implemented,
    instance_graph,
    planned_instances,
)
from unfurl_lite.record import records

START = "cloudify.interfaces.lifecycle.start"
STOP = "cloudify.interfaces.lifecycle.stop"
HEAL_OPS = ("preheal", "heal", "postheal")
UPDATE_OPS = ("update", "update_config", "update_apply")
RELATIONSHIP_INTERFACES = ("Configure", "RelationshipLifecycle")
HEAL, SCALE, ROLLBACK = "heal", "scale", "rollback"


# ------------------------------------------------------------------------------- helpers


def _present(instance: Instance) -> bool:
    return instance.present or instance.status in (Status.ok, Status.degraded)


def _lifecycle_op(template: NodeTemplate, name: str) -> Operation | None:
    """Cloudify's lifecycle operation, or TOSCA Standard's of the same name."""
    return implemented(template, "Lifecycle", name) or implemented(template, "Standard", name)


def _resolve(template: NodeTemplate, name: str) -> Operation | None:
    """An operation by the name a user gives: ``start``, ``Standard.start`` or Cloudify's."""
    interface, _, op = name.rpartition(".")
    if not interface and op in ("start", "stop", "create", "configure", "delete"):
        return _lifecycle_op(template, op) or template.operation(name)
    if interface in ("cloudify.interfaces.lifecycle", "Lifecycle") and op in (
        "start",
        "stop",
        "create",
        "configure",
        "delete",
    ):
        return _lifecycle_op(template, op) or template.operation(name)
    return template.operation(name)


def host_of(ensemble: Ensemble, instances: Mapping[str, Instance], name: str) -> str | None:
    """The instance ``name`` is contained in (a ``host`` or HostedOn/contained_in requirement)."""
    template = ensemble.topology.templates.get(instances[name].template)
    if template is None or template.host is None:
        return None
    hosts = [i.name for i in instances.values() if i.template == template.host]
    pinned = instances[name].extra.get("hostedOn")
    if pinned in hosts:
        return str(pinned)
    return hosts[0] if hosts else None


def contained(ensemble: Ensemble, instances: Mapping[str, Instance], root: str) -> list[str]:
    """``root`` and every instance (transitively) contained in it, root first."""
    children: dict[str, list[str]] = {}
    for name in instances:
        host = host_of(ensemble, instances, name)
        if host is not None:
            children.setdefault(host, []).append(name)
    found: list[str] = []
    stack = [root]
    while stack:
        name = stack.pop(0)
        if name not in found:
            found.append(name)
            stack.extend(children.get(name, ()))
    return found


def root_host(ensemble: Ensemble, instances: Mapping[str, Instance], name: str) -> str:
    seen = {name}
    while (host := host_of(ensemble, instances, name)) is not None and host not in seen:
        seen.add(host)
        name = host
    return name


def _containers(ensemble: Ensemble, instances: Mapping[str, Instance], name: str) -> list[str]:
    found: list[str] = []
    while (host := host_of(ensemble, instances, name)) is not None and host not in found:
        found.append(host)
        name = host
    return found


def _ordered(
    ensemble: Ensemble, instances: Mapping[str, Instance], names: Iterable[str]
) -> list[str]:
    wanted = set(names)
    return [
        n for n in graph.topological_order(instance_graph(ensemble, dict(instances))) if n in wanted
    ]


def _after(builder: _Builder, names: Iterable[str]) -> list[int]:
    return [builder.last[n] for n in names if n in builder.last]


def add_relationship_tasks(
    builder: _Builder,
    ensemble: Ensemble,
    instances: Mapping[str, Instance],
    source: str,
    peer: str,
    steps: Sequence[RelationshipStep],
    reason: str,
    after: Iterable[int],
    guard: Guard | None = None,
    ignore_failure: bool = False,
) -> list[int]:
    """Relationship operations of ``source``'s requirements on ``peer`` only (scale, heal)."""
    template = ensemble.topology.templates[instances[source].template]
    numbers: list[int] = []
    deps = list(after)
    for req in template.requirements:
        if req.node != instances[peer].template:
            continue
        for step in steps:
            for interface, name, side in step.operations:
                op = req.interfaces.get(interface, {}).get(name)
                if op is None or op.implementation is None:
                    continue
                runs_on = source if side == "source" else peer
                task = builder.add(
                    runs_on,
                    instances[runs_on].template,
                    op,
                    reason,
                    deps + numbers[-1:],
                    requirement=req,
                    source=source,
                    peer=peer,
                    guard=guard,
                    ignore_failure=ignore_failure,
                )
                numbers.append(task.number)
    return numbers


INSTALL_RELATIONSHIPS = tuple(s for s in INSTALL if isinstance(s, RelationshipStep))
ESTABLISH = INSTALL_RELATIONSHIPS[-1:]
UNLINK = tuple(
    RelationshipStep(((i, n, side),))
    for i, n, side in (
        ("Configure", "remove_target", "source"),
        ("Configure", "remove_source", "target"),
        ("RelationshipLifecycle", "unlink", "source"),
    )
)


# ----------------------------------------------------------------------- execute_operation


def _filtered(
    ensemble: Ensemble,
    type_names: Sequence[str],
    node_ids: Sequence[str],
    node_instance_ids: Sequence[str],
    instances: Mapping[str, Instance] | None = None,
) -> list[str]:
    """Cloudify's three filters, enforced together (an intersection; empty means all)."""
    instances = ensemble.instances if instances is None else instances
    for node in node_ids:
        if node not in ensemble.topology.templates:
            raise PlanError(f"no node template named {node!r}", hint="see `unfurl validate`")
    for name in node_instance_ids:
        if name not in instances:
            raise PlanError(f"no instance named {name!r}", hint="run `unfurl status` to list them")
    chosen = []
    for name, instance in instances.items():
        template = ensemble.topology.templates.get(instance.template)
        if template is None:
            continue
        if node_ids and instance.template not in node_ids:
            continue
        if node_instance_ids and name not in node_instance_ids:
            continue
        if type_names and not any(template.is_a(t) for t in type_names):
            continue
        chosen.append(name)
    return chosen


def _state_change(op: Operation) -> dict[str, Any]:
    """start and stop move the node state (a stopped instance is pending: not serving)."""
    if op.interface not in ("Standard", "Lifecycle"):
        return {}
    if op.name == "start":
        return dict(
            running_state=NodeState.starting, done_state=NodeState.started, done_status=Status.ok
        )
    if op.name == "stop":
        return dict(
            running_state=NodeState.stopping,
            done_state=NodeState.stopped,
            done_status=Status.pending,
        )
    return {}


def add_operation_tasks(
    builder: _Builder,
    ensemble: Ensemble,
    operation: str,
    selected: Sequence[str],
    operation_kwargs: Mapping[str, Any] | None = None,
    allow_kwargs_override: bool | None = None,
    run_by_dependency_order: bool = False,
    reverse: bool = False,
    missing: str = "error",
    after: Iterable[int] = (),
    instances: Mapping[str, Instance] | None = None,
) -> list[int]:
    """One task per selected instance; with dependency order, an instance also waits for
    the nearest selected instances it depends on through filtered-out ones. Given
    ``instances`` (execute_operation), instances not created yet run the operation too."""
    everywhere = instances is not None
    instances = ensemble.instances if instances is None else instances
    deps = instance_graph(ensemble, dict(instances))
    edges = graph.reverse(deps) if reverse else deps
    frontier: dict[str, set[int]] = {}
    numbers: list[int] = []
    barrier = set(after)
    wanted = set(selected)
    for name in graph.topological_order(edges):
        inherited: set[int] = set()
        if run_by_dependency_order:
            for dep in edges.get(name, ()):
                inherited |= frontier.get(dep, set())
        frontier[name] = inherited
        if name not in wanted:
            continue
        instance = instances[name]
        created = _present(instance)
        if not created and not everywhere:
            builder.note(name, "skipped: not deployed")
            continue
        template = ensemble.topology.templates[instance.template]
        op = _resolve(template, operation)
        if op is None:
            if missing == "skip":
                builder.note(name, f"left as it is: no {operation} operation")
                continue
            raise PlanError(
                f"instance {name!r} has no operation {operation!r}",
                hint="filter it out with --node-ids, --node-instance-ids or --type-names",
            )
        if op.implementation is None:
            builder.note(name, f"nothing to run: {operation} has no implementation")
            continue
        task = builder.add(
            name,
            template.name,
            op,
            RUN,
            inherited | barrier,
            extra_inputs=dict(operation_kwargs or {}),
            allow_override=True if allow_kwargs_override is None else allow_kwargs_override,
            **(_state_change(op) if created else {}),
        )
        if not created:
            builder.note(name, f"not created yet (status {instance.status}): {operation} runs "
                               "on it all the same, as Cloudify's execute_operation does")
        frontier[name] = {task.number}
        numbers.append(task.number)
    return numbers


def plan_execute_operation(
    ensemble: Ensemble,
    operation: str,
    operation_kwargs: Mapping[str, Any] | None = None,
    allow_kwargs_override: bool | None = None,
    run_by_dependency_order: bool = False,
    type_names: Sequence[str] = (),
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    builder = _Builder("execute_operation")
    instances = planned_instances(ensemble)
    selected = _filtered(ensemble, type_names, node_ids, node_instance_ids, instances)
    add_operation_tasks(
        builder,
        ensemble,
        operation,
        selected,
        operation_kwargs,
        allow_kwargs_override,
        run_by_dependency_order,
        instances=instances,
    )
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in builder.last}
    return builder.plan(new, operation=operation)


def _start_or_stop(
    workflow: str,
    ensemble: Ensemble,
    operation_parms: Mapping[str, Any] | None = None,
    run_by_dependency_order: bool = True,
    type_names: Sequence[str] = (),
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    """Cloudify's start and stop: execute-operation wrappers, dependency order by default."""
    builder = _Builder(workflow)
    selected = _filtered(ensemble, type_names, node_ids, node_instance_ids)
    add_operation_tasks(
        builder,
        ensemble,
        START if workflow == "start" else STOP,
        selected,
        operation_parms,
        None,
        run_by_dependency_order,
        reverse=workflow == "stop",
        missing="skip",
    )
    return builder.plan({})


plan_start = functools.partial(_start_or_stop, "start")
plan_stop = functools.partial(_start_or_stop, "stop")


def plan_restart(
    ensemble: Ensemble,
    stop_parms: Mapping[str, Any] | None = None,
    start_parms: Mapping[str, Any] | None = None,
    run_by_dependency_order: bool = True,
    type_names: Sequence[str] = (),
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    """Every stop (dependents first), then every start (dependencies first)."""
    builder = _Builder("restart")
    selected = _filtered(ensemble, type_names, node_ids, node_instance_ids)
    stops = add_operation_tasks(
        builder, ensemble, STOP, selected, stop_parms, None, run_by_dependency_order,
        reverse=True, missing="skip",
    )  # fmt: skip
    add_operation_tasks(
        builder, ensemble, START, selected, start_parms, None, run_by_dependency_order,
        missing="skip", after=stops,
    )  # fmt: skip
    return builder.plan({})


# ---------------------------------------------------------------------------------- heal


def check_operation(template: NodeTemplate) -> Operation | None:
    return implemented(template, "Validation", "check_status") or implemented(
        template, "Install", "check"
    )


def plan_heal(
    ensemble: Ensemble,
    node_instance_id: str | None = None,
    diagnose_value: str | None = None,
    ignore_failure: bool = True,
    check_status: bool = True,
    allow_reinstall: bool = True,
    force_reinstall: bool = False,
) -> Plan:
    """check_status, then preheal/heal/postheal where defined, then reinstall what is still
    not ok together with everything contained in it (see docs/workflows.md)."""
    instances = dict(ensemble.instances)
    if node_instance_id:
        if node_instance_id not in instances:
            raise PlanError(
                f"no instance named {node_instance_id!r}", hint="run `unfurl status` to list them"
            )
        scope = contained(ensemble, instances, root_host(ensemble, instances, node_instance_id))
    else:
        scope = list(instances)
    templates = ensemble.topology.templates
    selected = [
        n
        for n in _ordered(ensemble, instances, scope)
        if _present(instances[n]) and instances[n].template in templates
    ]
    builder = _Builder(HEAL)
    if diagnose_value:
        builder.note(node_instance_id or "all", f"diagnosis: {diagnose_value}")
    # without a check, only the instance being healed (and what it contains) is suspect
    own = set(contained(ensemble, instances, node_instance_id)) if node_instance_id else None
    unhealthy = []  # known not healthy at plan time: no way to tell they are fine
    checked = []
    for name in selected:
        template = templates[instances[name].template]
        check = check_operation(template)
        if force_reinstall:
            unhealthy.append(name)
        elif check is not None and check_status:
            builder.add(name, template.name, check, CHECK, (), ignore_failure=True)
            checked.append(name)
        elif check is None and own is not None and name not in own:
            builder.note(name, f"no check: taken as healthy (not part of {node_instance_id})")
        elif check is None or instances[name].last_state_change is None:
            unhealthy.append(name)
        else:
            checked.append(name)
    if unhealthy and not allow_reinstall:
        cannot = [n for n in unhealthy if force_reinstall or not _has_heal(templates, instances[n])]
        if cannot:
            raise PlanError(
                "these instances would have to be reinstalled: " + ", ".join(cannot),
                hint="drop --no-allow-reinstall, or give them a heal operation",
            )
    for name in unhealthy:
        builder.add(name, instances[name].template, None, REPAIR, (), done_status=Status.unknown)
    heal_tasks: list[int] = []
    healable = []
    if not force_reinstall:
        for name in selected:
            template = templates[instances[name].template]
            ops = [op for n in HEAL_OPS if (op := implemented(template, "Lifecycle", n))]
            if not any(op.name == "heal" for op in ops):
                continue
            healable.append(name)
            deps = _after(builder, instance_graph(ensemble, instances).get(name, ()))
            own_ops: list[int] = []
            for index, op in enumerate(ops):
                task = builder.add(
                    name,
                    template.name,
                    op,
                    REPAIR,
                    deps,
                    done_status=Status.ok if index == len(ops) - 1 else None,
                    # an error in any of them means reinstall: the rest do not run
                    guard=Guard(unless_ok=(name,), unless_failed=tuple(own_ops)),
                    ignore_failure=True,
                )
                own_ops.append(task.number)
                heal_tasks.append(task.number)
    if allow_reinstall:
        _add_reinstall(builder, ensemble, instances, selected, heal_tasks, ignore_failure)
    else:
        for name in selected:
            if name in healable or name in checked:
                builder.add(
                    name, instances[name].template, None, REPAIR, heal_tasks,
                    guard=Guard(unless_ok=(name,)),
                    failure=f"{name} would have to be reinstalled (--no-allow-reinstall)",
                )  # fmt: skip
    return builder.plan({}, node_instance_id=node_instance_id)


def _has_heal(templates: Mapping[str, NodeTemplate], instance: Instance) -> bool:
    return implemented(templates[instance.template], "Lifecycle", "heal") is not None


def _add_reinstall(
    builder: _Builder,
    ensemble: Ensemble,
    instances: dict[str, Instance],
    selected: list[str],
    barrier: list[int],
    ignore_failure: bool,
    guarded: bool = True,
    guards: Mapping[str, Guard | None] | None = None,
) -> None:
    """Uninstall (dependents first) then install (dependencies first) every selected
    instance that is still not ok, or whose container is not; re-establish relationships
    from instances outside the selection."""
    deps = instance_graph(ensemble, instances)
    dependents = graph.reverse(deps)
    wanted = set(selected)
    given = guards or {}
    guard_of: dict[str, Guard | None] = {}
    marks: dict[str, int] = {}
    for name in selected:
        scope = (name, *(c for c in _containers(ensemble, instances, name) if c in wanted))
        guard_of[name] = given[name] if name in given else (
            Guard(unless_ok=scope) if guarded else None
        )
        mark = builder.add(
            name,
            instances[name].template,
            None,
            REPAIR,
            # the guard reads the containers' status: wait for their checks to report it
            [*barrier, *_after(builder, scope[1:])],
            done_status=Status.pending,
            guard=guard_of[name],
        )
        marks[name] = mark.number
    uninstalls: list[int] = []
    for name in reversed(selected):
        start = len(builder.tasks)
        add_uninstall_tasks(
            builder,
            ensemble,
            instances[name],
            instances,
            REPAIR,
            _after(builder, [d for d in dependents.get(name, ()) if d in wanted]),
            ignore_failure=ignore_failure,
        )
        _guard_new(builder, start, guard_of[name])
        uninstalls.extend(t.number for t in builder.tasks[start:])
    for name in selected:
        start = len(builder.tasks)
        add_install_tasks(
            builder,
            ensemble,
            instances[name],
            instances,
            REPAIR,
            uninstalls + _after(builder, [d for d in deps.get(name, ()) if d in wanted]),
            resume_from_state=False,
        )
        _guard_new(builder, start, guard_of[name])
    for name in selected:
        for dependent in dependents.get(name, ()):
            if dependent in wanted or not _present(instances[dependent]):
                continue
            add_relationship_tasks(
                builder,
                ensemble,
                instances,
                dependent,
                name,
                INSTALL_RELATIONSHIPS,
                REPAIR,
                [builder.last[name]],
                guard=Guard(if_ran=(marks[name],)) if guard_of[name] else None,
            )


def _guard_new(builder: _Builder, start: int, guard: Guard | None) -> None:
    """Put ``guard`` on the tasks added since ``start`` (they are frozen, so replace them)."""
    if guard is None:
        return
    from dataclasses import replace

    builder.tasks[start:] = [replace(t, guard=guard) for t in builder.tasks[start:]]


# --------------------------------------------------------------------------------- scale


def _scaling_policy(
    ensemble: Ensemble, entity: str
) -> tuple[list[str], dict[str, Any], bool]:
    """(member templates, scaling properties, is a group) of a template or a scaling group."""
    topology = (ensemble.spec.get("service_template") or {}).get("topology_template") or {}
    for policy in (
        (topology.get("policies") or {}).values()
        if isinstance(topology.get("policies"), dict)
        else _list_policies(topology.get("policies"))
    ):
        if not isinstance(policy, dict) or "scal" not in str(policy.get("type", "")).lower():
            continue
        if entity in (policy.get("targets") or []):
            group = (topology.get("groups") or {}).get(entity) or {}
            members = list(group.get("members") or [entity])
            return members, dict(policy.get("properties") or {}), True
    template = (topology.get("node_templates") or {}).get(entity)
    if template is None:
        raise PlanError(
            f"nothing to scale named {entity!r}",
            hint="give a node template or a scaling group",
        )
    scalable = ((template.get("capabilities") or {}).get("scalable") or {}).get("properties")
    return [entity], dict(scalable or {}), False


def _list_policies(value: Any) -> list[dict[str, Any]]:
    """TOSCA writes policies as a list of one-key mappings."""
    found: list[dict[str, Any]] = []
    for item in value or []:
        if isinstance(item, dict):
            found.extend(v for v in item.values() if isinstance(v, dict))
    return found


def _next_name(template: str, taken: Iterable[str]) -> str:
    used = set(taken)
    n = 1
    while f"{template}_{n}" in used:
        n += 1
    return f"{template}_{n}"


def _hosted_templates(ensemble: Ensemble, root: str) -> list[str]:
    """``root`` and the templates (transitively) hosted on it, hosts first."""
    found = [root]
    for name in found:
        found.extend(
            t.name
            for t in ensemble.topology.templates.values()
            if t.host == name and t.name not in found
        )
    return found


def plan_scale(
    ensemble: Ensemble,
    scalable_entity_name: str,
    delta: int = 1,
    scale_compute: bool = False,
    include_instances: Sequence[str] = (),
    exclude_instances: Sequence[str] = (),
    rollback_if_failed: bool = True,
) -> Plan:
    members, limits, is_group = _scaling_policy(ensemble, scalable_entity_name)
    templates = ensemble.topology.templates
    if is_group:
        scale_compute = False  # "if it specifies a group name, this parameter is ignored"
    if scale_compute and len(members) == 1:
        root = members[0]
        while (host := templates[root].host) is not None and host in templates:
            root = host
        members = [root]
    if (include_instances or exclude_instances) and (delta > 0 or scale_compute):
        raise PlanError(
            "--include-instances and --exclude-instances only apply when scaling in",
            hint="use a negative --delta without --scale-compute",
        )
    overlap = set(include_instances) & set(exclude_instances)
    if overlap:
        raise PlanError(f"both included and excluded: {', '.join(sorted(overlap))}")
    instances = planned_instances(ensemble)
    current = {
        m: [n for n, i in instances.items() if i.template == m and i.status != Status.absent]
        for m in members
    }
    count = min(len(v) for v in current.values()) if current else 0
    wanted = count + delta
    low, high = int(limits.get("min_instances", 0)), limits.get("max_instances", -1)
    if wanted < low or (isinstance(high, int) and high >= 0 and wanted > high):
        raise PlanError(
            f"{scalable_entity_name} cannot scale to {wanted} instances",
            hint=f"min_instances is {low}, max_instances is {high} (-1: no limit)",
        )
    builder = _Builder(SCALE)
    if delta > 0:
        return _scale_out(builder, ensemble, instances, members, delta, rollback_if_failed)
    if delta < 0:
        return _scale_in(
            builder, ensemble, instances, members, current, -delta, include_instances,
            exclude_instances,
        )  # fmt: skip
    builder.note(scalable_entity_name, f"nothing to do: delta 0 leaves {count} instances")
    return builder.plan({})


def _scale_out(
    builder: _Builder,
    ensemble: Ensemble,
    instances: dict[str, Instance],
    members: list[str],
    delta: int,
    rollback: bool,
) -> Plan:
    templates = ensemble.topology.templates
    new: dict[str, Instance] = {}
    for _ in range(delta):
        for member in members:
            host_for: dict[str, str] = {}
            for tpl in _hosted_templates(ensemble, member):
                name = _next_name(tpl, [*instances, *new])
                extra = {}
                host = templates[tpl].host
                if tpl != member and host in host_for:
                    extra["hostedOn"] = host_for[host]
                elif tpl == member and host is not None:
                    existing = [n for n, i in instances.items() if i.template == host]
                    if existing:
                        extra["hostedOn"] = existing[0]
                new[name] = Instance(
                    name=name, template=tpl, status=Status.pending,
                    priority=templates[tpl].priority, extra=extra,
                )  # fmt: skip
                host_for[tpl] = name
    everything = {**instances, **new}
    deps = instance_graph(ensemble, everything)
    order = [n for n in graph.topological_order(deps) if n in new]
    for name in order:
        view = _host_view(ensemble, everything, name)
        add_install_tasks(
            builder, ensemble, new[name], view, ADD, _after(builder, deps.get(name, ())),
            resume_from_state=False,
        )  # fmt: skip
    dependents = graph.reverse(deps)
    for name in order:
        for dependent in dependents.get(name, ()):
            if dependent in new or not _present(everything[dependent]):
                continue
            add_relationship_tasks(
                builder, ensemble, everything, dependent, name, ESTABLISH, ADD,
                [builder.last[name]],
            )  # fmt: skip
    forget: tuple[str, ...] = ()
    if rollback:
        scaled = [t.number for t in builder.tasks]
        installed = {
            name: tuple(t.number for t in builder.tasks if t.target == name) for name in order
        }
        for name in reversed(order):  # uninstall order: contained and dependents first
            start = len(builder.tasks)
            before = _after(builder, [d for d in dependents.get(name, ()) if d in new])
            add_uninstall_tasks(
                builder, ensemble, new[name], _host_view(ensemble, everything, name), ROLLBACK,
                [*scaled, *before], ignore_failure=True, mark_deleted=True,
            )  # fmt: skip
            # only after a failure, and only what was created (some install step succeeded)
            _guard_new(builder, start, Guard(if_failed=tuple(scaled), if_ran=installed[name]))
        builder.notes = [n for n in builder.notes if "no delete operation" not in n.message]
        forget = tuple(order)
    plan = builder.plan(new, delta=delta)
    plan.forget = forget
    return plan


def _host_view(
    ensemble: Ensemble, instances: dict[str, Instance], name: str
) -> dict[str, Instance]:
    """Instances as ``name`` sees them: of its host's template, only its own host."""
    template = ensemble.topology.templates[instances[name].template]
    host = host_of(ensemble, instances, name)
    return {
        n: i for n, i in instances.items() if i.template != template.host or n in (host, name)
    }


def _scale_in(
    builder: _Builder,
    ensemble: Ensemble,
    instances: dict[str, Instance],
    members: list[str],
    current: dict[str, list[str]],
    count: int,
    include: Sequence[str],
    exclude: Sequence[str],
) -> Plan:
    for name in (*include, *exclude):
        if name not in instances:
            raise PlanError(f"no instance named {name!r}", hint="run `unfurl status` to list them")
    victims: list[str] = []
    for member in members:
        pool = current[member]
        chosen = [n for n in include if n in pool][:count]
        rest = [n for n in reversed(pool) if n not in chosen and n not in exclude]
        chosen += rest[: count - len(chosen)]
        if len(chosen) < count:
            excluded = [n for n in exclude if n in pool]
            raise PlanError(
                f"cannot remove {count} instances of {member}: {len(pool) - count} would "
                f"remain, fewer than the {len(excluded)} excluded ({', '.join(excluded)})",
                hint="exclude fewer instances, or scale in by less",
            )
        victims.extend(chosen)
    removed: list[str] = []
    for victim in victims:
        removed.extend(n for n in contained(ensemble, instances, victim) if n not in removed)
    deps = instance_graph(ensemble, instances)
    dependents = graph.reverse(deps)
    order = [n for n in reversed(graph.topological_order(deps)) if n in removed]
    for name in order:
        unlinks: list[int] = []
        for dependent in dependents.get(name, ()):
            if dependent in removed or not _present(instances[dependent]):
                continue
            unlinks += add_relationship_tasks(
                builder, ensemble, instances, dependent, name, UNLINK, UNDEPLOY, ()
            )
        add_uninstall_tasks(
            builder, ensemble, instances[name], _host_view(ensemble, instances, name), UNDEPLOY,
            unlinks + _after(builder, [d for d in dependents.get(name, ()) if d in removed]),
        )  # fmt: skip
        if name not in builder.last:
            builder.add(
                name, instances[name].template, None, UNDEPLOY, (),
                done_state=NodeState.deleted, done_status=Status.absent,
            )  # fmt: skip
    plan = builder.plan({}, delta=-count)
    plan.forget = tuple(order)
    return plan


# -------------------------------------------------------------------------------- update

_OP_IN_SUMMARY = re.compile(r"using configurator for \w+: (\S+) \(")
_REASON_IN_SUMMARY = re.compile(r"reason: (\w+)\s*$")


def deployed_digests(ensemble: Ensemble) -> dict[tuple[str, str], tuple[str, str]]:
    """(instance, qualified operation) -> (changeId, digestValue) of its latest successful run,
    or of the last update that brought the instance in line with the spec."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for record in records.read_jobs_tsv(ensemble.jobs_tsv):
        target = record.get("target", "")
        summary = record.get("summary", "")
        if not target.startswith("::") or record.get("status") != "ok":
            continue
        reason = _REASON_IN_SUMMARY.search(summary)
        op = _OP_IN_SUMMARY.search(summary)
        if op is None or (reason and reason.group(1) in (CHECK, RUN, "discover")):
            continue
        found[(target[2:], op.group(1))] = (record["changeId"], record.get("digestValue", ""))
    for name, instance in ensemble.instances.items():
        baseline = instance.extra.get("specDigests")
        if not isinstance(baseline, dict):
            continue
        change_id = str(baseline.get("changeId", ""))
        for op, value in baseline.items():
            if op == "changeId":
                continue
            if found.get((name, op), ("", ""))[0] <= change_id:
                found[(name, op)] = (change_id, str(value))
    return found


def current_digest(ensemble: Ensemble, instance: str, op: Operation) -> str | None:
    """The digest the operation's inputs would have now (None when they cannot be rendered)."""
    from unfurl_lite.errors import UnfurlLiteError
    from unfurl_lite.expressions.context import POST_INPUTS, make_context, render_inputs
    from unfurl_lite.expressions.expr import ExpressionError

    inputs = dict(op.inputs)
    if op.implementation is not None and op.implementation.primary and "command" not in inputs:
        inputs["command"] = op.implementation.primary
    try:
        ctx = make_context(ensemble.topology, ensemble.instances, instance)
        rendered = render_inputs(inputs, {}, ctx)
    except (ExpressionError, UnfurlLiteError):
        return None
    return records.input_digest({k: v for k, v in rendered.items() if k not in POST_INPUTS})[1]


def changed_operations(
    ensemble: Ensemble, deployed: Mapping[tuple[str, str], tuple[str, str]]
) -> dict[str, list[str]]:
    """instance -> the operations whose inputs differ from what last ran (or that are gone)."""
    changed: dict[str, list[str]] = {}
    for (name, qualified), (_, digest) in deployed.items():
        instance = ensemble.instances.get(name)
        if instance is None or not _present(instance):
            continue
        template = ensemble.topology.templates.get(instance.template)
        if template is None or qualified.split(".")[0] in RELATIONSHIP_INTERFACES:
            continue
        op = template.operation(qualified)
        if op is None or op.implementation is None or current_digest(ensemble, name, op) != digest:
            changed.setdefault(name, []).append(qualified)
    return changed


def _baseline(ensemble: Ensemble, name: str) -> dict[str, str]:
    """The digests of the instance's node operations as the spec now has them."""
    template = ensemble.topology.templates[ensemble.instances[name].template]
    digests = {}
    for interface, ops in template.interfaces.items():
        for op in ops.values():
            if op.implementation is not None and interface not in RELATIONSHIP_INTERFACES:
                value = current_digest(ensemble, name, op)
                if value is not None:
                    digests[op.qualified_name] = value
    return digests


def plan_update(
    ensemble: Ensemble,
    preview: bool = False,
    skip_install: bool = False,
    skip_uninstall: bool = False,
    skip_reinstall: bool = False,
    skip_drift_check: bool = False,
    force_reinstall: bool = False,
    skip_heal: bool = False,
    workflow_id: str | None = None,
) -> Plan:
    """The minimal change from what was deployed to what the spec now says."""
    templates = ensemble.topology.templates
    instances = planned_instances(ensemble)
    deps = instance_graph(ensemble, instances)
    builder = _Builder(UPDATE)
    removed = [
        n for n, i in ensemble.instances.items() if i.template not in templates and _present(i)
    ]
    old = {} if skip_uninstall or not removed else previous.removed_templates(
        ensemble, {instances[n].template for n in removed})
    templates.update(old)  # so their operations render and run like any other's
    for name in reversed(removed):
        if skip_uninstall:
            builder.note(name, "not uninstalled (--skip-uninstall): its template was removed")
            continue
        if instances[name].template in old:
            add_uninstall_tasks(builder, ensemble, instances[name], instances, UNDEPLOY, ())
            builder.note(name, "removed from the spec: uninstalled with the operations its "
                               "template had in the last commit that defined it")
            continue
        builder.add(
            name, instances[name].template, None, UNDEPLOY, (),
            done_state=NodeState.deleted, done_status=Status.absent,
        )  # fmt: skip
        builder.note(name, "removed from the spec and from git history: forgotten, no "
                           "operation run")
    new = {n: i for n, i in instances.items() if n not in ensemble.instances}
    for name in graph.topological_order(deps):
        if name not in new:
            continue
        if skip_install:
            builder.note(name, "not installed (--skip-install)")
            continue
        add_install_tasks(
            builder, ensemble, new[name], instances, ADD, _after(builder, deps.get(name, ())),
            resume_from_state=False,
        )  # fmt: skip
    changed = changed_operations(ensemble, deployed_digests(ensemble))
    baselines: dict[str, dict[str, str]] = {}
    reinstall: list[str] = []
    reinstall_guards: dict[str, Guard | None] = {}
    for name in graph.topological_order(deps):
        instance = instances[name]
        if name in new or name in removed or not _present(instance):
            continue
        template = templates[instance.template]
        updates = [op for n in UPDATE_OPS if (op := implemented(template, "Lifecycle", n))]
        drift = implemented(template, "Lifecycle", "check_drift")
        is_changed = name in changed
        drift_task: int | None = None
        if not skip_drift_check and drift is not None and instance.state == NodeState.started:
            drift_task = builder.add(
                name, template.name, drift, CHECK, _after(builder, deps.get(name, ())),
                ignore_failure=True,
            ).number  # fmt: skip
        if not is_changed and drift_task is None:
            continue
        if is_changed:
            builder.note(name, "changed: " + ", ".join(changed[name]))
        # a failing check_drift means drift
        drifted: tuple[int, ...] = () if is_changed or drift_task is None else (drift_task,)
        baselines[name] = _baseline(ensemble, name)
        if updates and not force_reinstall:
            unhealthy: tuple[int, ...] = ()
            status_check = check_operation(template)
            if not skip_heal and status_check is not None:
                unhealthy = (builder.add(
                    name, template.name, status_check, CHECK,
                    _after(builder, deps.get(name, ())), ignore_failure=True,
                    guard=Guard(if_failed=drifted) if drifted else None,
                ).number,)  # fmt: skip
            numbers: list[int] = []
            for index, op in enumerate(updates):
                numbers.append(builder.add(
                    name, template.name, op, UPDATE, _after(builder, deps.get(name, ())),
                    done_status=Status.ok if index == len(updates) - 1 else None,
                    guard=Guard(if_failed=drifted, unless_failed=(*unhealthy, *numbers)),
                    ignore_failure=not skip_reinstall,
                ).number)  # fmt: skip
            if skip_reinstall:
                continue
            # a failed update (or an unhealthy instance) is reinstalled instead
            reinstall_guards[name] = Guard(if_failed=(*unhealthy, *numbers))
            reinstall.append(name)
        elif skip_reinstall:
            builder.note(name, "not reinstalled (--skip-reinstall)")
            del baselines[name]
        else:
            reinstall_guards[name] = Guard(if_failed=drifted) if drifted else None
            reinstall.append(name)
    if reinstall:
        _add_reinstall(
            builder, ensemble, instances, reinstall, [], True, guards=reinstall_guards
        )
    plan = builder.plan(new, preview=preview)
    plan.forget = tuple(removed) if not skip_uninstall else ()
    plan.baselines = baselines
    if workflow_id:
        plan.options["workflow_id"] = workflow_id
    return plan


PLANNERS: dict[str, Any] = {
    "execute_operation": plan_execute_operation,
    "start": plan_start,
    "stop": plan_stop,
    "restart": plan_restart,
    "heal": plan_heal,
    "scale": plan_scale,
    "update": plan_update,
}
