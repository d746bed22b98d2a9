"""Cloudify's heal as a plan: decide each instance's health (its check_status now, or the
last one recorded), run preheal/heal/postheal on the unhealthy ones that define heal, and
reinstall the rest, each with everything contained in it.

Health known only at run time is a :data:`~unfurl_lite.plan.reinstall.Trigger`: the plan
holds every step, guarded on the check and heal tasks whose outcome decides it, so
``--dryrun`` lists them all and each step is decided once, from outcomes that do not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from unfurl_lite.errors import PlanError
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, NodeTemplate, Operation, Status
from unfurl_lite.plan.lifecycle import implemented
from unfurl_lite.plan.reinstall import ALWAYS, Trigger, add_reinstall, either, guard_of
from unfurl_lite.plan.tasks import CHECK, REPAIR, Builder, Guard, Plan
from unfurl_lite.plan.topology import (
    contained,
    containers,
    instance_graph,
    is_present,
    ordered,
    unknown_instance,
)

HEAL = "heal"
HEAL_OPS = ("preheal", "heal", "postheal")
CHECK_OPS = (("Validation", "check_status"), ("Install", "check"))


def check_operation(template: NodeTemplate) -> Operation | None:
    return implemented(template, "Validation", "check_status") or implemented(
        template, "Install", "check"
    )


def heal_scope(ensemble: Ensemble, instances: Mapping[str, Instance],
               node_instance_id: str | None) -> list[str]:
    """The instances heal considers: the outermost host of ``node_instance_id`` with
    everything contained in it, or every instance; present ones, dependencies first."""
    if node_instance_id:
        if node_instance_id not in instances:
            raise unknown_instance(node_instance_id, instances)
        roots = containers(ensemble, instances, node_instance_id) or [node_instance_id]
        scope = contained(ensemble, instances, roots[-1])
    else:
        scope = list(instances)
    templates = ensemble.topology.templates
    return [
        n for n in ordered(ensemble, instances, scope)
        if is_present(instances[n]) and instances[n].template in templates
    ]


def plan_heal(
    ensemble: Ensemble,
    node_instance_id: str | None = None,
    diagnose_value: str | None = None,
    may_fail: bool = True,
    check_status: bool = True,
    allow_reinstall: bool = True,
    always_reinstall: bool = False,
) -> Plan:
    """check_status (or the last recorded one), then preheal/heal/postheal where defined,
    then reinstall what is still not healthy with everything contained in it (see
    docs/workflows.md)."""
    instances = dict(ensemble.instances)
    selected = heal_scope(ensemble, instances, node_instance_id)
    builder = Builder(HEAL)
    if diagnose_value:
        builder.note(node_instance_id or "all", f"diagnosis: {diagnose_value}")
    if always_reinstall:
        _reinstall(builder, ensemble, instances, {n: ALWAYS for n in selected},
                   allow_reinstall, may_fail)
        return builder.plan({}, node_instance_id=node_instance_id)
    health = _health(builder, ensemble, instances, selected, check_status)
    reinstall = _heal_or_reinstall(builder, ensemble, instances, selected, health)
    _reinstall(builder, ensemble, instances, reinstall, allow_reinstall, may_fail)
    return builder.plan({}, node_instance_id=node_instance_id)


def _health(
    builder: Builder, ensemble: Ensemble, instances: Mapping[str, Instance],
    selected: Sequence[str], check_status: bool,
) -> dict[str, Trigger]:
    """Each instance's "not healthy" trigger. As the seed: an instance is healthy when its
    check_status returned, not when it raised; one that declares no check, or whose check
    never ran, is not healthy. Without ``check_status`` the last recorded check decides."""
    templates = ensemble.topology.templates
    recorded = _last_checks(ensemble) if not check_status else {}
    health: dict[str, Trigger] = {}
    for name in selected:
        template = templates[instances[name].template]
        check = check_operation(template)
        if check is None:
            builder.note(name, "no check_status: taken as not healthy")
            health[name] = ALWAYS
        elif check_status:
            task = builder.add(name, template.name, check, CHECK, (),
                               done_status=Status.ok, may_fail=True)
            health[name] = frozenset({task.number})
        else:
            health[name] = _recorded_health(builder, instances[name], recorded.get(name))
    return health


def _recorded_health(
    builder: Builder, instance: Instance, last: tuple[str, bool] | None
) -> Trigger:
    if last is None:
        builder.note(instance.name, "its check_status never ran: taken as not healthy")
        return ALWAYS
    change_id, passed = last
    if passed and (instance.last_state_change != change_id or instance.status == Status.ok):
        builder.note(instance.name, f"healthy: its last check_status passed ({change_id})")
        return None
    builder.note(instance.name, f"not healthy: its last check_status failed ({change_id})")
    return ALWAYS


def _last_checks(ensemble: Ensemble) -> dict[str, tuple[str, bool]]:
    """instance -> (changeId, passed) of the last check_status (or Install.check) recorded."""
    # start-up: keeps load.taskrecords (7 modules) off heal's import until _last_checks() runs
    from unfurl_lite.load.taskrecords import task_records

    found: dict[str, tuple[str, bool]] = {}
    wanted = {f"{i}.{o}" for i, o in CHECK_OPS} | {
        "cloudify.interfaces.validation.check_status", "unfurl.interfaces.Install.check"}
    for record in task_records(ensemble.project_root):
        name = record.instance
        if name is None or record.qualified_name not in wanted:
            continue
        found[name] = (record.change_id, record.succeeded)  # oldest first: the last wins
    return found


def _heal_or_reinstall(
    builder: Builder, ensemble: Ensemble, instances: dict[str, Instance],
    selected: Sequence[str], health: Mapping[str, Trigger],
) -> dict[str, Trigger]:
    """Plan preheal/heal/postheal where an unhealthy instance defines heal; return each
    instance's reinstall trigger (its own, or its container's: the whole subgraph goes)."""
    templates = ensemble.topology.templates
    requires = instance_graph(ensemble, instances)
    scope = set(selected)
    reinstall: dict[str, Trigger] = {}
    for name in selected:  # dependency order: containers first
        outer = either(*(reinstall.get(c) for c in containers(ensemble, instances, name)
                         if c in scope))
        template = templates[instances[name].template]
        ops = [op for n in HEAL_OPS if (op := implemented(template, "Lifecycle", n))]
        if health[name] is None or outer == ALWAYS or not any(o.name == "heal" for o in ops):
            reinstall[name] = either(health[name], outer)
            continue
        unless = tuple(sorted(outer or ()))
        numbers: list[int] = []
        for index, op in enumerate(ops):
            numbers.append(builder.add(
                name, template.name, op, REPAIR, builder.last_of(requires.get(name, ())),
                # the last one ends the repair: ok and started, wherever a failure had
                # left its node state (a heal after a failed stop, ``stopping``)
                done_status=Status.ok if index == len(ops) - 1 else None,
                done_state=NodeState.started if index == len(ops) - 1 else None,
                # an error in one of them means reinstall: the rest do not run
                guard=Guard(if_failed=tuple(sorted(health[name] or ())),
                            unless_failed=(*unless, *numbers)),
                may_fail=True,
            ).number)  # fmt: skip
        reinstall[name] = either(frozenset(numbers), outer)
    return reinstall


def _reinstall(
    builder: Builder, ensemble: Ensemble, instances: dict[str, Instance],
    triggers: Mapping[str, Trigger], allow_reinstall: bool, may_fail: bool,
) -> None:
    if allow_reinstall:
        add_reinstall(builder, ensemble, instances, triggers, may_fail,
                      after=[t.number for t in builder.tasks])
        return
    surely = [n for n, t in triggers.items() if t == ALWAYS]
    if surely:  # the seed: "throw an error and exit"
        raise PlanError(
            "allow_reinstall is false, but these instances would have to be reinstalled: "
            + ", ".join(surely),
            hint="drop --no-allow-reinstall, or give them a check_status or heal operation",
        )
    decided = [t.number for t in builder.tasks]
    for name, trigger in triggers.items():
        if trigger:
            builder.add(
                name, instances[name].template, None, REPAIR, decided, guard=guard_of(trigger),
                failure=f"{name} would have to be reinstalled (--no-allow-reinstall)",
            )  # fmt: skip
