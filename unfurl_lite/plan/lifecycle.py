"""Lifecycles as tables of steps, and the tasks they become for one instance.

TOSCA's Standard and Configure interfaces and Cloudify's lifecycle, validation,
monitoring and relationship interfaces share one mechanism: a step names the operations
that may fill it (the first one implemented wins) and the node state it moves through.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import (
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Requirement,
    Status,
)
from unfurl_lite.plan.tasks import (
    ADD,
    MISSING,
    REPAIR,
    REPAIR_DEGRADED,
    REPAIR_ERROR,
    Builder,
    Guard,
)


@dataclass(frozen=True)
class NodeStep:
    """A lifecycle step on a node: the operations that may serve it, and its states."""
    candidates: tuple[tuple[str, str], ...]  # (interface, operation); the first defined wins
    running: NodeState | None = None
    done: NodeState | None = None


@dataclass(frozen=True)
class RelationshipStep:
    """A lifecycle step on relationships: operations and the side they run on."""
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
            ("RelationshipLifecycle", "preconfigure", "target"),
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
            ("RelationshipLifecycle", "postconfigure", "target"),
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
            ("RelationshipLifecycle", "establish", "target"),
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
            ("RelationshipLifecycle", "unlink", "target"),
        )
    ),
    NodeStep(
        (("Standard", "delete"), ("Lifecycle", "delete")), NodeState.deleting, NodeState.deleted
    ),
    NodeStep((("Lifecycle", "postdelete"),)),
)

#: the relationship steps scale and heal run on their own (between two instances)
INSTALL_RELATIONSHIPS = tuple(s for s in INSTALL if isinstance(s, RelationshipStep))
ESTABLISH = INSTALL_RELATIONSHIPS[-1:]
UNLINK = tuple(
    RelationshipStep(((i, n, side),))
    for i, n, side in (
        ("Configure", "remove_target", "source"),
        ("Configure", "remove_source", "target"),
        ("RelationshipLifecycle", "unlink", "source"),
        ("RelationshipLifecycle", "unlink", "target"),
    )
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


_NO_OPERATIONS: Mapping[str, Operation] = {}


def implemented(template: NodeTemplate, interface: str, name: str) -> Operation | None:
    """The operation if the template maps it to an implementation (declared-only does nothing)."""
    op = template.interfaces.get(interface, {}).get(name)
    return op if op is not None and op.implementation is not None else None


def _steps_for(
    steps: Sequence[Step],
    ensemble: Ensemble,
    template: NodeTemplate,
    instance: Instance,
    instances: dict[str, Instance],
) -> list[tuple[Operation, NodeStep | None, Requirement | None, str, str | None]]:
    """The concrete operations of a lifecycle for one instance: (op, step, req, runs_on, peer)."""
    found: list[tuple[Operation, NodeStep | None, Requirement | None, str, str | None]] = []
    interfaces = template.interfaces
    for step in steps:
        if isinstance(step, NodeStep):
            for interface, name in step.candidates:  # implemented(), inline: 10 a template
                op = interfaces.get(interface, _NO_OPERATIONS).get(name)
                if op is not None and op.implementation is not None:
                    found.append((op, step, None, instance.name, None))
                    break
            continue
        for req in template.requirements:
            if not req.interfaces and not req.target_interfaces:
                continue  # a relationship with no operation (most): nothing to look up
            peers: list[str] | None = None  # an O(N) scan: only when an operation needs it
            for interface, name, side in step.operations:
                op = req.relationship_operation(interface, name, side)
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
    return _PROGRESS.index(state) if state is not None and state in _PROGRESS else 0


#: which part of Unfurl's deploy each INSTALL step belongs to (execute_default_deploy
#: runs create, configure (with the relationships' pre/post_configure) and start)
_PHASES = ("create",) * 3 + ("configure",) * 3 + ("start",) * 4
_NODE_STATES = list(NodeState)  # Unfurl compares node states in this order


def unfurl_phases(instance: Instance, has_create: bool) -> frozenset[str]:
    """:func:`phases_of` the instance's status and state."""
    return phases_of(instance.status, instance.state, has_create)


@functools.cache  # a few statuses and states: a deploy of 10,000 instances asks 10,000 times
def phases_of(status: Status, state: NodeState | None, has_create: bool) -> frozenset[str]:
    """What Unfurl's deploy runs on an instance it includes. Its plan
    (``execute_default_deploy``) asks for create when the instance is missing (unknown,
    absent or pending, not stopped) or failed before it was created; configure when it was
    never configured, or is in error; start unless it is started; all of them when there is
    no create operation. Its job then skips an operation whose state the instance already
    passed (``_entry_test``: a configure on a started instance, a create on a configured
    one), the state moving as the operations before it end. So a degraded instance that
    ``--repair degraded`` includes, already configured, runs only its start (if it has
    one); one in error is configured again, not created; one in error but started, nothing."""
    missing = status in (Status.unknown, Status.absent, Status.pending) \
        and state != NodeState.stopped
    initial = state is None or state == NodeState.creating
    asked: list[str] = []
    if missing or (status == Status.error and initial):
        if has_create:
            asked.append("create")
        else:
            initial = True
    if initial or state is None or _later(NodeState.configured, state) \
            or status == Status.error:
        asked.append("configure")
    if initial or state != NodeState.started:
        asked.append("start")
    phases: set[str] = set()
    for phase in asked:
        if state is not None and not _entered(state, phase):
            continue
        phases.add(phase)
        state = _REACHES[phase]
    return frozenset(phases)


#: the state each phase of Unfurl's deploy reaches (and so an operation's entry test)
_REACHES = {"create": NodeState.created, "configure": NodeState.configured,
            "start": NodeState.started}


def _later(state: NodeState, than: NodeState) -> bool:
    return _NODE_STATES.index(state) > _NODE_STATES.index(than)


def _entered(state: NodeState, phase: str) -> bool:
    """Unfurl's ``_entry_test`` in a deploy: an operation runs unless its instance is past
    the state it reaches; past ``started`` (stopped, deleted...) only start is tested, and
    runs only on a stopped (or stopping) instance."""
    if _later(state, NodeState.started):
        return phase != "start" or state in (NodeState.stopping, NodeState.stopped)
    return not _later(state, _REACHES[phase])


def add_install_tasks(
    builder: Builder,
    ensemble: Ensemble,
    instance: Instance,
    instances: dict[str, Instance],
    reason: str,
    after: Iterable[int],
    skip_when: Status | None = None,
    resume_from_state: bool = True,
    pass_through: bool = True,
) -> None:
    """``pass_through``: Cloudify's install, where every instance ends ``started``: one with
    nothing to run gets a state-only task, one without a start operation reaches it with
    its last operation. Without it (Unfurl's deploy) an instance with nothing to run gets no
    task and stays ``pending``, and one without start stays where its last step left it."""
    template = ensemble.topology.templates[instance.template]
    ops = _steps_for(INSTALL, ensemble, template, instance, instances)
    if not ops and not pass_through:
        builder.note(instance.name, "nothing to run: no operations")
        return
    if resume_from_state and not pass_through and reason in (
            ADD, REPAIR, MISSING, REPAIR_ERROR, REPAIR_DEGRADED):
        has_create = any(o[1] is not None and o[1].done == NodeState.created for o in ops)
        phases = unfurl_phases(instance, has_create)
        ops = [o for o in ops if _phase(o) in phases]
        if not ops:
            builder.note(instance.name, "nothing to run: " + _why_nothing(instance))
            return
    elif (
        resume_from_state
        and reason in (ADD, REPAIR, MISSING, REPAIR_ERROR, REPAIR_DEGRADED)
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
    # the instance's own last operation ends its workflow (Unfurl's is_final_for_workflow:
    # a relationship operation run on it targets the relationship instance instead)
    own = [i for i, o in enumerate(ops) if o[3] == instance.name and o[2] is None]
    last_own = max(own) if own else max(
        (i for i, o in enumerate(ops) if o[3] == instance.name), default=-1
    )
    starts = any(o[1] is not None and o[1].done == NodeState.started for o in ops)
    for index, (op, step, req, runs_on, peer) in enumerate(ops):
        is_last = index == last_own
        done = step.done if step else None
        if is_last and pass_through and not starts and req is None:
            done = NodeState.started  # the steps after it have nothing to run
        builder.add(
            runs_on,
            instances[runs_on].template if runs_on in instances else template.name,
            op,
            relationship_reason(instance, req, reason) if req else reason,
            deps + ([builder.last[instance.name]] if instance.name in builder.last else []),
            running_state=step.running if step else None,
            done_state=done,
            done_status=(Status.ok if is_last else Status.pending)
            if runs_on == instance.name and (req is None or is_last)
            else None,
            requirement=req,
            source=instance.name if req else None,
            peer=peer,
            skip_when=skip_when,
        )
        if runs_on != instance.name:
            # keep the source's chain ordered after a target-side relationship operation
            builder.last[instance.name] = builder.last[runs_on]


def relationship_reason(source: Instance, requirement: Requirement, reason: str) -> str:
    """Unfurl plans a relationship operation in its relationship instance's own group, for
    that instance's reason: ``add`` while the link is new (not recorded, or pending and
    never changed), whatever its source's (a source in ``error`` repaired adds a link
    that never was); otherwise the source's."""
    if reason not in (MISSING, REPAIR, REPAIR_ERROR, REPAIR_DEGRADED):
        return reason
    link = source.relationships.get(requirement.name)
    if link is None or (link.status == Status.pending and link.last_config_change is None
                        and link.last_state_change is None):
        return ADD
    return reason


def _phase(op: tuple[Operation, NodeStep | None, Requirement | None, str, str | None]) -> str:
    step = op[1]
    if step is None:  # a relationship operation: its step's place in INSTALL
        name = (op[0].interface, op[0].name)
        index = next(i for i, s in enumerate(INSTALL) if isinstance(s, RelationshipStep)
                     and any((i_, n) == name for i_, n, _ in s.operations))
    else:
        index = INSTALL.index(step)
    return _PHASES[index]


def _why_nothing(instance: Instance) -> str:
    return (f"{instance.status.value}, {instance.state.value if instance.state else 'no state'}"
            ": Unfurl's deploy runs none of its operations again")


def add_uninstall_tasks(
    builder: Builder,
    ensemble: Ensemble,
    instance: Instance,
    instances: dict[str, Instance],
    reason: str,
    after: Iterable[int],
    skip_when: Status | None = None,
    may_fail: bool = False,
    mark_deleted: bool = False,
    ends_absent: bool = True,
    stops_always: bool = False,
) -> None:
    """``mark_deleted``: Cloudify's uninstall, where an instance without a delete operation
    still ends deleted (a step with no task does nothing, the instance goes all the same),
    and stop runs whatever the node state (``stops_always`` alone: the reinstalls, update's
    removed instances).
    ``ends_absent`` False: the delete does not end a workflow (``deploy --prune``'s, as in
    Unfurl, whose deploy ends with start): the instance's state becomes ``deleted``, its
    status and ``lastConfigChange`` stay, so a later undeploy deletes it again."""
    template = ensemble.topology.templates[instance.template]
    ops = _steps_for(UNINSTALL, ensemble, template, instance, instances)
    if not (mark_deleted or stops_always) and instance.state not in (
            NodeState.starting, NodeState.started):
        # as Unfurl's undeploy: only a started (or starting) instance is stopped first
        ops = [o for o in ops if o[1] is None or o[1].done != NodeState.stopped]
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
            done_status=Status.absent if deleting and ends_absent else None,
            requirement=req,
            source=instance.name if req else None,
            peer=peer,
            skip_when=skip_when,
            may_fail=may_fail,
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
            may_fail=may_fail,
        )


def add_relationship_tasks(
    builder: Builder,
    ensemble: Ensemble,
    instances: Mapping[str, Instance],
    source: str,
    peer: str,
    steps: Sequence[RelationshipStep],
    reason: str,
    after: Iterable[int],
    guard: Guard | None = None,
    may_fail: bool = False,
    requirements: Sequence[Requirement] | None = None,
) -> list[int]:
    """Relationship operations of ``source``'s requirements on ``peer`` only (scale, heal);
    ``requirements``: those instead of its template's (update: ones the spec dropped)."""
    if requirements is None:
        requirements = ensemble.topology.templates[instances[source].template].requirements
    numbers: list[int] = []
    deps = list(after)
    for req in requirements:
        if req.node != instances[peer].template:
            continue
        for step in steps:
            for interface, name, side in step.operations:
                op = req.relationship_operation(interface, name, side)
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
                    may_fail=may_fail,
                )
                numbers.append(task.number)
    return numbers


def add_relinks(
    builder: Builder,
    ensemble: Ensemble,
    instances: Mapping[str, Instance],
    deps: Mapping[str, list[str]],
    names: Iterable[str],
) -> None:
    """Deploy finishes what a failed reinstall left unlinked: an instance deploy leaves
    alone (ok or degraded, nothing planned on it) whose relationship is ``absent`` (its
    unlink ran, its establish was blocked) runs that relationship's operations again
    (preconfigure, postconfigure, establish, as the reinstall would have), after its target,
    when the target is installed by this plan or is ok. Seed 003: deploy applies itself to
    every instance not already ``ok``, and a relationship is one."""
    planned = {t.target for t in builder.tasks}
    for source in names:
        instance = instances[source]
        template = ensemble.topology.templates.get(instance.template)
        if template is None or source in planned or instance.status not in (
                Status.ok, Status.degraded):
            continue
        for req in template.requirements:
            link = instance.relationships.get(req.name)
            if link is None or link.status != Status.absent:
                continue
            for peer in deps.get(source, ()):
                if instances[peer].template != req.node or not (
                        peer in builder.last or instances[peer].status == Status.ok):
                    continue
                if any(t.source == source and t.peer == peer for t in builder.tasks):
                    continue
                if add_relationship_tasks(
                    builder, ensemble, instances, source, peer, INSTALL_RELATIONSHIPS, MISSING,
                    [builder.last[peer]] if peer in builder.last else [], requirements=[req],
                ):  # its own lifecycle has nothing to run: that note would now mislead
                    builder.notes[:] = [n for n in builder.notes if n.target != source
                                        or not n.message.startswith("nothing to run")]
