"""Drift: has the spec changed since an instance was last deployed?

Unfurl records, for every task, ``digestKeys`` and ``digestValue``: a digest of the inputs
the operation ran with. Rendering the same operation's inputs from today's spec and
comparing digests tells whether running it again would do something different. Like
Unfurl, secrets take no part in the digest, so a rotated secret is not drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from unfurl_lite import records
from unfurl_lite.history import TaskLine
from unfurl_lite.loader import Ensemble
from unfurl_lite.model import Instance, NodeTemplate, Operation, Status
from unfurl_lite.plan import INSTALL, NodeStep

# the operations whose inputs shape a deployed instance (not check, discover, delete...)
DEPLOY_OPERATIONS = frozenset(
    name for step in INSTALL if isinstance(step, NodeStep) for _, name in step.candidates
)


@dataclass
class Drift:
    """What differs for one instance; ``unknown`` lists what could not be compared."""

    changed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        return bool(self.changed)

    def as_json(self) -> dict[str, Any]:
        return {"drifted": self.drifted, "changes": self.changed, "unknown": self.unknown}


def last_deploy_lines(lines: Iterable[TaskLine]) -> dict[str, dict[str, TaskLine]]:
    """instance -> operation -> its latest successful deploy-side task line."""
    latest: dict[str, dict[str, TaskLine]] = {}
    for line in lines:
        if line.operation in DEPLOY_OPERATIONS and line.status in ("ok", "degraded"):
            latest.setdefault(line.target, {})[line.operation] = line
    return latest


def operation_named(template: NodeTemplate, name: str) -> Operation | None:
    for step in INSTALL:
        if isinstance(step, NodeStep):
            for interface, op_name in step.candidates:
                op = template.interfaces.get(interface, {}).get(op_name)
                if op_name == name and op is not None and op.implementation is not None:
                    return op
    return template.operation(name)


def current_digest(
    ensemble: Ensemble, instance: Instance, operation: Operation
) -> tuple[str, str]:
    """(digestKeys, digestValue) the operation would be recorded with if it ran now."""
    from unfurl_lite.context import make_context, render_inputs

    inputs = dict(operation.inputs)
    implementation = operation.implementation
    if implementation is not None and implementation.primary and "command" not in inputs:
        inputs["command"] = implementation.primary
    ctx = make_context(ensemble.topology, ensemble.instances, instance.name)
    rendered = render_inputs(inputs, {}, ctx)
    return records.input_digest(records._digestable(rendered))


def instance_drift(
    ensemble: Ensemble, instance: Instance, recorded: Mapping[str, TaskLine]
) -> Drift:
    from unfurl_lite.errors import UnfurlLiteError
    from unfurl_lite.expr import ExpressionError

    drift = Drift()
    if instance.status in (Status.absent, Status.pending) or instance.discovered:
        return drift
    template = ensemble.topology.templates.get(instance.template)
    if template is None:
        drift.changed.append(f"template {instance.template!r} was removed from the spec")
        return drift
    for name, line in recorded.items():
        operation = operation_named(template, name)
        if operation is None or operation.implementation is None:
            drift.changed.append(f"{name}: operation removed")
            continue
        try:
            keys, value = current_digest(ensemble, instance, operation)
        except (ExpressionError, UnfurlLiteError) as exc:
            drift.unknown.append(f"{name}: {exc.message}")
            continue
        if keys != line.digest_keys:
            drift.changed.append(f"{name}: inputs changed ({line.digest_keys or '-'} -> {keys})")
        elif value != line.digest_value:
            drift.changed.append(f"{name}: input values changed since {line.change_id}")
    return drift


def ensemble_drift(ensemble: Ensemble, lines: Iterable[TaskLine]) -> dict[str, Drift]:
    latest = last_deploy_lines(lines)
    return {
        name: instance_drift(ensemble, instance, latest.get(name, {}))
        for name, instance in ensemble.instances.items()
    }
