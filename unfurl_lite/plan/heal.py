"""Cloudify's heal as a plan: check each instance's status, run preheal/heal/postheal
where defined, and reinstall what is still not ok with everything contained in it.

Which instances need it is known only at run time, so the plan holds every step and
guards skip the ones a healthy instance does not need (``--dryrun`` lists them all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from unfurl_lite.errors import PlanError
from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeTemplate, Operation, Status
from unfurl_lite.plan.lifecycle import (
    INSTALL_RELATIONSHIPS,
    add_install_tasks,
    add_relationship_tasks,
    add_uninstall_tasks,
    implemented,
)
from unfurl_lite.plan.tasks import CHECK, REPAIR, Builder, Guard, Plan
from unfurl_lite.plan.topology import (
    contained,
    containers,
    instance_graph,
    is_present,
    ordered,
    root_host,
)

HEAL = "heal"
HEAL_OPS = ("preheal", "heal", "postheal")


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
        for n in ordered(ensemble, instances, scope)
        if is_present(instances[n]) and instances[n].template in templates
    ]
    builder = Builder(HEAL)
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
            deps = builder.last_of(instance_graph(ensemble, instances).get(name, ()))
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
        add_reinstall(builder, ensemble, instances, selected, heal_tasks, ignore_failure)
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


def add_reinstall(
    builder: Builder,
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
    dependents = dependencies.reverse(deps)
    wanted = set(selected)
    given = guards or {}
    guard_of: dict[str, Guard | None] = {}
    marks: dict[str, int] = {}
    for name in selected:
        scope = (name, *(c for c in containers(ensemble, instances, name) if c in wanted))
        guard_of[name] = given[name] if name in given else (
            Guard(unless_ok=scope) if guarded else None
        )
        mark = builder.add(
            name,
            instances[name].template,
            None,
            REPAIR,
            # the guard reads the containers' status: wait for their checks to report it
            [*barrier, *builder.last_of(scope[1:])],
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
            builder.last_of([d for d in dependents.get(name, ()) if d in wanted]),
            ignore_failure=ignore_failure,
        )
        guard_new(builder, start, guard_of[name])
        uninstalls.extend(t.number for t in builder.tasks[start:])
    for name in selected:
        start = len(builder.tasks)
        add_install_tasks(
            builder,
            ensemble,
            instances[name],
            instances,
            REPAIR,
            uninstalls + builder.last_of([d for d in deps.get(name, ()) if d in wanted]),
            resume_from_state=False,
        )
        guard_new(builder, start, guard_of[name])
    for name in selected:
        for dependent in dependents.get(name, ()):
            if dependent in wanted or not is_present(instances[dependent]):
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


def guard_new(builder: Builder, start: int, guard: Guard | None) -> None:
    """Put ``guard`` on the tasks added since ``start`` (they are frozen, so replace them)."""
    if guard is None:
        return
    builder.tasks[start:] = [replace(t, guard=guard) for t in builder.tasks[start:]]

