"""TOSCA imperative workflows (``topology_template.workflows``) as plans.

A workflow named ``deploy`` or ``undeploy`` replaces that workflow's lifecycle for the
instances its steps target, as Unfurl does; any other name is a custom workflow, run with
``unfurl run --workflow NAME``. A custom workflow's job is recorded like any other but
leaves the instances' change history alone (the plan says so with ``affects_history``):
Unfurl's rule that custom workflows "do not affect the change history of the topology".

Reading workflows and refusing what cannot run is :mod:`unfurl_lite.load.workflows`'s.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from unfurl_lite.errors import PlanError
from unfurl_lite.load.workflows import Step, Workflow, custom_names, read
from unfurl_lite.model.builtin_workflows import REPLACEABLE, RESERVED
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeState, NodeTemplate, Status
from unfurl_lite.plan.lifecycle import add_install_tasks, add_uninstall_tasks, implemented
from unfurl_lite.plan.tasks import Builder, Guard, Plan
from unfurl_lite.plan.topology import select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.documents import SpecDoc

# ------------------------------------------------------------------------------ conditions


def _constraint(operator: str, expected: Any, value: Any) -> bool:
    try:
        if operator == "equal":
            return bool(value == expected)
        if operator == "greater_than":
            return bool(value > expected)
        if operator == "greater_or_equal":
            return bool(value >= expected)
        if operator == "less_than":
            return bool(value < expected)
        if operator == "less_or_equal":
            return bool(value <= expected)
        if operator == "in_range":
            return bool(expected[0] <= value <= expected[1])
        if operator == "valid_values":
            return value in expected
        if operator == "length":
            return len(value) == expected
        if operator == "min_length":
            return len(value) >= expected
        if operator == "max_length":
            return len(value) <= expected
        if operator == "pattern":
            return re.fullmatch(str(expected), str(value)) is not None
    except (TypeError, IndexError):
        return False
    return False


def _clause(clause: dict[str, Any], values: dict[str, Any]) -> bool:
    ((key, body),) = clause.items()
    if key in ("and", "assert"):
        return all(_clause(c, values) for c in body)
    if key == "or":
        return any(_clause(c, values) for c in body)
    if key == "not":
        return not all(_clause(c, values) for c in body)
    constraints = body if isinstance(body, list) else [body]
    if key not in values:
        return False
    return all(_constraint(op, expected, values[key])
               for c in constraints for op, expected in c.items())


def holds(conditions: tuple[Any, ...] | list[Any], values: dict[str, Any]) -> bool:
    """TOSCA condition clauses (all must hold) over an instance's properties and attributes."""
    return all(_clause(c, values) for c in conditions)


def _values(instance: Instance, template: NodeTemplate | None) -> dict[str, Any]:
    values = dict(template.properties) if template else {}
    values.update(instance.attributes)
    values.setdefault("state", str(instance.state) if instance.state else None)
    return values


# ------------------------------------------------------------------------------ planning


def matches(template: NodeTemplate, target: str) -> bool:
    """A step's target is a node template's name or a type the template is of."""
    return template.name == target or template.is_a(target)


@dataclass
class _Expansion:
    """Adds a workflow's steps to a plan builder (see :mod:`unfurl_lite.plan.tasks`)."""

    builder: Builder
    ensemble: Ensemble
    instances: dict[str, Instance]
    workflows: dict[str, Workflow]
    only: set[str] | None = None  # the instances steps may run on (None: all recorded)

    def precondition_failure(self, workflow: Workflow) -> str | None:
        for precondition in workflow.preconditions:
            target = str(precondition.get("target"))
            instance = self.instances.get(target) or next(
                (i for i in self.instances.values() if i.template == target), None)
            if instance is None:
                return f"its precondition's target {target!r} has no instance"
            template = self.ensemble.topology.templates.get(instance.template)
            if not holds(precondition.get("condition") or (), _values(instance, template)):
                return f"its precondition on {target!r} does not hold"
        return None

    def targets(self, step: Step) -> list[Instance]:
        found: list[Instance] = []
        for instance in self.instances.values():
            template = self.ensemble.topology.templates.get(instance.template)
            if template is None or not matches(template, step.target):
                continue
            if self.only is not None and instance.name not in self.only:
                continue
            if step.filter and not holds(step.filter, _values(instance, template)):
                continue
            found.append(instance)
        return found

    def add_workflow(self, workflow: Workflow, after: list[int]) -> list[int]:
        """Every step of the workflow; returns the numbers of the tasks added."""
        added: dict[str, list[int]] = {}
        for name in workflow.order():
            step = workflow.steps[name]
            success, failure = workflow.predecessors(name)
            if (success or failure) and not any(added.get(p) for p in success + failure):
                added[name] = []  # what leads here planned nothing, so it cannot run
                continue
            deps = [n for p in success + failure for n in added.get(p, [])] or list(after)
            failed_of = tuple(n for p in failure for n in added.get(p, []))
            added[name] = []
            for instance in self.targets(step):
                added[name] += self.add_step(workflow, step, instance, deps, failed_of)
        return [n for numbers in added.values() for n in numbers]

    def add_step(
        self, workflow: Workflow, step: Step, instance: Instance, after: list[int],
        failed_of: tuple[int, ...] = (),
    ) -> list[int]:
        template = self.ensemble.topology.templates[instance.template]
        numbers: list[int] = []
        reason = f"step:{step.name}"
        for activity in step.activities:
            deps = [numbers[-1]] if numbers else after
            guard = None
            if failed_of:  # on_failure: run only when a step that leads here failed
                guard = Guard(if_failed=failed_of) if not numbers else Guard(
                    if_ran=(numbers[-1],))
            first = len(self.builder.tasks)
            if activity.kind == "call_operation":
                op = template.operation(activity.value)
                if op is None or op.implementation is None:
                    self.builder.note(instance.name, f"{reason}: no operation {activity.value!r}")
                    continue
                self.builder.add(instance.name, template.name, op, reason, deps,
                                 extra_inputs=dict(activity.inputs), guard=guard)
            elif activity.kind == "set_state":
                self.builder.add(instance.name, template.name, None, reason, deps,
                                 done_state=NodeState(activity.value), guard=guard)
            elif activity.kind == "delegate":
                self.delegate(activity.value, instance, reason, deps)
            elif activity.kind == "inline":
                self.add_workflow(self.workflows[activity.value], deps)
            numbers += [t.number for t in self.builder.tasks[first:]]
        return numbers

    def delegate(self, workflow: str, instance: Instance, reason: str, after: list[int]) -> None:
        template = self.ensemble.topology.templates[instance.template]
        if workflow == "deploy":
            add_install_tasks(self.builder, self.ensemble, instance, self.instances,
                                   reason, after, resume_from_state=False)
        elif workflow == "undeploy":
            add_uninstall_tasks(self.builder, self.ensemble, instance, self.instances,
                                     reason, after)
        else:
            op = implemented(template, "Install", workflow)
            if op is None:
                self.builder.note(instance.name, f"{reason}: no {workflow} operation")
                return
            self.builder.add(instance.name, template.name, op, workflow, after)


def plan_custom(ensemble: Ensemble, workflow: str, instance_names: tuple[str, ...] = ()) -> Plan:
    """A custom workflow's plan: its steps on the recorded instances they target."""
    workflows = read(ensemble.spec)
    instances = dict(ensemble.instances)
    only = set(select(instances, instance_names)) if instance_names else None
    builder = Builder(workflow)
    expansion = _Expansion(builder, ensemble, instances, workflows, only)
    why = expansion.precondition_failure(workflows[workflow])
    if why is not None:
        builder.note(workflow, f"not run: {why}")
    else:
        expansion.add_workflow(workflows[workflow], [])
        targets = {s.target for s in workflows[workflow].steps.values()}
        for target in sorted(targets):
            if not any(expansion.targets(s) for s in workflows[workflow].steps.values()
                       if s.target == target):
                builder.note(target, "not run: no recorded instance matches this step's "
                                     "target (deploy first)")
    # nothing a custom workflow runs may move an instance's state or status
    builder.tasks[:] = [dataclasses.replace(t, running_state=None, done_state=None,
                                            done_status=None) for t in builder.tasks]
    result = builder.plan({})
    result.affects_history = False
    return result


def replacing(spec: SpecDoc, workflow: str) -> Workflow | None:
    """The spec's workflow that replaces a built-in one's lifecycle, if it has one."""
    topology = (spec.get("service_template") or {}).get("topology_template") or {}
    if workflow not in (topology.get("workflows") or {}):
        return None
    return read(spec)[workflow]


def replace_lifecycle(
    workflow: Workflow, builder: Builder, ensemble: Ensemble, instance: Instance,
    instances: dict[str, Instance], after: list[int],
) -> bool:
    """If the ``deploy``/``undeploy`` workflow has steps for this instance, add them instead
    of the built-in lifecycle (as Unfurl does) and return True."""
    template = ensemble.topology.templates.get(instance.template)
    if template is None:
        return False
    workflows = read(ensemble.spec)
    expansion = _Expansion(builder, ensemble, instances, workflows, {instance.name})
    steps = [s for s in workflow.order() if matches(template, workflow.steps[s].target)]
    if not steps or expansion.precondition_failure(workflow) is not None:
        return False
    added: dict[str, list[int]] = {}
    numbers: list[int] = []
    for name in steps:
        step = workflow.steps[name]
        success, failure = workflow.predecessors(name)
        if (success or failure) and not any(added.get(p) for p in success + failure):
            added[name] = []
            continue
        if step.filter and not holds(step.filter, _values(instance, template)):
            added[name] = []
            continue
        deps = [n for p in success + failure for n in added.get(p, [])] or list(after)
        failed_of = tuple(n for p in failure for n in added.get(p, []))
        added[name] = expansion.add_step(workflow, step, instance, deps, failed_of)
        numbers += added[name]
    if not numbers:  # as Unfurl: the workflow's steps own this instance even when none ran
        builder.note(instance.name, f"skipped: no step of workflow {builder.workflow!r} "
                                    "applies to it (step filters)")
        return True
    # the workflow ends for the instance with its last operation (Unfurl's tasks; a
    # set_state after it is no task there): that one settles status and ``created``
    last = max((n for n in numbers if builder.tasks[n - 1].operation is not None),
               default=max(numbers))
    task = builder.tasks[last - 1]
    done = Status.ok if builder.workflow == "deploy" else Status.absent
    builder.tasks[last - 1] = dataclasses.replace(task, done_status=done)
    return True


def require(spec: SpecDoc, workflow: str) -> None:
    """Refuse a custom workflow name the spec does not define (did-you-mean)."""
    names = custom_names(spec)
    if workflow in REPLACEABLE or workflow in RESERVED:
        raise PlanError(f"{workflow!r} is a built-in workflow, not a custom one",
                        hint=f"run it with `unfurl {workflow.replace('_', '-')}`")
    if workflow not in names:
        import difflib  # start-up: a misspelled name only, not every command's imports

        close = difflib.get_close_matches(workflow, names, n=1)
        raise PlanError(f"unknown workflow {workflow!r}",
                        hint=f"did you mean {close[0]!r}?" if close else
                        "custom workflows here: " + (", ".join(names) or "none"))
