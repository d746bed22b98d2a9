"""Unfurl's lifecycle workflows as plans: deploy, undeploy, check and discover.

Deploy brings every instance to ``ok`` (adding, repairing, or reconfiguring what changed
since it last ran); undeploy takes them down, dependents first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from unfurl_lite.errors import PlanError
from unfurl_lite.model import changeid, dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import (
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Priority,
    Status,
    effective_status,
)
from unfurl_lite.plan.directives import discover, found_not_created, note_directives
from unfurl_lite.plan.lifecycle import (
    add_install_tasks,
    add_relinks,
    add_uninstall_tasks,
    implemented,
)
from unfurl_lite.plan.tasks import (
    ADD,
    CHECK,
    DISCOVER,
    FORCE,
    MISSING,
    PRUNE,
    RECONFIGURE,
    REPAIR_DEGRADED,
    REPAIR_ERROR,
    UNDEPLOY,
    Builder,
    Plan,
)
from unfurl_lite.plan.topology import (
    in_plan_order,
    instance_graph,
    known_template,
    operational_needs,
    operationless,
    planned_instances,
    removal_order,
    select,
    unrequired_defaults,
    with_templates,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.load.workflows import Workflow

#: ``--repair`` choices: which instances a deploy runs again (Unfurl's plus ``missing``)
REPAIR_CHOICES = ("error", "degraded", "missing", "none")
#: ``--change-detection`` choices: when a deployed instance is reconfigured
CHANGE_DETECTION_CHOICES = ("skip", "spec", "evaluate", "always")
_MISSING = (Status.unknown, Status.pending, Status.absent)


def _deploy_reason(
    instance: Instance, force: bool, add: bool = True, repair: str = "error"
) -> str | None:
    """Unfurl's DeployPlan.include_instance: ``add`` for an instance no job touched yet,
    ``missing`` for one that is not there (unknown after a failed operation, pending,
    absent), then what ``repair`` asks for. ``add`` is False with ``--skip-new``."""
    if force:
        return FORCE
    never = instance.last_config_change is None and instance.last_state_change is None
    if add and instance.status != Status.ok:
        if never:
            return ADD
        if instance.status in _MISSING:
            return MISSING
    if repair == "missing":
        return MISSING if instance.status in _MISSING and not never else None
    return _repair_reason(instance, repair)


def _repair_reason(instance: Instance, repair: str) -> str | None:
    """Unfurl's check_for_repair: ``error`` re-runs failed instances (a required one whose
    status is unknown or pending counts as failed), ``degraded`` degraded ones too, both
    for the reason ``degraded``."""
    status = instance.status
    if repair == "none":
        return None
    if status in (Status.unknown, Status.pending):
        if instance.priority != Priority.required:
            return None
        status = Status.error
    if status not in (Status.degraded, Status.error):
        return None
    if repair == "degraded":
        return REPAIR_DEGRADED
    return REPAIR_ERROR if status == Status.error else None


def _check_op(template: NodeTemplate) -> Operation | None:
    return implemented(template, "Install", "check")


def _replacing(ensemble: Ensemble, workflow: str) -> Workflow | None:
    """The spec's TOSCA workflow that replaces ``workflow``'s lifecycle, if it has one;
    the workflows are read (plan.tosca) only when the topology defines some."""
    topology = (ensemble.spec.get("service_template") or {}).get("topology_template") or {}
    if not topology.get("workflows"):
        return None
    # start-up: keeps plan.tosca, load.workflows (5 modules) off a topology without workflows
    from unfurl_lite.plan import tosca

    return tosca.replacing(ensemble.spec, workflow)


def _replace_lifecycle(workflow: Workflow, builder: Builder, ensemble: Ensemble,
                       instance: Instance, instances: dict[str, Instance],
                       after: list[int]) -> bool:
    """plan.tosca's replace_lifecycle, for a workflow :func:`_replacing` found."""
    # start-up: keeps plan.tosca, load.workflows (5 modules) off a topology without workflows
    from unfurl_lite.plan import tosca

    return tosca.replace_lifecycle(workflow, builder, ensemble, instance, instances, after)


def plan_deploy(
    ensemble: Ensemble,
    instance_names: Sequence[str] = (),
    force: bool = False,
    start_without_operation: bool = False,
    template: str | None = None,
    check: bool = False,
    repair: str = "error",
    skip_new: bool = False,
    change_detection: str = "evaluate",
    prune: bool = False,
    upgrade: bool = False,
    destroy_discovered: bool = False,
) -> Plan:
    """Unfurl's deploy plan and its job options: ``template`` limits it to a template and
    what it requires; ``check`` checks each new instance first (created only if the check
    does not find it); ``repair`` (error, degraded, missing, none) and ``skip_new`` choose
    which existing and new instances run; ``change_detection`` when a deployed one is
    reconfigured (``skip``: never; ``always``: even a ``customized`` one); ``prune``
    deletes, as undeploy would, the recorded instances the job did not plan for.
    ``upgrade`` changes nothing here, as in Unfurl 1.2.0 (it compares a template with
    itself), and is recorded with the job; ``destroy_discovered``: prune discovered ones too.
    ``start_without_operation``: Cloudify's install, where every instance ends ``started``
    (a step with no operation does nothing, the instance goes through it)."""
    _choice("repair", repair, REPAIR_CHOICES)
    _choice("change-detection", change_detection, CHANGE_DETECTION_CHOICES)
    if prune:  # it reads git's history
        from unfurl_lite.plan.verdicts import stop_if_only_to_remember  # start-up: prune only

        stop_if_only_to_remember()
    instances = in_plan_order(ensemble, planned_instances(ensemble))
    if check:  # as Unfurl's create_resource: a new instance starts unknown, so it is checked
        instances = {n: i if n in ensemble.instances or i.status != Status.pending
                     else replace(i, status=Status.unknown) for n, i in instances.items()}
    deps = instance_graph(ensemble, instances)
    wanted = (dependencies.closure(deps, select(instances, instance_names)) if instance_names
              else set(deps))
    if template is not None:
        known_template(ensemble, template)
        wanted &= dependencies.closure(
            deps, [n for n, i in instances.items() if i.template == template])
    visited = set(wanted)
    if skip_new:
        wanted -= {n for n in instances if n not in ensemble.instances}
    builder = Builder("deploy")
    # as Unfurl: a default template nothing requires is left out, unless asked for by name
    unrequired: frozenset[str] = frozenset() if instance_names or template else unrequired_defaults(
        ensemble.topology)
    note_directives(ensemble, instances, builder, unrequired)
    wanted -= {n for n, i in instances.items()
               if i.template in unrequired and n not in ensemble.instances}
    idle: list[frozenset[str]] = []  # templates with no operation, found when first needed
    replaces = _replacing(ensemble, "deploy")
    recorded: dict[tuple[str, str], tuple[str, str]] = {}
    effective: dict[str, Status] = {}  # each instance's effective status, found once
    for name in instances:  # Unfurl's plan order: a dependency placed later does not reorder
        if name not in wanted:
            continue
        instance = instances[name]
        template_of = ensemble.topology.templates.get(instance.template)
        if template_of is None:
            builder.note(
                name, f"skipped: its template {instance.template!r} is no longer in the spec"
            )
            continue
        if instance.discovered and not force:
            builder.note(name, "skipped: discovered, not managed by deploy")
            continue
        if template_of.priority is Priority.ignore:  # root: {node: X} does not require it
            builder.note(name, "skipped: not required by the topology's root node")
            continue
        if instance.priority is not Priority.required and not (instance_names or template):
            # as Unfurl: a deploy not limited to some instances runs only required ones
            builder.note(name, f"skipped: its priority is {instance.priority}, not required")
            continue
        instance = _in_effect(instances, deps, name, effective)
        reason = _deploy_reason(instance, force, not skip_new, repair)
        after = [builder.last[d] for d in deps[name] if d in builder.last]
        directives = template_of.directives
        if "discover" in directives and discover(builder, instance, template_of, after):
            continue
        if reason is None and not skip_new and _waits_on_pending(ensemble, deps[name], idle):
            reason = MISSING
            instance = replace(instance, status=Status.pending)  # its status in effect
        if reason is None and "check" in directives and _check_op(template_of) is not None:
            # Unfurl's ``check`` directive: an instance already ok is checked on every
            # deploy, from ``unknown``, and nothing else runs on it
            builder.add(name, template_of.name, _check_op(template_of), CHECK, after,
                        done_status=Status.unknown)
            continue
        if reason is None:
            if not _detects_changes(instance, change_detection):
                builder.note(name, "skipped: already ok")
                continue
            changed = _configure_changed(ensemble, instance, template_of, recorded)
            if changed is None:
                builder.note(name, "skipped: already ok")
                continue
            _reconfigure(ensemble, builder, name, template_of, changed, after)
            continue
        if replaces and _replace_lifecycle(replaces, builder, ensemble, instance, instances,
                                           after):
            continue
        skip_when = None
        check_op = _check_op(template_of)
        if instance.status == Status.unknown and check_op is not None and not force:
            builder.add(name, template_of.name, check_op, CHECK, after)
            skip_when = Status.ok
        add_install_tasks(
            builder, ensemble, instance, instances, reason, after, skip_when,
            pass_through=start_without_operation,
        )
    add_relinks(builder, ensemble, instances, deps, [n for n in instances if n in wanted])
    # as Unfurl: a job that runs something records every instance it planned for, even one
    # with nothing to run (it stays pending); a job that runs nothing records none
    kept: set[str] = wanted if builder.last else set()
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in kept}
    if not prune:
        plan = builder.plan(new, force=force)
    else:
        plan = _prune(ensemble, builder, new,
                      {n for n in ensemble.instances if n not in visited}, force,
                      destroy_discovered)
    plan.cloudify = start_without_operation
    plan.text_only = not recorded and not prune  # no digests rendered, no history read
    return plan


def _prune(
    ensemble: Ensemble, builder: Builder, new: dict[str, Instance], pruned: set[str],
    force: bool, destroy_discovered: bool,
) -> Plan:
    """``deploy --prune``: the recorded instances the job did not plan for are deleted by
    undeploy's rules, after everything else. One whose template is gone from the spec is
    deleted with the operations its template had in the last commit that defined it."""
    from unfurl_lite.load import previous  # start-up: keeps load.previous (12 modules) off `plan`

    gone = {i.template for n, i in ensemble.instances.items()
            if n in pruned and i.template not in ensemble.topology.templates}
    old = previous.removed_templates(ensemble, gone) if gone else {}
    view = with_templates(ensemble, old)
    _plan_removals(view, builder, dict(ensemble.instances), pruned, PRUNE, force=force,
                   destroy_discovered=destroy_discovered, ends_absent=False)
    plan = builder.plan(new, force=force)
    plan.removed_templates = old
    plan.forget = tuple(n for n in pruned if ensemble.instances[n].template in gone)
    return plan


def _choice(option: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise PlanError(f"--{option} {value!r} is not one of: {', '.join(choices)}",
                        hint=f"choose one of: {', '.join(choices)}")


def _detects_changes(instance: Instance, change_detection: str) -> bool:
    """Whether a deployed instance is compared with its spec at all: never with ``skip``;
    a ``customized`` instance (changed on purpose since it was configured) only with
    ``always``, as Unfurl."""
    if change_detection == "skip":
        return False
    return change_detection == "always" or not instance.extra.get("customized")


def _reconfigure(
    ensemble: Ensemble, builder: Builder, name: str, template: NodeTemplate,
    changed: tuple[Operation, str], after: list[int],
) -> None:
    # start-up: keeps plan.baselines (18 modules) off `plan`, `deploy` until _reconfigure() runs
    from unfurl_lite.plan.baselines import changed_reads, environment_read

    op, since = changed
    what = changed_reads(ensemble, name, op, since)
    read = environment_read(ensemble, name, op)
    also = f"; they read the environment variables {', '.join(read)}" if read else ""
    builder.note(name, f"reconfigure: the inputs of {op.qualified_name} changed since "
                       f"it last ran ({since})" + (f": {', '.join(what)}" if what else "")
                 + also)
    # as Unfurl: a reconfigure does not end the deploy workflow (its status stays, and it
    # records a change only when it reports one: a status, or attributes it changed)
    builder.add(name, template.name, op, RECONFIGURE, after,
                running_state=NodeState.configuring, done_state=NodeState.configured)


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
    # start-up: keeps plan.baselines (18 modules) off `plan` until _configure_changed() runs
    from unfurl_lite.plan.baselines import deployed_digests, digest_now, recorded_keys
    from unfurl_lite.plan.verdicts import stop_if_only_to_remember

    if not recorded:
        stop_if_only_to_remember()
        recorded.update(deployed_digests(ensemble) or {("", ""): ("", "")})
    last = recorded.get((instance.name, op.qualified_name))
    if last is None or not last[1]:
        return None
    now = digest_now(ensemble, instance.name, op, recorded_keys(last))
    return (op, last[0]) if now is not None and now != last[1] else None


def is_removable(instance: Instance, destroy_discovered: bool = False) -> str | None:
    """Why undeploy leaves an instance alone, or None when it should be removed (as
    Unfurl's should_delete: by its status, so a stopped instance, ``pending``, is not
    deleted (unfurl-cases 430); one ``deploy --prune`` deleted stays ``ok`` in state
    ``deleted``, and is deleted again)."""
    if instance.status == Status.absent:
        return "skipped: already absent"
    if instance.status == Status.pending:
        return "skipped: it does not exist (status pending: never deployed, or stopped)"
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
    may_fail: bool = False,
    delete_without_operation: bool = False,
    force: bool = False,
    template: str | None = None,
) -> Plan:
    """``delete_without_operation``: Cloudify's uninstall (see add_uninstall_tasks);
    ``template`` limits the job to that template's instances."""
    instances = dict(ensemble.instances)
    wanted = set(select(instances, instance_names)) if instance_names else set(instances)
    if template is not None:
        known_template(ensemble, template)
        wanted = {n for n in wanted if instances[n].template == template}
    builder = Builder("undeploy")
    _plan_removals(ensemble, builder, instances, wanted, UNDEPLOY, force, destroy_discovered,
                   may_fail, delete_without_operation)
    plan = builder.plan({}, destroy_discovered=destroy_discovered)
    plan.cloudify = delete_without_operation
    return plan


def _plan_removals(
    ensemble: Ensemble,
    builder: Builder,
    instances: dict[str, Instance],
    wanted: set[str],
    reason: str,
    force: bool = False,
    destroy_discovered: bool = False,
    may_fail: bool = False,
    delete_without_operation: bool = False,
    ends_absent: bool = True,
) -> None:
    """Delete the ``wanted`` instances, dependents first, as Unfurl's undeploy: an instance
    that stays (protected, not created here, not wanted...) while it is operational and
    required keeps what it needs, directly or through its host; ``force`` turns that off."""
    deps = instance_graph(ensemble, instances)
    dependents = dependencies.reverse(deps)
    replaces = _replacing(ensemble, "undeploy")
    kept = {name: _kept_because(ensemble, instances[name], destroy_discovered,
                                delete_without_operation)
            if name in wanted else "skipped: not selected by the job"
            for name in instances}
    keepers: set[str] = set() if force else {
        name for name, why in kept.items()
        if why and _keeps_what_it_needs(instances, deps, name)
    }
    needed = dependencies.closure(deps, keepers) - keepers
    for name in removal_order(ensemble, instances, deps):
        if name not in wanted:
            continue
        instance = instances[name]
        why = kept[name]
        if not why and name in needed:
            users = sorted(k for k in keepers if name in dependencies.closure(deps, [k]))
            why = f"skipped: required instances depend on it: {', '.join(users)}"
        if why:
            builder.note(name, why)
            continue
        if ensemble.topology.templates.get(instance.template) is None:
            builder.note(
                name, f"skipped: its template {instance.template!r} is no longer in the spec"
            )
            continue
        after = [builder.last[d] for d in dependents.get(name, ()) if d in builder.last]
        if replaces and _replace_lifecycle(replaces, builder, ensemble, instance, instances,
                                           after):
            continue
        # as Unfurl 1.2.0 (tests/data/unfurl120/14-directives/check): undeploy never checks
        # first, even an instance whose status is unknown
        add_uninstall_tasks(
            builder, ensemble, instance, instances, reason, after, None, may_fail,
            mark_deleted=delete_without_operation, ends_absent=ends_absent,
        )


def _kept_because(
    ensemble: Ensemble, instance: Instance, destroy_discovered: bool,
    delete_without_operation: bool,
) -> str | None:
    """Why undeploy leaves this instance itself, or None when it deletes it."""
    why = is_removable(instance, destroy_discovered)
    directives = getattr(ensemble.topology.templates.get(instance.template), "directives", ())
    if "protected" in directives and not why:
        why = 'skipped: instance with "protected" directive'
    unmanaged = not instance.created and not delete_without_operation
    if (unmanaged or found_not_created(instance, directives)) and not why \
            and not destroy_discovered:
        # as Unfurl: e.g. an instance a failed Shell create left ``unknown``
        why = "skipped: instance wasn't created by this ensemble (use --destroy-discovered)"
    return why


def _keeps_what_it_needs(
    instances: dict[str, Instance], deps: dict[str, list[str]], name: str
) -> bool:
    """Unfurl's "cancelling" instance: one that stays while operational (its effective
    status ok or degraded) and required, so what it depends on must stay too."""
    instance = instances[name]
    if instance.priority != Priority.required:
        return False
    effective = _effective(instances, deps, name, set())
    return effective in (Status.ok, Status.degraded)


def _in_effect(instances: dict[str, Instance], deps: dict[str, list[str]], name: str,
               found: dict[str, Status]) -> Instance:
    """The instance as Unfurl's plan sees it: its status is the effective one (its
    ``status`` aggregates what it requires), so one that is ok but requires an instance in
    error (or unknown, absent) is in error and repaired, reason ``error`` (unfurl-cases
    304). A pending dependency is left to :func:`_waits_on_pending`. ``found``: the
    statuses already folded (the loop goes in dependency order: each is folded once)."""
    instance = instances[name]
    below = [found[d] if d in found else instances[d].status
             for d in deps.get(name, ()) if d in instances]
    found[name] = status = effective_status(instance.status, below)
    if status in (Status.error, Status.degraded) and status != instance.status:
        return replace(instance, status=status)
    return instance


def _effective(
    instances: dict[str, Instance], deps: dict[str, list[str]], name: str, trail: set[str]
) -> Status:
    own = instances[name].status
    trail = trail | {name}
    below = [_effective(instances, deps, d, trail) for d in deps.get(name, ()) if d not in trail]
    return effective_status(own, below)


def plan_install_operation(
    ensemble: Ensemble,
    workflow: str,
    interface: str,
    operation: str,
    reason: str,
    instance_names: Sequence[str] = (),
    template: str | None = None,
) -> Plan:
    """check and discover: one Install operation per instance that has it, all in parallel
    (``template``: that template's instances and what they require, as deploy's: Unfurl
    plans every workflow from the same templates; unfurl-cases 263)."""
    instances = in_plan_order(ensemble, planned_instances(ensemble))
    wanted = set(select(instances, instance_names)) if instance_names else set(instances)
    if template is not None:
        known_template(ensemble, template)
        wanted &= dependencies.closure(instance_graph(ensemble, instances), [
            n for n, i in instances.items() if i.template == template])
    builder = Builder(workflow)
    # a check waits for its dependencies' checks, and is skipped as it starts when one of
    # them is not operational then (Unfurl 1.2.0's entry test; run/status.py)
    needs = operational_needs(ensemble, instances) if operation == "check" else {}
    checked: dict[str, tuple[int, ...]] = {}  # instance -> the checks a dependent follows
    for name, instance in instances.items():
        template_of = ensemble.topology.templates.get(instance.template)
        op = implemented(template_of, interface, operation) if template_of else None
        mine = needs.get(name, ())
        after = sorted({n for peer, _, _ in mine for n in checked.get(peer, ())})
        if name not in wanted or op is None or template_of is None:
            checked[name] = tuple(after)  # its dependents follow what it follows
            if name in wanted:
                builder.note(name, f"not {'checked' if operation == 'check' else 'discovered'}"
                                   f": no {operation} operation")
            continue
        checked[name] = (builder.add(name, template_of.name, op, reason, after,
                                     needs_operational=mine).number,)
    # as Unfurl: a job that runs something records every instance it planned for, one
    # without the operation too (pending, never touched)
    kept: set[str] = wanted if builder.last else set()
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in kept}
    return builder.plan(new)


def plan_check(
    ensemble: Ensemble, instance_names: Sequence[str] = (), template: str | None = None
) -> Plan:
    return plan_install_operation(ensemble, "check", "Install", "check", CHECK, instance_names,
                                  template)


def plan_discover(
    ensemble: Ensemble, instance_names: Sequence[str] = (), template: str | None = None
) -> Plan:
    return plan_install_operation(
        ensemble, "discover", "Install", "discover", DISCOVER, instance_names, template
    )
