"""TOSCA imperative workflows (``topology_template.workflows``) as data, and what validate
refuses in them.

What TOSCA's grammar allows and unfurl-lite cannot honour is refused by :func:`problems`
at validate, by name, so nothing in a workflow is silently ignored. Planning them is
:mod:`unfurl_lite.plan.tosca`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import did_you_mean, problem_at
from unfurl_lite.model.builtin_workflows import REPLACEABLE, RESERVED
from unfurl_lite.model.dependencies import find_cycles
from unfurl_lite.model.entities import NodeState, NodeTemplate, Operation
from unfurl_lite.model.narrow import YAMLList, YAMLMap, is_list, is_map, new_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.documents import ServiceTemplateDoc, SpecDoc, TopologyTemplateDoc

WORKFLOWS = ("spec", "service_template", "topology_template", "workflows")
WORKFLOW_KEYS = {"description", "metadata", "preconditions", "steps"}
UNSUPPORTED_WORKFLOW_KEYS = {"inputs", "outputs", "implementation"}
STEP_KEYS = {"target", "activities", "on_success", "on_failure", "filter", "description"}
UNSUPPORTED_STEP_KEYS = {"target_relationship", "operation_host"}
ACTIVITIES = ("call_operation", "set_state", "delegate", "inline")
DELEGATES = ("deploy", "undeploy", "check", "discover")
OPERATORS = ("equal", "greater_than", "greater_or_equal", "less_than", "less_or_equal",
             "in_range", "valid_values", "length", "min_length", "max_length", "pattern")
LOGICAL = ("and", "or", "not", "assert")


@dataclass(frozen=True)
class Activity:
    """One activity of a TOSCA workflow step."""
    kind: str  # one of ACTIVITIES
    value: str  # operation, state or workflow name
    inputs: YAMLMap = field(default_factory=new_dict)


@dataclass(frozen=True)
class Step:
    """A TOSCA workflow step: its target, activities and what follows it."""
    name: str
    target: str
    activities: tuple[Activity, ...]
    on_success: tuple[str, ...] = ()
    on_failure: tuple[str, ...] = ()
    filter: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Workflow:
    """A TOSCA workflow read from the ensemble, its steps by name."""
    name: str
    steps: dict[str, Step]
    preconditions: tuple[dict[str, Any], ...] = ()

    def predecessors(self, name: str) -> tuple[list[str], list[str]]:
        """(steps whose on_success names it, steps whose on_failure names it)."""
        return ([s.name for s in self.steps.values() if name in s.on_success],
                [s.name for s in self.steps.values() if name in s.on_failure])

    def order(self) -> list[str]:
        """Steps so that each comes after every step that leads to it (validated acyclic)."""
        done: list[str] = []
        pending = list(self.steps)
        while pending:
            for name in pending:
                success, failure = self.predecessors(name)
                if all(p in done for p in success + failure):
                    done.append(name)
                    pending.remove(name)
                    break
            else:  # a cycle: validate refuses it; keep planning total anyway
                done.extend(pending)
                break
        return done


# ------------------------------------------------------------------------------ reading


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    names: YAMLList = value or []
    return tuple(str(v) for v in names)


def _activity(item: dict[str, Any]) -> Activity:
    ((kind, value),) = item.items()
    if is_map(value):
        name = value.get("operation") if kind == "call_operation" else value.get("workflow")
        return Activity(kind, str(name), dict(value.get("inputs") or {}))
    return Activity(kind, str(value))


def read(spec: SpecDoc) -> dict[str, Workflow]:
    """The workflows of a validated spec (plain data)."""
    service: ServiceTemplateDoc = spec.get("service_template") or {}
    topology: TopologyTemplateDoc = service.get("topology_template") or {}
    workflows: YAMLMap = topology.get("workflows") or {}
    result: dict[str, Workflow] = {}
    for name, given in workflows.items():
        body: YAMLMap = given or {}
        declared: YAMLMap = body.get("steps") or {}
        steps = {step_name: _step(step_name, step or {}) for step_name, step in declared.items()}
        result[name] = Workflow(name, steps, tuple(body.get("preconditions") or ()))
    return result


def _step(name: str, step: YAMLMap) -> Step:
    activities: YAMLList = step.get("activities") or []
    return Step(
        name=name,
        target=str(step.get("target")),
        activities=tuple(_activity(a) for a in activities),
        on_success=_names(step.get("on_success")),
        on_failure=_names(step.get("on_failure")),
        filter=tuple(step.get("filter") or ()),
    )


def custom_names(spec: SpecDoc) -> list[str]:
    return [n for n in read(spec) if n not in REPLACEABLE]


# ------------------------------------------------------------------------------ validating


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Everything in ``workflows:`` that cannot run as written, by name."""
    workflows = doc
    for part in WORKFLOWS:
        workflows = workflows.get(part) if is_map(workflows) else None
    if not is_map(workflows) or not workflows:
        return
    templates = _templates(doc, file)

    def at(path: tuple[Any, ...], message: str, hint: str | None = None) -> Problem:
        return problem_at(doc, (*WORKFLOWS, *path), file, message, hint)

    for name, body in workflows.items():
        if name in RESERVED:
            yield at((name,), f"workflow {name!r} is a built-in workflow and cannot be "
                              "replaced here (only deploy and undeploy can)",
                     "give the workflow another name and run it with "
                     "`unfurl run --workflow NAME`")
            continue
        if not is_map(body):
            yield at((name,), f"workflow {name!r} must be a mapping with steps")
            continue
        yield from _keys(at, (name,), body, WORKFLOW_KEYS, UNSUPPORTED_WORKFLOW_KEYS,
                         f"workflow {name!r}")
        for index, pre in enumerate(body.get("preconditions") or ()):
            if not is_map(pre) or set(pre) - {"target", "condition"}:
                extra = sorted(set(pre) - {"target", "condition"}) if is_map(pre) \
                    else ["(not a mapping)"]
                yield at((name, "preconditions", index),
                         f"precondition {', '.join(map(str, extra))} is not supported",
                         "a precondition here has `target` (a node template) and `condition`")
                continue
            if pre.get("target") not in templates:
                yield at((name, "preconditions", index, "target"),
                         f"precondition target {pre.get('target')!r} is not a node template",
                         did_you_mean(str(pre.get("target")), templates))
            yield from _conditions(at, (name, "preconditions", index, "condition"),
                                   pre.get("condition") or [])
        steps: object = body.get("steps") or {}
        if not is_map(steps):
            yield at((name, "steps"), "steps must be a mapping of step names to steps")
            continue
        yield from _steps(at, name, steps, workflows, templates, doc)
        parsed = read({"service_template": {"topology_template": {"workflows": {
            name: {"steps": {k: v for k, v in steps.items() if is_map(v)}}}}}})
        if len(parsed[name].order()) != len(parsed[name].steps) or _has_cycle(parsed[name]):
            yield at((name, "steps"), f"workflow {name!r}: on_success/on_failure form a cycle",
                     "steps must lead from one to the next without coming back")
    yield from _inline_cycles(at, workflows)


def _templates(doc: Any, file: str) -> dict[str, NodeTemplate]:
    # start-up: keeps load.builder (6 modules) off workflows's import until _templates() runs
    from unfurl_lite.load import builder, yamlio

    try:
        return builder.build(Path(file), "", yamlio.to_plain(doc)).topology.templates
    except Exception:  # a broken spec is reported by the other checks
        return {}


def _keys(at: Any, path: tuple[Any, ...], body: YAMLMap, known: set[str], unsupported: set[str],
          owner: str) -> Iterator[Problem]:
    for key in body:
        if key in unsupported:
            yield at((*path, key), f"{owner}: `{key}` is not supported",
                     f"remove `{key}`; see docs/workflows.md for what workflows support")
        elif key not in known:
            yield at((*path, key), f"{owner}: unknown key {key!r}",
                     did_you_mean(str(key), known))


def _conditions(at: Any, path: tuple[Any, ...], clauses: Any) -> Iterator[Problem]:
    if not is_list(clauses):
        yield at(path, "a condition must be a list of clauses")
        return
    for index, clause in enumerate(clauses):
        if not is_map(clause) or len(clause) != 1:
            yield at((*path, index), "a condition clause must be a single-key mapping",
                     "e.g. `- port: [{greater_than: 80}]`")
            continue
        ((key, body),) = clause.items()
        if key in LOGICAL:
            yield from _conditions(at, (*path, index, key), body)
            continue
        for constraint in body if is_list(body) else [body]:
            ops = list(constraint) if is_map(constraint) else ["(not a mapping)"]
            for op in ops:
                if op not in OPERATORS:
                    yield at((*path, index, key), f"condition operator {op!r} is not supported",
                             "use one of: " + ", ".join(OPERATORS))


def _steps(at: Any, name: str, steps: YAMLMap, workflows: YAMLMap,
           templates: dict[str, NodeTemplate], doc: Any) -> Iterator[Problem]:
    """The problems of a TOSCA workflow's steps: their keys, their targets (templates or types
    that exist), their activities and the steps they name."""
    types = {t for template in templates.values() for t in template.type_lineage}
    node_types = doc
    for part in ("spec", "service_template", "node_types"):
        node_types = node_types.get(part) if is_map(node_types) else None
    types |= set(node_types) if is_map(node_types) else set()
    for step_name, step in steps.items():
        path = (name, "steps", step_name)
        if not is_map(step):
            yield at(path, f"step {step_name!r} must be a mapping")
            continue
        yield from _keys(at, path, step, STEP_KEYS, UNSUPPORTED_STEP_KEYS, f"step {step_name!r}")
        target = step.get("target")
        if not isinstance(target, str) or (target not in templates and target not in types):
            yield at((*path, "target"), f"step {step_name!r}: target {target!r} is neither a "
                     "node template nor a type of one",
                     did_you_mean(str(target), [*templates, *types]))
        if step.get("filter") is not None:
            yield from _conditions(at, (*path, "filter"), step.get("filter"))
        for key in ("on_success", "on_failure"):
            for next_name in _names(step.get(key)):
                if next_name not in steps:
                    yield at((*path, key), f"step {step_name!r}: {key} names unknown step "
                             f"{next_name!r}", did_you_mean(next_name, steps))
                elif name in REPLACEABLE and steps[next_name].get("target") != target:
                    yield at((*path, key),
                             f"step {step_name!r} leads to {next_name!r}, which has another "
                             f"target: not supported in a workflow replacing {name} (Unfurl "
                             f"1.2.0 runs {next_name!r}'s activities on {target!r}'s "
                             "instances, not on its own target)",
                             "split the steps by target: each chain of steps on one target")
        activities = step.get("activities")
        if not is_list(activities) or not activities:
            yield at((*path, "activities"), f"step {step_name!r} needs a list of activities")
            continue
        for index, activity in enumerate(activities):
            yield from _activity_problems(at, (*path, "activities", index), activity, name,
                                          workflows, templates, target)


def _activity_problems(at: Any, path: tuple[Any, ...], activity: Any, workflow: str,
                       workflows: YAMLMap, templates: dict[str, NodeTemplate],
                       target: Any) -> Iterator[Problem]:
    """The problems of one step activity: a single-key mapping of a supported kind whose
    operation, state or workflow exists."""
    if not is_map(activity) or len(activity) != 1:
        yield at(path, "an activity is a single-key mapping", "e.g. "
                 "`- call_operation: Standard.configure`")
        return
    ((kind, value),) = activity.items()
    if kind not in ACTIVITIES:
        yield at((*path, kind), f"activity {kind!r} is not supported",
                 did_you_mean(str(kind), ACTIVITIES) or "use one of: "
                 + ", ".join(ACTIVITIES))
        return
    name = value
    if is_map(value):
        allowed = {"operation", "inputs"} if kind == "call_operation" else {"workflow"}
        for key in set(value) - allowed:
            yield at((*path, kind, key), f"{kind}: `{key}` is not supported",
                     "allowed here: " + ", ".join(sorted(allowed)))
        name = value.get("operation" if kind == "call_operation" else "workflow")
    if kind == "set_state":
        if str(value) not in NodeState.__members__:
            yield at((*path, kind), f"set_state {value!r} is not a node state",
                     did_you_mean(str(value), NodeState.__members__))
        elif workflow not in REPLACEABLE:
            yield at((*path, kind), f"set_state in custom workflow {workflow!r} is not "
                     "supported: custom workflows do not change instances' state",
                     "set_state works in workflows named deploy or undeploy")
    elif kind == "delegate" and name not in DELEGATES:
        yield at((*path, kind), f"delegate to {name!r} is not supported",
                 "delegate to one of: " + ", ".join(DELEGATES))
    elif kind == "inline" and (name not in workflows or name in REPLACEABLE):
        yield at((*path, kind), f"inline workflow {name!r} is not a custom workflow here",
                 did_you_mean(str(name), [w for w in workflows
                                                   if w not in REPLACEABLE]))
    elif kind == "call_operation" and target in templates:
        op: Operation | None = templates[target].operation(str(name))
        if op is None:
            known = [f"{i}.{o}" for i, ops in templates[target].interfaces.items() for o in ops]
            yield at((*path, kind), f"call_operation: node template {target!r} has no "
                     f"operation {name!r}", did_you_mean(str(name), known)
                     or "operations: " + (", ".join(known) or "none"))


def _has_cycle(workflow: Workflow) -> bool:
    state: dict[str, int] = {}

    def visit(name: str) -> bool:
        if state.get(name) == 1:
            return True
        if state.get(name) == 2 or name not in workflow.steps:
            return False
        state[name] = 1
        step = workflow.steps[name]
        if any(visit(n) for n in (*step.on_success, *step.on_failure)):
            return True
        state[name] = 2
        return False

    return any(visit(n) for n in workflow.steps)


def _inline_cycles(at: Any, workflows: YAMLMap) -> Iterator[Problem]:
    graph: dict[str, list[str]] = {}
    for name, body in workflows.items():
        inlined: list[str] = []
        steps: YAMLMap = body.get("steps") or {} if is_map(body) else {}
        for step in steps.values():
            activities: YAMLList = step.get("activities") or [] if is_map(step) else []
            for activity in activities:
                if is_map(activity) and "inline" in activity:
                    value = activity["inline"]
                    inlined.append(str(value.get("workflow") if is_map(value)
                                       else value))
        graph[name] = [n for n in inlined if n in workflows]
    for cycle in find_cycles(graph):
        yield at((cycle[0],), f"workflows inline each other: {' -> '.join(cycle)}",
                 "an inline workflow cannot include itself")
