"""Workflows that run one named operation: Cloudify's execute_operation, start, stop and
restart, and Unfurl's ad hoc ``run``.

Cloudify's select instances with its three filters (type names, node ids, node instance
ids), in dependency order when asked (start's default); ``run`` takes --instance names.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from unfurl_lite.errors import PlanError
from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import (
    INTERFACE_OPERATIONS,
    Implementation,
    Instance,
    NodeState,
    NodeTemplate,
    Operation,
    Status,
    canonical_interface,
)
from unfurl_lite.plan.agents import plan_agents, seconds
from unfurl_lite.plan.lifecycle import implemented
from unfurl_lite.plan.tasks import RUN, STOP_REASON, Builder, Plan
from unfurl_lite.plan.topology import (
    instance_graph,
    is_present,
    planned_instances,
    select,
    unknown_instance,
    unknown_template,
)

#: operation names ``unfurl run --operation`` finds without an interface (Unfurl's
#: find_standard_interface): every other one must name its interface
UNFURL_SHORTCUTS = frozenset({*INTERFACE_OPERATIONS["Standard"], "check", "discover", "revert",
                              *INTERFACE_OPERATIONS["Configure"]})
START = "cloudify.interfaces.lifecycle.start"
STOP = "cloudify.interfaces.lifecycle.stop"


def _lifecycle_op(template: NodeTemplate, name: str) -> Operation | None:
    """Cloudify's lifecycle operation, or TOSCA Standard's of the same name."""
    return implemented(template, "Lifecycle", name) or implemented(template, "Standard", name)


def _resolve(template: NodeTemplate, name: str) -> Operation | None:
    """An operation by the name a user gives: ``start``, ``Standard.start`` or Cloudify's."""
    interface, _, op = name.rpartition(".")
    if not interface and op in ("start", "stop", "create", "configure", "delete"):
        return _lifecycle_op(template, op) or template.operation(name)
    if interface in ("cloudify.interfaces.lifecycle", "Lifecycle") and op in (
        "start",
        "stop",
        "create",
        "configure",
        "delete",
    ):
        return _lifecycle_op(template, op) or template.operation(name)
    return template.operation(name)


#: node interfaces every node's root type declares: TOSCA's Standard and Unfurl's Install
#: (tosca.nodes.Root, with Unfurl's tosca-ext), Cloudify's lifecycle, validation and
#: monitoring (cloudify.nodes.Root)
_ROOT_INTERFACES = ("Standard", "Install", "Lifecycle", "Validation", "Monitoring")


def declared_everywhere(operation: str) -> bool:
    """An operation every node declares through its root type, mapped or not: Cloudify's
    execute_operation does nothing where it is not mapped (the seed's warning is for a
    node without the interface operation at all)."""
    interface, _, name = operation.rpartition(".")
    interface = canonical_interface(interface)
    return interface in _ROOT_INTERFACES and name in INTERFACE_OPERATIONS[interface]


def select_filtered(
    ensemble: Ensemble,
    type_names: Sequence[str],
    node_ids: Sequence[str],
    node_instance_ids: Sequence[str],
    instances: Mapping[str, Instance] | None = None,
) -> list[str]:
    """Cloudify's three filters, enforced together (an intersection; empty means all)."""
    instances = ensemble.instances if instances is None else instances
    for node in node_ids:
        if node not in ensemble.topology.templates:
            raise unknown_template(node, ensemble.topology.templates)
    for name in node_instance_ids:
        if name not in instances:
            raise unknown_instance(name, instances)
    chosen: list[str] = []
    for name, instance in instances.items():
        template = ensemble.topology.templates.get(instance.template)
        if template is None:
            continue
        if node_ids and instance.template not in node_ids:
            continue
        if node_instance_ids and name not in node_instance_ids:
            continue
        if type_names and not any(template.is_a(t) for t in type_names):
            continue
        chosen.append(name)
    return chosen


def plan_install_new_agents(
    ensemble: Ensemble,
    install_agent_timeout: object = "300s",
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    """Cloudify's install_new_agents on the instances its filters select (here, with every
    workflow that takes them); plan/agents.py plans each one's agent."""
    selected = select_filtered(ensemble, (), node_ids, node_instance_ids)
    timeout = seconds(install_agent_timeout)
    plan = plan_agents(ensemble, selected, timeout)
    plan.options["install_agent_timeout"] = timeout
    return plan


def _state_change(op: Operation) -> dict[str, Any]:
    """start and stop move the node state (a stopped instance is pending: not serving)."""
    if op.interface not in ("Standard", "Lifecycle"):
        return {}
    if op.name == "start":
        return dict(
            running_state=NodeState.starting, done_state=NodeState.started, done_status=Status.ok
        )
    if op.name == "stop":
        return dict(
            running_state=NodeState.stopping,
            done_state=NodeState.stopped,
            done_status=Status.pending,
        )
    return {}


def add_operation_tasks(
    builder: Builder,
    ensemble: Ensemble,
    operation: str,
    selected: Sequence[str],
    operation_kwargs: Mapping[str, Any] | None = None,
    allow_kwargs_override: bool | None = None,
    run_by_dependency_order: bool = False,
    reverse: bool = False,
    missing: str = "error",
    after: Iterable[int] = (),
    instances: Mapping[str, Instance] | None = None,
    reason: str = RUN,
) -> list[int]:
    """One task per selected instance; with dependency order, an instance also waits for
    the nearest selected instances it depends on through filtered-out ones. Given
    ``instances`` (execute_operation), instances not created yet run the operation too."""
    everywhere = instances is not None
    instances = ensemble.instances if instances is None else instances
    deps = instance_graph(ensemble, dict(instances))
    edges = dependencies.reverse(deps) if reverse else deps
    frontier: dict[str, set[int]] = {}
    numbers: list[int] = []
    barrier = set(after)
    wanted = set(selected)
    for name in dependencies.topological_order(edges):
        inherited: set[int] = set()
        if run_by_dependency_order:
            for dep in edges.get(name, ()):
                inherited |= frontier.get(dep, set())
        frontier[name] = inherited
        if name not in wanted:
            continue
        instance = instances[name]
        created = is_present(instance)
        if not created and not everywhere:
            builder.note(name, "skipped: not deployed")
            continue
        template = ensemble.topology.templates[instance.template]
        op = _resolve(template, operation)
        if op is None:
            if missing == "skip":
                builder.note(name, f"left as it is: no {operation} operation")
                continue
            if declared_everywhere(operation):
                builder.note(name, f"nothing to run: {operation} has no implementation")
                continue
            raise PlanError(
                f"instance {name!r} has no operation {operation!r}",
                hint="filter it out with --node-ids, --node-instance-ids or --type-names",
            )
        if op.implementation is None:
            builder.note(name, f"nothing to run: {operation} has no implementation")
            continue
        allow = bool(allow_kwargs_override)  # Cloudify's default (None): not allowed
        if not allow:
            _refuse_override(name, op, operation_kwargs or {})
        task = builder.add(
            name,
            template.name,
            op,
            reason,
            inherited | barrier,
            extra_inputs=dict(operation_kwargs or {}),
            allow_override=allow,
            **(_state_change(op) if created else {}),
        )
        if not created:
            builder.note(name, f"not created yet (status {instance.status}): {operation} runs "
                               "on it all the same, as Cloudify's execute_operation does")
        frontier[name] = {task.number}
        numbers.append(task.number)
    return numbers


def _refuse_override(name: str, op: Operation, kwargs: Mapping[str, Any]) -> None:
    """Cloudify's execute_operation: a kwarg that redefines an input the operation defines
    is an error unless allow_kwargs_override, found before anything runs."""
    defined = set(op.inputs)
    if op.implementation is not None and op.implementation.primary:
        defined.add("command")
    duplicate = sorted(defined & set(kwargs))
    if duplicate:
        raise PlanError(
            f"duplicate definition of {', '.join(map(repr, duplicate))} in the inputs of "
            f"{op.qualified_name} on {name!r} and in the operation kwargs",
            hint="to allow redefinition, pass --allow-kwargs-override "
                 "(-p allow_kwargs_override=true)",
        )


def plan_execute_operation(
    ensemble: Ensemble,
    operation: str,
    operation_kwargs: Mapping[str, Any] | None = None,
    allow_kwargs_override: bool | None = None,
    run_by_dependency_order: bool = False,
    type_names: Sequence[str] = (),
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    builder = Builder("execute_operation")
    instances = planned_instances(ensemble)
    selected = select_filtered(ensemble, type_names, node_ids, node_instance_ids, instances)
    add_operation_tasks(
        builder,
        ensemble,
        operation,
        selected,
        operation_kwargs,
        allow_kwargs_override,
        run_by_dependency_order,
        instances=instances,
    )
    new = {n: i for n, i in instances.items() if n not in ensemble.instances and n in builder.last}
    return builder.plan(new, operation=operation)


def _start_or_stop(
    workflow: str,
    ensemble: Ensemble,
    operation_parms: Mapping[str, Any] | None = None,
    run_by_dependency_order: bool = True,
    type_names: Sequence[str] = (),
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    """Cloudify's start and stop: execute-operation wrappers, dependency order by default."""
    builder = Builder(workflow)
    selected = select_filtered(ensemble, type_names, node_ids, node_instance_ids)
    add_operation_tasks(
        builder,
        ensemble,
        START if workflow == "start" else STOP,
        selected,
        operation_parms,
        True,  # Cloudify's start and stop allow their parms to redefine inputs
        run_by_dependency_order,
        reverse=workflow == "stop",
        missing="skip",
        reason=STOP_REASON if workflow == "stop" else RUN,  # Unfurl's `stop`: reason stop
    )
    return builder.plan({})


plan_start = functools.partial(_start_or_stop, "start")
plan_stop = functools.partial(_start_or_stop, "stop")


def plan_restart(
    ensemble: Ensemble,
    stop_parms: Mapping[str, Any] | None = None,
    start_parms: Mapping[str, Any] | None = None,
    run_by_dependency_order: bool = True,
    type_names: Sequence[str] = (),
    node_ids: Sequence[str] = (),
    node_instance_ids: Sequence[str] = (),
) -> Plan:
    """Every stop (dependents first), then every start (dependencies first)."""
    builder = Builder("restart")
    selected = select_filtered(ensemble, type_names, node_ids, node_instance_ids)
    stops = add_operation_tasks(
        builder, ensemble, STOP, selected, stop_parms, True, run_by_dependency_order,
        reverse=True, missing="skip",
    )  # fmt: skip
    add_operation_tasks(
        builder, ensemble, START, selected, start_parms, True, run_by_dependency_order,
        missing="skip", after=stops,
    )  # fmt: skip
    return builder.plan({})


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
    if operation and "." not in operation and operation not in UNFURL_SHORTCUTS:
        raise PlanError(  # Unfurl 1.2.0 plans nothing for it ("Nothing to do")
            f"--operation {operation!r} names no interface, and is not one Unfurl finds "
            "without one (Standard's lifecycle, Install's check/discover/revert, Configure's)",
            hint=f"name its interface or interface type, e.g. --operation Install.{operation}")
    instances = planned_instances(ensemble)
    chosen = select(instances, instance_names) if instance_names else list(ensemble.instances)
    if not chosen:
        raise PlanError("no instances to run on", hint="deploy first, or name one with --instance")
    undeployed = [name for name in chosen if name not in ensemble.instances]
    if undeployed:
        raise PlanError(
            f"no instance {', '.join(map(repr, undeployed))} yet: `run` works on the "
            "instances a job created, and this template has none",
            hint="deploy it first (`unfurl deploy --instance NAME`), or run the command "
            "on a deployed instance")
    builder = Builder("run")
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
    return builder.plan({})

