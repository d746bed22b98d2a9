"""Cloudify's scale as a plan: scale out adds instances of a template or a scaling
group's members (with what they host), scale in removes them (dependents unlinked first).

A failed scale out rolls back: the plan holds the uninstall of every new instance, guarded
to run only after a failure and only for what was created.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from unfurl_lite.errors import PlanError
from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, Status
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
        from unfurl_lite.load.problems import did_you_mean

        names = [*(topology.get("node_templates") or {}), *(topology.get("groups") or {})]
        raise PlanError(
            f"nothing to scale named {entity!r}",
            hint=did_you_mean(entity, names) or "give a node template or a scaling group: "
            + ", ".join(names[:10]) + (f" (and {len(names) - 10} more)" if len(names) > 10 else ""),
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
    builder = Builder(SCALE)
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
    builder: Builder,
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
            for tpl in hosted_templates(ensemble, member):
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
                guard=Guard(if_failed=scaled, if_ran=ran), ignore_failure=True,
            )  # fmt: skip
        start = len(builder.tasks)
        before = builder.last_of([d for d in dependents.get(name, ()) if d in new])
        add_uninstall_tasks(
            builder, ensemble, new[name], host_view(ensemble, everything, name), ROLLBACK,
            [*scaled, *before, *unlinks], ignore_failure=True, mark_deleted=True,
        )  # fmt: skip
        # only after a failure, and only what was created (some install step succeeded)
        guard_new(builder, start, Guard(if_failed=scaled, if_ran=installed[name]))
    builder.notes = [n for n in builder.notes if "no delete operation" not in n.message]


def _scale_in(
    builder: Builder,
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
        add_uninstall_tasks(
            builder, ensemble, instances[name], host_view(ensemble, instances, name), UNDEPLOY,
            unlinks + builder.last_of([d for d in dependents.get(name, ()) if d in removed]),
        )  # fmt: skip
        if name not in builder.last:
            builder.add(
                name, instances[name].template, None, UNDEPLOY, (),
                done_state=NodeState.deleted, done_status=Status.absent,
            )  # fmt: skip
    plan = builder.plan({}, delta=-count)
    plan.forget = tuple(order)
    return plan

