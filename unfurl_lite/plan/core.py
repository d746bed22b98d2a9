"""Workflows become plans: an ordered graph of tasks, each an operation on one instance.

Planning reads the ensemble and decides what to run and why (the task's *reason*);
it runs nothing. ``unfurl plan`` prints the result; a job runs it. Lifecycles are tables
of steps so that TOSCA's Standard/Configure interfaces and Cloudify's lifecycle,
validation, monitoring and relationship interfaces share one mechanism.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from unfurl_lite.errors import PlanError
from unfurl_lite.load.loader import Ensemble
from unfurl_lite.model import graph
from unfurl_lite.model.entities import (
    Implementation,
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Requirement,
    Status,
    Topology,
)
from unfurl_lite.plan import tosca as tosca_workflows

# reasons, as Unfurl names them
RECONFIGURE = "reconfigure"
ADD, UPDATE, REPAIR, FORCE, CHECK, DISCOVER, UNDEPLOY, RUN = (
    "add",
    "update",
    "repair",
    "force",
    "check",
    "discover",
    "undeploy",
    "run",
)


@dataclass(frozen=True)
class Guard:
    """A condition checked just before a task starts, for workflows whose path depends on
    earlier outcomes (heal, update, scale's rollback); the task is skipped when it fails."""

    unless_ok: tuple[str, ...] = ()  # run only if one of these instances is not ok
    if_failed: tuple[int, ...] = ()  # run only if one of these tasks failed or was blocked
    if_ran: tuple[int, ...] = ()  # run only if one of these tasks ran (succeeded or failed)
    unless_failed: tuple[int, ...] = ()  # run only if none of these tasks failed or was blocked


@dataclass(frozen=True)
class Task:
    number: int  # the task's index within the job; its changeId ends with it
    target: str  # the instance the operation runs on
    template: str
    operation: Operation | None  # None: no operation, only a state change ("pass-through")
    reason: str
    workflow: str
    after: tuple[int, ...] = ()  # tasks that must finish first
    running_state: NodeState | None = None
    done_state: NodeState | None = None
    done_status: Status | None = None  # the instance's status when this task succeeds
    requirement: Requirement | None = None  # set for relationship operations
    source: str | None = None  # relationship source instance
    peer: str | None = None  # relationship target instance
    skip_when: Status | None = None  # skip if the instance already has this status
    extra_inputs: dict[str, Any] = field(default_factory=dict)
    allow_override: bool = True
    ignore_failure: bool = False
    guard: Guard | None = None
    failure: str | None = None  # a pass-through that fails with this message when it runs

    @property
    def name(self) -> str:
        return self.operation.name if self.operation else "(no operation)"

    @property
    def is_passthrough(self) -> bool:
        return self.operation is None


@dataclass(frozen=True)
class Note:
    target: str
    message: str


@dataclass
class Plan:
    workflow: str
    tasks: list[Task]
    new_instances: dict[str, Instance] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    forget: tuple[str, ...] = ()  # instances dropped from status if the job leaves them gone
    baselines: dict[str, dict[str, str]] = field(default_factory=dict)  # see workflows.update
    #: False: the job records itself but leaves instances' status and changeIds alone
    affects_history: bool = True

    @property
    def runnable(self) -> list[Task]:
        return [t for t in self.tasks if not t.is_passthrough]

    def by_target(self) -> dict[str, list[Task]]:
        grouped: dict[str, list[Task]] = {}
        for task in self.tasks:
            grouped.setdefault(task.target, []).append(task)
        return grouped


# ---------------------------------------------------------------------------- lifecycles


@dataclass(frozen=True)
class NodeStep:
    candidates: tuple[tuple[str, str], ...]  # (interface, operation); the first defined wins
    running: NodeState | None = None
    done: NodeState | None = None


@dataclass(frozen=True)
class RelationshipStep:
    # (interface, operation, side): side "source" runs on the requirer, "target" on the required
    operations: tuple[tuple[str, str, str], ...]


Step = NodeStep | RelationshipStep

INSTALL: tuple[Step, ...] = (
    NodeStep((("Validation", "create"),)),
    NodeStep((("Lifecycle", "precreate"),)),
    NodeStep(
        (("Standard", "create"), ("Lifecycle", "create")), NodeState.creating, NodeState.created
    ),
    RelationshipStep(
        (
            ("Configure", "pre_configure_source", "source"),
            ("Configure", "pre_configure_target", "target"),
            ("RelationshipLifecycle", "preconfigure", "source"),
        )
    ),
    NodeStep(
        (("Standard", "configure"), ("Lifecycle", "configure")),
        NodeState.configuring,
        NodeState.configured,
    ),
    RelationshipStep(
        (
            ("Configure", "post_configure_source", "source"),
            ("Configure", "post_configure_target", "target"),
            ("RelationshipLifecycle", "postconfigure", "source"),
        )
    ),
    NodeStep(
        (("Standard", "start"), ("Lifecycle", "start")), NodeState.starting, NodeState.started
    ),
    NodeStep((("Lifecycle", "poststart"),)),
    NodeStep((("Monitoring", "start"),)),
    RelationshipStep(
        (
            ("Configure", "add_target", "source"),
            ("Configure", "add_source", "target"),
            ("RelationshipLifecycle", "establish", "source"),
        )
    ),
)

UNINSTALL: tuple[Step, ...] = (
    NodeStep((("Validation", "delete"),)),
    NodeStep((("Monitoring", "stop"),)),
    NodeStep((("Lifecycle", "prestop"),)),
    NodeStep((("Standard", "stop"), ("Lifecycle", "stop")), NodeState.stopping, NodeState.stopped),
    RelationshipStep(
        (
            ("Configure", "remove_target", "source"),
            ("Configure", "remove_source", "target"),
            ("RelationshipLifecycle", "unlink", "source"),
        )
    ),
    NodeStep(
        (("Standard", "delete"), ("Lifecycle", "delete")), NodeState.deleting, NodeState.deleted
    ),
    NodeStep((("Lifecycle", "postdelete"),)),
)

_PROGRESS = [
    NodeState.initial,
    NodeState.creating,
    NodeState.created,
    NodeState.configuring,
    NodeState.configured,
    NodeState.starting,
    NodeState.started,
]


def implemented(template: NodeTemplate, interface: str, name: str) -> Operation | None:
    """The operation if the template maps it to an implementation (declared-only does nothing)."""
    op = template.interfaces.get(interface, {}).get(name)
    return op if op is not None and op.implementation is not None else None


def has_operation(template: NodeTemplate, name: str) -> bool:
    return template.operation(name) is not None


# ------------------------------------------------------------------------- the instances


def planned_instances(ensemble: Ensemble) -> dict[str, Instance]:
    """Recorded instances plus new (pending) ones for each template that has none yet.

    As in Cloudify's node-instance model, a template contained in a host that has several
    instances gets its instances once per host instance, each pinned to its host
    (``hostedOn``), so scaling or healing a host carries what it contains.
    """
    instances = dict(ensemble.instances)
    recorded_templates = {i.template for i in instances.values()}
    templates = ensemble.topology.templates
    done: set[str] = set()

    def plan_template(name: str, trail: tuple[str, ...] = ()) -> None:
        if name in done or name in trail:
            return
        template = templates[name]
        host = template.host if template.host in templates and template.host != name else None
        if host is not None:
            plan_template(host, (*trail, name))
        done.add(name)
        if name in recorded_templates:
            return
        hosts = sorted(n for n, i in instances.items() if i.template == host) if host else []
        pins: list[str | None] = [*hosts] if len(hosts) > 1 else [None]
        count = template.default_instances * len(pins)
        # the first keeps the template's name, the others are <template>_<n>, as scale names them
        names = [name, *(f"{name}_{n}" for n in range(1, count))]
        for index, instance_name in enumerate(names):
            pin = pins[index // template.default_instances]
            instances.setdefault(
                instance_name,
                Instance(
                    name=instance_name,
                    template=name,
                    status=Status.pending,
                    priority=template.priority,
                    extra={"hostedOn": pin} if pin else {},
                ),
            )

    for name in templates:
        plan_template(name)
    return instances


def instance_graph(ensemble: Ensemble, instances: dict[str, Instance]) -> dict[str, list[str]]:
    """instance -> the instances it requires (every instance of each required template)."""
    by_template: dict[str, list[str]] = {}
    for inst in instances.values():
        by_template.setdefault(inst.template, []).append(inst.name)
    result: dict[str, list[str]] = {}
    for inst in instances.values():
        template = ensemble.topology.templates.get(inst.template)
        deps: list[str] = []
        if template:
            pinned = inst.extra.get("hostedOn")
            for req in template.requirements:
                peers = by_template.get(req.node, ())
                if req.node == template.host and pinned in peers:
                    peers = [str(pinned)]  # contained in its own host instance only
                deps.extend(peers)
        result[inst.name] = deps
    return result


def select(instances: dict[str, Instance], names: Sequence[str]) -> list[str]:
    """Validate --instance names (an instance or a template name selects its instances)."""
    chosen: list[str] = []
    for name in names:
        if name in instances:
            chosen.append(name)
            continue
        of_template = [i.name for i in instances.values() if i.template == name]
        if not of_template:
            import difflib

            close = difflib.get_close_matches(name, list(instances), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "run `unfurl status` to list them"
            raise PlanError(f"no instance named {name!r}", hint=hint)
        chosen.extend(of_template)
    return chosen


# ---------------------------------------------------------------------------- the builder


@dataclass
class _Builder:
    workflow: str
    tasks: list[Task] = field(default_factory=list)
    last: dict[str, int] = field(default_factory=dict)  # instance -> its last task number
    notes: list[Note] = field(default_factory=list)

    def add(
        self,
        target: str,
        template: str,
        operation: Operation | None,
        reason: str,
        after: Iterable[int],
        **kw: Any,
    ) -> Task:
        deps = set(after)
        if target in self.last:
            deps.add(self.last[target])
        task = Task(
            number=len(self.tasks) + 1,
            target=target,
            template=template,
            operation=operation,
            reason=reason,
            workflow=self.workflow,
            after=tuple(sorted(deps)),
            **kw,
        )
        self.tasks.append(task)
        self.last[target] = task.number
        return task

    def note(self, target: str, message: str) -> None:
        self.notes.append(Note(target, message))

    def plan(self, new: dict[str, Instance], **options: Any) -> Plan:
        return Plan(self.workflow, self.tasks, new, self.notes, options)


def _steps_for(
    steps: Sequence[Step],
    ensemble: Ensemble,
    template: NodeTemplate,
    instance: Instance,
    instances: dict[str, Instance],
) -> list[tuple[Operation, NodeStep | None, Requirement | None, str, str | None]]:
    """The concrete operations of a lifecycle for one instance: (op, step, req, runs_on, peer)."""
    found: list[tuple[Operation, NodeStep | None, Requirement | None, str, str | None]] = []
    for step in steps:
        if isinstance(step, NodeStep):
            for interface, name in step.candidates:
                op = implemented(template, interface, name)
                if op:
                    found.append((op, step, None, instance.name, None))
                    break
            continue
        for req in template.requirements:
            peers: list[str] | None = None  # an O(N) scan: only when an operation needs it
            for interface, name, side in step.operations:
                op = req.interfaces.get(interface, {}).get(name)
                if op is None or op.implementation is None:
                    continue
                if peers is None:
                    peers = [i.name for i in instances.values() if i.template == req.node]
                    pinned = instance.extra.get("hostedOn")
                    if req.node == template.host and pinned in peers:
                        peers = [str(pinned)]
                for peer in peers:
                    runs_on = instance.name if side == "source" else peer
                    found.append((op, None, req, runs_on, peer))
    return found


def _progress_index(state: NodeState | None) -> int:
    if state == NodeState.stopped:  # a stopped instance resumes at start
        return _PROGRESS.index(NodeState.configured)
    return _PROGRESS.index(state) if state in _PROGRESS else 0


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


def add_install_tasks(
    builder: _Builder,
    ensemble: Ensemble,
    instance: Instance,
    instances: dict[str, Instance],
    reason: str,
    after: Iterable[int],
    skip_when: Status | None = None,
    resume_from_state: bool = True,
    pass_through: bool = True,
) -> None:
    """``pass_through``: an instance with nothing to run still reaches ``started`` (Cloudify's
    install); without it (Unfurl's deploy) it gets no task and stays ``pending``."""
    template = ensemble.topology.templates[instance.template]
    ops = _steps_for(INSTALL, ensemble, template, instance, instances)
    if not ops and not pass_through:
        builder.note(instance.name, "nothing to run: no operations")
        return
    if (
        resume_from_state
        and reason in (ADD, REPAIR)
        and instance.state not in (None, NodeState.error)
        and instance.status != Status.absent
    ):
        reached = _progress_index(instance.state)
        remaining = [
            o
            for o in ops
            if o[1] is None or o[1].done is None or _progress_index(o[1].done) > reached
        ]
        # nothing left past the state it reached: only re-running its lifecycle can repair it
        if any(o[1] is not None and o[1].done is not None for o in remaining):
            ops = remaining
    deps = list(after)
    if not ops:
        builder.add(
            instance.name,
            template.name,
            None,
            reason,
            deps,
            done_state=NodeState.started,
            done_status=Status.ok,
            skip_when=skip_when,
        )
        return
    last_own = (
        max(i for i, o in enumerate(ops) if o[3] == instance.name)
        if any(o[3] == instance.name for o in ops)
        else -1
    )
    for index, (op, step, req, runs_on, peer) in enumerate(ops):
        is_last = index == last_own
        builder.add(
            runs_on,
            instances[runs_on].template if runs_on in instances else template.name,
            op,
            reason,
            deps + ([builder.last[instance.name]] if instance.name in builder.last else []),
            running_state=step.running if step else None,
            done_state=step.done if step else None,
            done_status=(Status.ok if is_last else Status.pending)
            if runs_on == instance.name
            else None,
            requirement=req,
            source=instance.name if req else None,
            peer=peer,
            skip_when=skip_when,
        )
        if runs_on != instance.name:
            # keep the source's chain ordered after a target-side relationship operation
            builder.last[instance.name] = builder.last[runs_on]


def add_uninstall_tasks(
    builder: _Builder,
    ensemble: Ensemble,
    instance: Instance,
    instances: dict[str, Instance],
    reason: str,
    after: Iterable[int],
    skip_when: Status | None = None,
    ignore_failure: bool = False,
    mark_deleted: bool = False,
) -> None:
    """``mark_deleted``: Cloudify's uninstall, where an instance without a delete operation
    still ends deleted (a step with no task does nothing, the instance goes all the same)."""
    template = ensemble.topology.templates[instance.template]
    ops = _steps_for(UNINSTALL, ensemble, template, instance, instances)
    deps = list(after)
    has_delete = any(o[1] is not None and o[1].done == NodeState.deleted for o in ops)
    if not has_delete and not mark_deleted:
        builder.note(instance.name, "skipped: no delete operation, so it is left as it is")
    for op, step, req, runs_on, peer in ops:
        deleting = step is not None and step.done == NodeState.deleted
        builder.add(
            runs_on,
            instances[runs_on].template if runs_on in instances else template.name,
            op,
            reason,
            deps + ([builder.last[instance.name]] if instance.name in builder.last else []),
            running_state=step.running if step else None,
            done_state=step.done if step else None,
            done_status=Status.absent if deleting else None,
            requirement=req,
            source=instance.name if req else None,
            peer=peer,
            skip_when=skip_when,
            ignore_failure=ignore_failure,
        )
        if runs_on != instance.name:
            builder.last[instance.name] = builder.last[runs_on]
    if mark_deleted and not has_delete:
        builder.add(
            instance.name,
            template.name,
            None,
            reason,
            deps + ([builder.last[instance.name]] if instance.name in builder.last else []),
            done_state=NodeState.deleted,
            done_status=Status.absent,
            skip_when=skip_when,
            ignore_failure=ignore_failure,
        )


def _check_op(template: NodeTemplate) -> Operation | None:
    return implemented(template, "Install", "check")


# ---------------------------------------------------------------------------- workflows


def plan_deploy(
    ensemble: Ensemble, instance_names: Sequence[str] = (), force: bool = False
) -> Plan:
    instances = planned_instances(ensemble)
    deps = instance_graph(ensemble, instances)
    wanted = graph.closure(deps, select(instances, instance_names)) if instance_names else set(deps)
    builder = _Builder("deploy")
    replaces = tosca_workflows.replacing(ensemble.spec, "deploy")
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
            builder.note(name, f"reconfigure: the inputs of {op.qualified_name} changed since "
                               f"it last ran ({since})")
            builder.add(name, template.name, op, RECONFIGURE, after,
                        running_state=NodeState.configuring, done_state=NodeState.configured,
                        done_status=Status.ok)
            continue
        if replaces and tosca_workflows.replace_lifecycle(
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

    ``recorded`` caches jobs.tsv's digests, read only once an instance has a configure."""
    from unfurl_lite.plan.cloudify import current_digest, deployed_digests

    op = implemented(template, "Standard", "configure") or implemented(
        template, "Lifecycle", "configure"
    )
    if op is None or instance.discovered:
        return None
    if not recorded:
        recorded.update(deployed_digests(ensemble) or {("", ""): ("", "")})
    last = recorded.get((instance.name, op.qualified_name))
    if last is None or not last[1]:
        return None
    now = current_digest(ensemble, instance.name, op)
    return (op, last[0]) if now is not None and now != last[1] else None


def operationless(topology: Topology) -> frozenset[str]:
    """Templates with no implemented operation at all: deploy gives their instances no task,
    so they stay ``pending`` and take their effective status from their dependencies."""
    return frozenset(
        name
        for name, template in topology.templates.items()
        if not any(
            op.implementation is not None
            for ops in template.interfaces.values()
            for op in ops.values()
        )
        and not any(
            op.implementation is not None
            for req in template.requirements
            for ops in req.interfaces.values()
            for op in ops.values()
        )
    )


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
    builder = _Builder("undeploy")
    replaces = tosca_workflows.replacing(ensemble.spec, "undeploy")
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
        if replaces and tosca_workflows.replace_lifecycle(
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
    builder = _Builder(workflow)
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


def plan_run(
    ensemble: Ensemble,
    instance_names: Sequence[str],
    command: Sequence[str] = (),
    operation: str | None = None,
    inputs: dict[str, Any] | None = None,
) -> Plan:
    """An ad hoc command, or one named operation, on the selected instances."""
    if not command and not operation:
        raise PlanError("nothing to run", hint="give a command after `--`, or --operation NAME")
    instances = planned_instances(ensemble)
    chosen = select(instances, instance_names) if instance_names else list(ensemble.instances)
    if not chosen:
        raise PlanError("no instances to run on", hint="deploy first, or name one with --instance")
    builder = _Builder("run")
    for name in chosen:
        instance = instances[name]
        template = ensemble.topology.templates.get(instance.template)
        if template is None:
            raise PlanError(f"instance {name!r} has no template in the spec")
        if operation:
            op = template.operation(operation)
            if op is None:
                raise PlanError(
                    f"instance {name!r} has no operation {operation!r}",
                    hint="operations: "
                    + ", ".join(f"{i}.{o}" for i, ops in template.interfaces.items() for o in ops)
                    or "none",
                )
            if inputs:
                op = Operation(
                    op.interface,
                    op.name,
                    op.implementation,
                    {**op.inputs, **inputs},
                    op.retry,
                    op.timeout,
                )
        else:
            argv = list(command)
            shell_command: Any = argv[0] if len(argv) == 1 else argv
            op = Operation("Install", "run", Implementation("Shell"), {"command": shell_command})
        builder.add(name, template.name, op, RUN, ())
    plan = builder.plan({})
    plan.affects_history = False  # the seeds: ad hoc runs leave the change history alone
    return plan


def _cloudify_planners() -> dict[str, Any]:
    from unfurl_lite.plan import cloudify as workflows

    return workflows.PLANNERS


def plan_workflow(ensemble: Ensemble, workflow: str, **options: Any) -> Plan:
    planners: dict[str, Any] = {
        "deploy": plan_deploy,
        "undeploy": plan_undeploy,
        "check": plan_check,
        "discover": plan_discover,
        "run": plan_run,
    }
    if workflow not in planners:  # Cloudify's workflows are loaded only when asked for
        planners.update(_cloudify_planners())
    if workflow not in planners and workflow in tosca_workflows.custom_names(ensemble.spec):
        return tosca_workflows.plan_custom(ensemble, workflow, **options)
    if workflow not in planners:
        raise PlanError(
            f"unknown workflow {workflow!r}", hint="choose one of: " + ", ".join(planners)
        )
    return planners[workflow](ensemble, **options)
