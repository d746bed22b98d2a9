"""Cloudify's update as a plan: the minimal change from what was deployed to what the
spec now says. Removed templates are uninstalled, new ones installed, and instances whose
operations' inputs changed (or that drifted) are updated in place or reinstalled.

Planning changes nothing: templates removed from the spec are found in git history and
handed to the job in the plan (``removed_templates``), not put back into the ensemble.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from unfurl_lite.load import previous
from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, Requirement, Status
from unfurl_lite.plan.baselines import changed_operations, deployed_digests, spec_baseline
from unfurl_lite.plan.heal import check_operation
from unfurl_lite.plan.lifecycle import (
    UNLINK,
    add_install_tasks,
    add_relationship_tasks,
    add_uninstall_tasks,
    implemented,
)
from unfurl_lite.plan.reinstall import ALWAYS, Trigger, add_reinstall
from unfurl_lite.plan.tasks import ADD, CHECK, UNDEPLOY, UPDATE, Builder, Guard, Plan
from unfurl_lite.plan.topology import instance_graph, is_present, planned_instances, with_templates

UPDATE_OPS = ("update", "update_config", "update_apply")


@dataclass(frozen=True)
class UpdateOptions:
    """How an update plans, as Cloudify's update parameters say it: one record handed to
    each step, instead of seven flags threaded through them."""

    preview: bool = False
    skip_install: bool = False
    skip_uninstall: bool = False
    skip_reinstall: bool = False
    skip_drift_check: bool = False
    always_reinstall: bool = False
    skip_heal: bool = False


def plan_update(
    ensemble: Ensemble,
    preview: bool = False,
    skip_install: bool = False,
    skip_uninstall: bool = False,
    skip_reinstall: bool = False,
    skip_drift_check: bool = False,
    always_reinstall: bool = False,
    skip_heal: bool = False,
    workflow_id: str | None = None,
) -> Plan:
    """The minimal change from what was deployed to what the spec now says. The keywords
    are the workflow's declared parameters, as the registry passes them (by name, or by
    the keyword its declaration gives, as ``always_reinstall``); planning
    reads them as one :class:`UpdateOptions`."""
    options = UpdateOptions(preview, skip_install, skip_uninstall, skip_reinstall,
                            skip_drift_check, always_reinstall, skip_heal)
    plan = _plan(ensemble, options)
    if workflow_id:
        plan.options["workflow_id"] = workflow_id
    return plan


def _plan(ensemble: Ensemble, options: UpdateOptions) -> Plan:
    """Uninstall what the spec removed, install what it added, then update (or reinstall)
    what changed or drifted, in dependency order."""
    instances = planned_instances(ensemble)
    removed = [
        n for n, i in ensemble.instances.items()
        if i.template not in ensemble.topology.templates and is_present(i)
    ]
    old, links = ({}, {}) if options.skip_uninstall or not removed else \
        previous.removed_with_links(ensemble, {instances[n].template for n in removed})
    # removed templates' operations render and run like any other's: plan with a view
    # that has them, leave the caller's ensemble as it is, and hand them to the job
    ensemble = with_templates(ensemble, old)
    builder = Builder(UPDATE)
    _uninstall_removed(builder, ensemble, instances, removed, old, links,
                       options.skip_uninstall)
    new = {n: i for n, i in instances.items() if n not in ensemble.instances}
    _install_new(builder, ensemble, instances, new, options.skip_install)
    baselines, reinstall = _update_changed(builder, ensemble, instances, [*new, *removed],
                                           options)
    if reinstall:
        add_reinstall(builder, ensemble, instances, reinstall, True)
    plan = builder.plan(new, preview=options.preview)
    plan.forget = tuple(removed) if not options.skip_uninstall else ()
    plan.baselines = baselines
    plan.removed_templates = old
    return plan


def _install_new(builder: Builder, ensemble: Ensemble, instances: dict[str, Instance],
                 new: dict[str, Instance], skip: bool) -> None:
    """Install the instances of templates the spec added, in dependency order."""
    deps = instance_graph(ensemble, instances)
    for name in dependencies.topological_order(deps):
        if name not in new:
            continue
        if skip:
            builder.note(name, "not installed (--skip-install)")
            continue
        add_install_tasks(
            builder, ensemble, new[name], instances, ADD, builder.last_of(deps.get(name, ())),
            resume_from_state=False,
        )  # fmt: skip


def _uninstall_removed(
    builder: Builder, ensemble: Ensemble, instances: dict[str, Instance], removed: list[str],
    old: Mapping[str, object], links: Mapping[str, Sequence[Requirement]], skip: bool,
) -> None:
    """Uninstall the instances of removed templates as the uninstall workflow does:
    dependents first, each after the instances that stay have run their unlink on it (the
    requirements the spec dropped with it, as the last commit that had it wrote them)."""
    deps = instance_graph(ensemble, instances)
    dependents = dependencies.reverse(deps)
    gone = set(removed)
    for name in reversed(dependencies.topological_order(deps)):
        if name not in gone:
            continue
        if skip:
            builder.note(name, "not uninstalled (--skip-uninstall): its template was removed")
            continue
        if instances[name].template not in old:
            builder.add(
                name, instances[name].template, None, UNDEPLOY, (),
                done_state=NodeState.deleted, done_status=Status.absent,
            )  # fmt: skip
            builder.note(name, "removed from the spec and from git history: forgotten, no "
                               "operation run")
            continue
        unlinks: list[int] = []
        target = instances[name].template
        for other, instance in instances.items():
            reqs = [r for r in links.get(instance.template, ()) if r.node == target]
            if other in gone or not reqs or not is_present(instance):
                continue
            unlinks += add_relationship_tasks(
                builder, ensemble, instances, other, name, UNLINK, UNDEPLOY, (),
                requirements=reqs,
            )  # fmt: skip
        add_uninstall_tasks(
            builder, ensemble, instances[name], instances, UNDEPLOY,
            [*unlinks, *builder.last_of(d for d in dependents.get(name, ()) if d in gone)],
            stops_always=True,  # as the uninstall workflow: a failed stop's ``stopping`` too
        )  # fmt: skip
        builder.note(name, "removed from the spec: uninstalled with the operations its "
                           "template had in the last commit that defined it")


def _update_changed(
    builder: Builder, ensemble: Ensemble, instances: dict[str, Instance], skip: Sequence[str],
    options: UpdateOptions,
) -> tuple[dict[str, dict[str, str]], dict[str, Trigger]]:
    """Drift checks, update operations and the reinstall triggers of the instances that
    changed or drifted: (their new baselines, instance -> when to reinstall it)."""
    templates = ensemble.topology.templates
    deps = instance_graph(ensemble, instances)
    changed = changed_operations(ensemble, deployed_digests(ensemble))
    baselines: dict[str, dict[str, str]] = {}
    reinstall: dict[str, Trigger] = {}
    for name in dependencies.topological_order(deps):
        instance = instances[name]
        if name in skip or not is_present(instance):
            continue
        template = templates[instance.template]
        updates = [op for n in UPDATE_OPS if (op := implemented(template, "Lifecycle", n))]
        drift = implemented(template, "Lifecycle", "check_drift")
        is_changed = name in changed
        drift_task: int | None = None
        started = instance.state == NodeState.started
        if not options.skip_drift_check and drift is not None and started:
            drift_task = builder.add(
                name, template.name, drift, CHECK, builder.last_of(deps.get(name, ())),
                may_fail=True,
            ).number  # fmt: skip
        if not is_changed and drift_task is None:
            continue
        if is_changed:
            builder.note(name, "changed: " + ", ".join(changed[name]))
        # a failing check_drift means drift
        drifted: tuple[int, ...] = () if is_changed or drift_task is None else (drift_task,)
        baselines[name] = spec_baseline(ensemble, name)
        if updates and not options.always_reinstall:
            unhealthy: tuple[int, ...] = ()
            status_check = check_operation(template)
            if not options.skip_heal and status_check is not None:
                unhealthy = (builder.add(
                    name, template.name, status_check, CHECK,
                    builder.last_of(deps.get(name, ())), may_fail=True,
                    done_status=Status.ok, guard=Guard(if_failed=drifted) if drifted else None,
                ).number,)  # fmt: skip
            numbers: list[int] = []
            for index, op in enumerate(updates):
                numbers.append(builder.add(
                    name, template.name, op, UPDATE, builder.last_of(deps.get(name, ())),
                    done_status=Status.ok if index == len(updates) - 1 else None,
                    guard=Guard(if_failed=drifted, unless_failed=(*unhealthy, *numbers)),
                    may_fail=not options.skip_reinstall,
                ).number)  # fmt: skip
            if not options.skip_reinstall:
                # a failed update (or an unhealthy instance) is reinstalled instead
                reinstall[name] = frozenset((*unhealthy, *numbers))
        elif options.skip_reinstall:
            builder.note(name, "not reinstalled (--skip-reinstall)")
            del baselines[name]
        else:
            reinstall[name] = frozenset(drifted) if drifted else ALWAYS
    return baselines, reinstall
