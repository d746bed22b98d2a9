"""Status rules: how a task's outcome changes its instance (Unfurl's jobs and workflows).

- success sets the step's node state and the workflow's status (ok, or absent for delete);
- a failure that modified the instance sets error (degraded when the instance is optional),
  a failure that did not say sets unknown, a failure that changed nothing leaves it be;
- a check (or any operation) may report an explicit status, which wins; a check or a
  discover that succeeds without one leaves the status be, as in Unfurl (a discover
  reports attributes and other instances, not its target's health);
- an ad hoc run (``unfurl run``: a command or a named operation) changes nothing on its
  instance, as custom and ad hoc workflows "do not affect the change history of the
  topology": it is recorded as a job, its status, readyState and lastConfigChange stay.

Pure functions over an :class:`Instance`, so the rules are testable without running a job.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from unfurl_lite.model.dependencies import topological_order
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, Priority, Status, effective_status
from unfurl_lite.plan.tasks import RECONFIGURE, Task
from unfurl_lite.plan.topology import containers
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.run.outcome import UNFURL_WORKFLOWS


def on_start(instance: Instance, task: Task) -> None:
    if task.running_state is not None:
        instance.state = task.running_state


def _set_state(result: OperationResult) -> NodeState | None:
    """The node state the operation set itself (an output mapped to ``.state``)."""
    state = result.state
    return NodeState(state) if state and state in NodeState.__members__ else None


def _explicit_status(result: OperationResult) -> Status | None:
    if result.status and str(result.status).lower() in Status.__members__:
        return Status(str(result.status).lower())
    return None


#: Unfurl's own mutable workflows: an instance's status changes when its last task ends.
SEQUENCED_WORKFLOWS = frozenset({"deploy", "undeploy"})


def on_success(instance: Instance, task: Task, result: OperationResult, change_id: str) -> bool:
    """Apply a successful task; returns True when the instance's status or state changed
    (in deploy and undeploy: when the task changed the instance, Unfurl's "changed")."""
    if task.reason == RECONFIGURE and task.workflow == "deploy" and change_id:
        return _on_reconfigure(instance, task, result, change_id)
    if in_sequence(task) and change_id:
        return _on_success_in_sequence(instance, task, result, change_id)
    before = (instance.status, instance.state)
    first = instance.last_config_change is None and instance.last_state_change is None
    explicit = _explicit_status(result)
    attributes_changed = changes_attributes(instance, result)
    instance.state = _set_state(result) or task.done_state or instance.state
    if explicit is not None:
        instance.status = explicit
        if task.reason == "check":
            if explicit != before[0] and instance.state == before[1]:
                instance.state = state_found(explicit, before[1]) or instance.state
        elif explicit == Status.absent and task.reason != "discover":
            instance.state = NodeState.deleted  # (a discover that finds nothing sets none)
    elif task.reason == "check":
        # as Unfurl: a check that reports no status leaves the instance's as it was (the
        # ``check`` directive's check starts from unknown: its done_status)
        instance.status = task.done_status or instance.status
        if instance.status != before[0] and instance.state == before[1]:
            # a passing check_status (heal's, update's) says ok as a reported status does:
            # the node state follows, so a heal after a failed stop does not leave an ok
            # instance ``stopping`` (which the next deploy would skip as already ok)
            instance.state = state_found(instance.status, before[1]) or instance.state
    elif task.done_status is not None:
        instance.status = task.done_status
    if result.attributes:
        instance.attributes.update(result.attributes)
    if not change_id:  # a pass-through step ran nothing, so it has no changeId to record
        pass
    elif task.reason in ("check", "discover"):
        if first and instance.status != Status.pending:
            # as Unfurl (_update_last_change): an instance's first change is always saved
            # as a configuration change, telling it from a brand new one
            instance.last_config_change = change_id
            return True
        # Unfurl 1.2.0 never records an observed change (lastStateChange): a check that
        # only moved the status links nothing; Cloudify's check_status is heal's evidence
        if (instance.status, instance.state) != before and task.workflow not in UNFURL_WORKFLOWS:
            instance.last_state_change = change_id
        if attributes_changed:  # Unfurl: an attribute it changed is a configuration change
            instance.last_config_change = change_id
            return True
    else:
        moved = (instance.status, instance.state) != before
        if result.modified is not False or moved:
            instance.last_config_change = change_id
        # Unfurl: an operation that brought the instance into being created it, even a
        # Template that reports ``modified: false``; in a TOSCA workflow, the instance's
        # last step (the workflow's end for it: unfurl-cases 244)
        if (
            instance.created is None
            and task.done_status != Status.absent
            and instance.status != Status.absent
            and (result.modified or moved)
            and (task.done_status is not None or not task.reason.startswith("step:"))
        ):
            instance.created = change_id
    return (instance.status, instance.state) != before


def previous_id(before: str | None, after: str | None) -> str | None:
    """Unfurl's previousId: the instance's last change, when this task replaced it (a
    linked list of the tasks that changed the instance); none when it changed nothing."""
    return before if after != before else None


def last_change(instance: Instance) -> str | None:
    """Unfurl's ``last_change``: the later of the instance's last configuration change and
    its last observed state change."""
    changes = [c for c in (instance.last_config_change, instance.last_state_change) if c]
    return max(changes) if changes else None


def change_before(instance: Instance, result: OperationResult) -> str | None:
    """The change a task's previousId may link to, taken before the task's result is
    applied: none when the result sets attributes (Unfurl records the attribute change under
    the task's own changeId before it links the task, so such a task has no previousId)."""
    return None if changes_attributes(instance, result) else last_change(instance)


def on_blocked(instance: Instance, task: Task) -> bool:
    """A new instance's task that another instance's failure (its host's, a dependency's)
    blocked, in deploy or undeploy: Unfurl started it (the node state is the task's running
    state, ``creating``), found its dependencies not ready and recorded it with
    ``status=error``; the instance's status stays. False (nothing to record) for an
    instance already brought further, or a later task of the same instance."""
    if task.running_state is None or instance.state not in (
            None, NodeState.initial, task.running_state):
        return False
    instance.state = task.running_state
    return True


def state_found(status: Status, state: NodeState | None) -> NodeState | None:
    """Unfurl's node state for what a check found, when the check changed the instance's
    status and set no node state itself: ok is ``started``, error ``error``, pending
    ``initial``; absent is ``deleted`` for an instance that was brought up once, ``initial``
    for one never deployed (a resource nobody created); other statuses leave it be."""
    if status == Status.absent:
        return NodeState.initial if state in (None, NodeState.initial) else NodeState.deleted
    return {Status.ok: NodeState.started, Status.error: NodeState.error,
            Status.pending: NodeState.initial}.get(status)


def changes_attributes(instance: Instance, result: OperationResult) -> bool:
    return any(instance.attributes.get(k) != v for k, v in result.attributes.items())


def in_sequence(task: Task) -> bool:
    """A task of Unfurl's own deploy or undeploy plan (not a custom workflow's step)."""
    return (
        task.workflow in SEQUENCED_WORKFLOWS
        and task.reason not in ("check", "discover")
        and not task.reason.startswith("step:")
    )


def in_lifecycle(task: Task) -> bool:
    """A task that moves its instance along its lifecycle (deploy's and undeploy's, and the
    install and uninstall steps Cloudify's workflows run: install, scale out, heal's and
    update's reinstalls, start, stop), as opposed to a check, a discover or a custom
    workflow's step. One rule for all of them, Unfurl's: such a task blocked by a failure
    before it ends its instance ``error`` (see settling.block_on_own_failure)."""
    return task.reason not in ("check", "discover") and not task.reason.startswith("step:")


def _on_success_in_sequence(
    instance: Instance, task: Task, result: OperationResult, change_id: str
) -> bool:
    """Unfurl's rules for a task of deploy or undeploy: only the last task on an instance
    (its ``done_status`` is the workflow's end: ok, or absent for delete) sets the status,
    ``lastConfigChange`` and ``created``; an earlier one (create before configure, stop
    before delete) leaves them be unless it reported a status, said it modified the
    instance (``done: {modified: true}``: the last change, as Unfurl's _update_last_change)
    or changed attributes."""
    before = instance.status
    explicit = _explicit_status(result)
    touched = explicit is not None or (result.said_modified and result.modified is True) \
        or changes_attributes(instance, result)
    instance.state = _set_state(result) or task.done_state or instance.state
    if explicit is not None:
        instance.status = explicit
        if explicit == Status.absent:
            instance.state = NodeState.deleted
    final = task.done_status not in (None, Status.pending)
    if final and explicit is None and task.done_status is not None:
        instance.status = task.done_status
    if result.attributes:
        instance.attributes.update(result.attributes)
    if touched or final:
        instance.last_config_change = change_id
    present = instance.status in (Status.ok, Status.degraded, Status.error)
    if instance.created is None and present and (explicit is not None or final):
        instance.created = change_id
    return touched or final or instance.status != before


def _on_reconfigure(
    instance: Instance, task: Task, result: OperationResult, change_id: str
) -> bool:
    """A deploy's reconfigure of an instance already ok is no workflow step in Unfurl 1.2.0
    (nothing finishes a workflow with it): only what the operation did counts. It is the
    instance's last change when it said ``modified: true`` or changed attributes (Unfurl's
    _update_last_change), and changed when that or its status moved; a Template that only
    says ``status: ok`` again changes nothing (unfurl-cases 332)."""
    before = instance.status
    explicit = _explicit_status(result)
    touched = (result.said_modified and result.modified is True) or changes_attributes(
        instance, result)
    instance.state = _set_state(result) or task.done_state or instance.state
    if explicit is not None:
        instance.status = explicit
    if result.attributes:
        instance.attributes.update(result.attributes)
    if touched:
        instance.last_config_change = change_id
    return touched or instance.status != before


def on_failure(
    instance: Instance,
    task: Task,
    result: OperationResult,
    change_id: str,
    prior_state: NodeState | None = None,
) -> bool:
    """Apply a failed task as Unfurl 1.2.0 does (job.py ``_update_status``): an explicit
    status wins; else an operation that says it modified the instance leaves it ``error``
    (``degraded`` when optional) and ``created``; one that did not say (a Shell command
    that exited non-zero) leaves it ``unknown``, not created; one that modified nothing
    leaves its status be. In every case the node state stays where the task's start put
    it (``creating``). ``prior_state`` is the node state before :func:`on_start`."""
    before = (instance.status, prior_state)
    first = instance.last_config_change is None and instance.last_state_change is None
    explicit = _explicit_status(result)
    observing = task.reason in ("check", "discover")
    attributes_changed = changes_attributes(instance, result)
    if explicit is not None:
        instance.status = explicit
        present = explicit in (Status.ok, Status.degraded, Status.error)
        if present and instance.created is None and not observing:
            instance.created = change_id or None
    elif result.modified:
        optional = instance.priority == Priority.optional
        instance.status = Status.degraded if optional else Status.error
        if instance.created is None:  # Unfurl: so that undeploy still removes it
            instance.created = change_id or None
    elif result.modified is None:
        instance.status = Status.unknown
    if result.attributes:
        instance.attributes.update(result.attributes)
    touched = bool(change_id) and bool(
        result.modified or attributes_changed or (first and instance.status != Status.pending)
    )
    if touched:
        # Unfurl's lastConfigChange: the first task that touched the instance, or one that
        # modified it; an unknown outcome on a known instance leaves it be
        instance.last_config_change = change_id
    return touched or instance.status != before[0]


def fold_effective(
    instances: Mapping[str, Instance],
    requires: Mapping[str, Sequence[str]],
    operationless: Collection[str] = (),
) -> dict[str, Status]:
    """Every instance's effective status, dependencies first (input in dependency order).

    A ``pending`` instance of an ``operationless`` template has nothing to wait for: as in
    Unfurl, its effective status is what its dependencies make it (``ok`` without any)."""
    effective: dict[str, Status] = {}
    for name in topological_order(requires):
        if name not in instances:
            continue
        deps = [effective[d] for d in requires.get(name, ()) if d in effective]
        deps += [r.status for r in instances[name].relationships.values()]
        own = instances[name].status
        if own == Status.pending and instances[name].template in operationless:
            own = Status.ok
        effective[name] = effective_status(own, deps)
    return effective


def needs(cloudify: bool, ensemble: Ensemble, instances: Mapping[str, Instance],
          task: Task, before: Task) -> bool:
    """Whether ``task`` cannot run when ``before`` (a task it follows) did not succeed.
    As Unfurl 1.2.0's deploy (its ``_dependency_check``): the instance's own earlier
    steps and its hosts' tasks; a requirement that is not a host only orders the two,
    and its failure makes the dependent's ``effective`` status error. Its undeploy goes
    on to delete an instance whose dependent's delete failed (unfurl-cases 253).
    Cloudify's workflows, custom workflows and relationship operations stop at any."""
    if before.target == task.target or cloudify or task.source is not None \
            or task.workflow not in ("deploy", "undeploy"):
        return True
    return task.workflow == "deploy" and before.target in containers(
        ensemble, instances, task.target)


def not_operational(
    needs: Sequence[tuple[str, str, bool]], instances: Mapping[str, Instance],
    effective: Callable[[str], Status],
) -> str | None:
    """Why a check is skipped as it would start, in Unfurl 1.2.0's words (its entry test,
    ``_dependency_check(operational=True)``; tests/data/unfurl120/50-check-skips): a
    required dependency whose effective status is neither ok nor degraded. A host is named
    with its status (``db is unknown``); another requirement by its name, with the status
    of its relationship: pending while the target is (``dependency is not created yet``),
    else error. None: the check runs."""
    missing = []
    for name, label, is_host in needs:
        instance = instances.get(name)
        if instance is None or instance.priority != Priority.required:
            continue
        status = effective(name)
        if status in (Status.ok, Status.degraded):
            continue
        if status == Status.pending:
            missing.append(f"{label} is not created yet")
        else:
            missing.append(f"{label} is {status if is_host else Status.error}")
    if not missing:
        return None
    return f"skipped: required dependencies not operational: {', '.join(missing)}"


def effective_of(
    name: str, instances: Mapping[str, Instance], requires: Mapping[str, Sequence[str]],
    operationless: Collection[str], known: dict[str, Status],
) -> Status:
    """One instance's effective status as :func:`fold_effective` folds it, walked only
    through what it depends on (an explicit stack: a chain of thousands is no deeper for
    Python); ``known`` keeps what was folded (a check's dependencies are settled once it
    may start: their checks come first)."""
    stack = [name]
    trail: set[str] = set()
    while stack:
        current = stack[-1]
        if current in known:
            stack.pop()
            continue
        below = [d for d in requires.get(current, ()) if d in instances and d not in known
                 and d not in trail]
        if below:
            trail.add(current)
            stack.extend(below)
            continue
        stack.pop()
        instance = instances[current]
        deps = [known[d] for d in requires.get(current, ()) if d in known]
        deps += [r.status for r in instance.relationships.values()]
        own = instance.status
        if own == Status.pending and instance.template in operationless:
            own = Status.ok
        known[current] = effective_status(own, deps)
    return known[name]
