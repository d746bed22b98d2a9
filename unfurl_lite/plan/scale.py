"""Cloudify's scale as a plan: scale out adds instances of a template or a scaling
group's members (with what they host), scale in removes them (dependents unlinked first).

A failed scale out rolls back: the plan holds the uninstall of every new instance, guarded
to run only after a failure and only for what was created.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from unfurl_lite.errors import PlanError
from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, Status
from unfurl_lite.plan.groups import ScalingEntity, find_entity, group_id, next_name, number_of, tag
from unfurl_lite.plan.lifecycle import (
    ESTABLISH,
    UNLINK,
    add_install_tasks,
    add_relationship_tasks,
    add_uninstall_tasks,
)
from unfurl_lite.plan.reinstall import guard_new
from unfurl_lite.plan.tasks import ADD, ROLLBACK, UNDEPLOY, Builder, Guard, Plan
from unfurl_lite.plan.topology import (
    contained,
    host_view,
    hosted_templates,
    instance_graph,
    is_present,
    planned_instances,
)

SCALE = "scale"


def plan_scale(
    ensemble: Ensemble,
    scalable_entity_name: str,
    delta: int = 1,
    scale_compute: bool = False,
    include_instances: Sequence[str] = (),
    exclude_instances: Sequence[str] = (),
    rollback_if_failed: bool = True,
) -> Plan:
    """Cloudify's scale: ``delta`` instances of the entity (a template, with its host when
    ``scale_compute``, or a scaling group) added or removed whole, with rollback of a failed
    scale-out."""
    entity = find_entity(ensemble.spec, scalable_entity_name)
    templates = ensemble.topology.templates
    if entity.is_group:
        scale_compute = False  # "if it specifies a group name, this parameter is ignored"
    if scale_compute:
        root = entity.members[0]
        while (host := templates[root].host) is not None and host in templates:
            root = host
        entity = replace(entity, members=(root,))
    if (include_instances or exclude_instances) and (delta > 0 or scale_compute):
        raise PlanError(
            "--include-instances and --exclude-instances only apply when scaling in",
            hint="use a negative --delta without --scale-compute",
        )
    overlap = set(include_instances) & set(exclude_instances)
    if overlap:
        raise PlanError(f"both included and excluded: {', '.join(sorted(overlap))}")
    instances = planned_instances(ensemble)
    current = units(ensemble, instances, entity)
    count = len(current)
    wanted = count + delta
    low = int(entity.properties.get("min_instances", 0))
    high = entity.properties.get("max_instances", -1)
    if wanted < low or (isinstance(high, int) and high >= 0 and wanted > high):
        raise PlanError(
            f"{scalable_entity_name} cannot scale to {wanted} instances",
            hint=f"min_instances is {low}, max_instances is {high} (-1: no limit)",
        )
    builder = Builder(SCALE)
    if delta > 0:
        return _scale_out(builder, ensemble, instances, entity, current, delta,
                          rollback_if_failed)
    if delta < 0:
        chosen = _victims(entity, current, -delta, include_instances, exclude_instances)
        return _scale_in(builder, ensemble, instances, [current[u] for u in chosen], -delta)
    builder.note(scalable_entity_name, f"nothing to do: delta 0 leaves {count} instances")
    return builder.plan({})


def units(
    ensemble: Ensemble, instances: dict[str, Instance], entity: ScalingEntity
) -> dict[str, list[str]]:
    """What scales as one, oldest first: each instance of a template (with what it
    contains), or each group instance (one instance of each member, with what they
    contain) -> the instances it holds."""
    top = _top_members(ensemble, entity)
    found: dict[str, list[str]] = {}
    for name, instance in instances.items():
        if instance.template not in top or instance.status == Status.absent:
            continue
        unit = group_id(instance, entity.name) if entity.is_group else name
        held = found.setdefault(unit, [])
        held.extend(n for n in contained(ensemble, instances, name) if n not in held)
    base = entity.name if entity.is_group else None

    def age(unit: str) -> tuple[int, str]:
        n = number_of(unit, base or instances[unit].template)
        return (n if n is not None else 1 << 30, unit)

    return {u: found[u] for u in sorted(found, key=age)}


def _top_members(ensemble: Ensemble, entity: ScalingEntity) -> set[str]:
    """Members not hosted (transitively) on another member: the others come with them."""
    templates = ensemble.topology.templates
    members = set(entity.members)
    top: set[str] = set()
    for member in members:
        host, seen = templates[member].host, {member}
        while host is not None and host in templates and host not in members | seen:
            seen.add(host)
            host = templates[host].host
        if host is None or host not in members:
            top.add(member)
    return top


def _scale_out(
    builder: Builder,
    ensemble: Ensemble,
    instances: dict[str, Instance],
    entity: ScalingEntity,
    current: dict[str, list[str]],
    delta: int,
    rollback: bool,
) -> Plan:
    """Install ``delta`` new copies of the entity's members (and what they host), linked to the
    instances that stay, with rollback tasks that uninstall them if the scale-out fails."""
    templates = ensemble.topology.templates
    top = _top_members(ensemble, entity)
    new: dict[str, Instance] = {}
    taken = set(current)
    for _ in range(delta):
        unit = next_name(entity.name, taken) if entity.is_group else None
        if unit is not None:
            taken.add(unit)
        for member in (m for m in entity.members if m in top):
            host_for: dict[str, str] = {}
            for tpl in hosted_templates(ensemble, member):
                name = next_name(tpl, [*instances, *new])
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
                if unit is not None:
                    tag(new[name], entity.name, unit)
                host_for[tpl] = name
    everything = {**instances, **new}
    deps = instance_graph(ensemble, everything)
    order = [n for n in dependencies.topological_order(deps) if n in new]
    for name in order:
        view = host_view(ensemble, everything, name)
        add_install_tasks(
            builder, ensemble, new[name], view, ADD, builder.last_of(deps.get(name, ())),
            resume_from_state=False,
        )  # fmt: skip
    dependents = dependencies.reverse(deps)
    established: dict[tuple[str, str], list[int]] = {}
    for name in order:
        for dependent in dependents.get(name, ()):
            if dependent in new or not is_present(everything[dependent]):
                continue
            established[dependent, name] = add_relationship_tasks(
                builder, ensemble, everything, dependent, name, ESTABLISH, ADD,
                [builder.last[name]],
            )  # fmt: skip
    forget: tuple[str, ...] = ()
    if rollback:
        _add_rollback(builder, ensemble, everything, new, order, established)
        forget = tuple(order)
    plan = builder.plan(new, delta=delta)
    plan.forget = forget
    return plan


def _add_rollback(
    builder: Builder, ensemble: Ensemble, everything: dict[str, Instance],
    new: dict[str, Instance], order: list[str], established: dict[tuple[str, str], list[int]],
) -> None:
    """Undo a failed scale out, as Cloudify's rollback: the instances that stay unlink from
    each new one (only if their establish on it ran), then the new ones are uninstalled in
    uninstall order (contained and dependents first), only those something was installed
    on. Every step runs only after a failure, and goes on past its own failures."""
    scaled = tuple(t.number for t in builder.tasks)
    dependents = dependencies.reverse(instance_graph(ensemble, everything))
    installed = {
        name: tuple(t.number for t in builder.tasks if t.target == name) for name in order
    }
    for name in reversed(order):
        unlinks: list[int] = []
        for dependent in dependents.get(name, ()):
            if (dependent, name) not in established:
                continue
            ran = tuple(established[dependent, name]) or installed[name]
            unlinks += add_relationship_tasks(
                builder, ensemble, everything, dependent, name, UNLINK, ROLLBACK, scaled,
                guard=Guard(if_failed=scaled, if_ran=ran), may_fail=True,
            )  # fmt: skip
        start = len(builder.tasks)
        before = builder.last_of([d for d in dependents.get(name, ()) if d in new])
        add_uninstall_tasks(
            builder, ensemble, new[name], host_view(ensemble, everything, name), ROLLBACK,
            [*scaled, *before, *unlinks], may_fail=True, mark_deleted=True,
        )  # fmt: skip
        # only after a failure, and only what was created (some install step succeeded)
        guard_new(builder, start, Guard(if_failed=scaled, if_ran=installed[name]))
    builder.notes = [n for n in builder.notes if "no delete operation" not in n.message]


def _victims(
    entity: ScalingEntity,
    current: dict[str, list[str]],
    count: int,
    include: Sequence[str],
    exclude: Sequence[str],
) -> list[str]:
    """The units to remove: those ``include`` names first (an instance names the unit it
    is in), then the newest; never those ``exclude`` names. As the seed: every name must
    exist, a unit cannot be both, and the scale in aborts when what would remain is not
    more than what is excluded."""
    of: dict[str, str] = {}
    for unit, held in current.items():
        of[unit] = unit
        for name in held:
            of.setdefault(name, unit)
    missing = [n for n in (*include, *exclude) if n not in of]
    if missing:
        what = "group instances or their members" if entity.is_group else "instances"
        raise PlanError(
            f"no {what} of {entity.name} named {', '.join(map(repr, missing))}",
            hint=f"{entity.name} has: " + "; ".join(
                f"{u}: {', '.join(h)}" if entity.is_group else u for u, h in current.items()),
        )
    included = list(dict.fromkeys(of[n] for n in include))
    excluded = list(dict.fromkeys(of[n] for n in exclude))
    both = [u for u in included if u in excluded]
    if both:
        raise PlanError(f"both included and excluded (through their members): {', '.join(both)}")
    remaining = len(current) - count
    if excluded and remaining <= len(excluded):
        kind = "group instances" if entity.is_group else "instances"
        raise PlanError(
            f"cannot remove {count} of the {len(current)} {kind} of {entity.name}: "
            f"{remaining} would remain, not more than the {len(excluded)} excluded "
            f"({', '.join(excluded)})",
            hint="exclude fewer instances, or scale in by less",
        )
    chosen = included[:count]
    rest = [u for u in reversed(current) if u not in chosen and u not in excluded]
    return [*chosen, *rest[: count - len(chosen)]]


def _scale_in(
    builder: Builder,
    ensemble: Ensemble,
    instances: dict[str, Instance],
    victims: list[list[str]],
    count: int,
) -> Plan:
    """Uninstall the chosen copies, dependents first, after the instances that stay have
    unlinked from them."""
    removed: list[str] = []
    for held in victims:
        removed.extend(n for n in held if n not in removed)
    deps = instance_graph(ensemble, instances)
    dependents = dependencies.reverse(deps)
    order = [n for n in reversed(dependencies.topological_order(deps)) if n in removed]
    for name in order:
        unlinks: list[int] = []
        for dependent in dependents.get(name, ()):
            if dependent in removed or not is_present(instances[dependent]):
                continue
            unlinks += add_relationship_tasks(
                builder, ensemble, instances, dependent, name, UNLINK, UNDEPLOY, ()
            )
        # Cloudify's uninstall (the seed's scale in: "stop, delete" on each removed
        # instance): stop runs whatever the node state, so a scale in again after one whose
        # stop failed (``stopping``) stops it before deleting it
        add_uninstall_tasks(
            builder, ensemble, instances[name], host_view(ensemble, instances, name), UNDEPLOY,
            unlinks + builder.last_of([d for d in dependents.get(name, ()) if d in removed]),
            mark_deleted=True,
        )  # fmt: skip
        if name not in builder.last:
            builder.add(
                name, instances[name].template, None, UNDEPLOY, (),
                done_state=NodeState.deleted, done_status=Status.absent,
            )  # fmt: skip
    plan = builder.plan({}, delta=-count)
    plan.forget = tuple(order)
    return plan

