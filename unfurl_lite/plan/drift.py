"""Drift: has the spec changed since an instance was last deployed?

Unfurl records, for every task, ``digestKeys`` and ``digestValue``: a digest of the inputs
the operation ran with. Rendering the same operation's inputs from today's spec and
comparing digests tells whether running it again would do something different. Like
Unfurl, secrets take no part in the digest, so a rotated secret is not drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from unfurl_lite.errors import ExpressionError, UnfurlLiteError
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.model.narrow import new_list
from unfurl_lite.plan.baselines import (
    RELATIONSHIP_INTERFACES,
    current_digest,
    deployed_digests,
    recorded_keys,
)
from unfurl_lite.plan.lifecycle import UNINSTALL, NodeStep

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# operations that take an instance down: their inputs changing is not drift of what runs
UNINSTALL_OPERATIONS = frozenset(
    name for step in UNINSTALL if isinstance(step, NodeStep) for _, name in step.candidates
)


@dataclass
class Drift:
    """What differs for one instance; ``unknown`` lists what could not be compared."""

    changed: list[str] = field(default_factory=new_list)
    unknown: list[str] = field(default_factory=new_list)

    @property
    def drifted(self) -> bool:
        return bool(self.changed)

    def as_json(self) -> dict[str, Any]:
        return {"drifted": self.drifted, "changes": self.changed, "unknown": self.unknown}


def deployed_baselines(ensemble: Ensemble) -> dict[str, dict[str, tuple[str, str]]]:
    """instance -> qualified operation -> (changeId, digestValue) it was last deployed with.

    The same baseline ``unfurl update`` acts on (the latest successful run, or the last
    update that accepted the spec), so status shows drift exactly when update has work.
    """
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for (name, qualified), recorded in deployed_digests(ensemble).items():
        interface, _, op = qualified.rpartition(".")
        if interface in RELATIONSHIP_INTERFACES or op in UNINSTALL_OPERATIONS:
            continue
        found.setdefault(name, {})[qualified] = recorded
    return found


def instance_drift(
    ensemble: Ensemble, instance: Instance, recorded: Mapping[str, tuple[str, str]]
) -> Drift:

    drift = Drift()
    if instance.status in (Status.absent, Status.pending) or instance.discovered:
        return drift
    template = ensemble.topology.templates.get(instance.template)
    if template is None:
        drift.changed.append(f"template {instance.template!r} was removed from the spec")
        return drift
    for name, baseline in recorded.items():
        change_id, value = baseline
        operation = template.operation(name)
        if operation is None or operation.implementation is None:
            drift.changed.append(f"{name}: operation removed")
            continue
        try:
            now = current_digest(ensemble, instance.name, operation, recorded_keys(baseline))
        except (ExpressionError, UnfurlLiteError) as exc:
            drift.unknown.append(f"{name}: {exc.message}")
            continue
        if now != value:
            drift.changed.append(f"{name}: inputs changed since {change_id}")
    return drift


def ensemble_drift(ensemble: Ensemble) -> dict[str, Drift]:
    baselines = deployed_baselines(ensemble)
    return {
        name: instance_drift(ensemble, instance, baselines.get(name, {}))
        for name, instance in ensemble.instances.items()
    }
