"""Relationship instances: where a relationship operation's status is recorded.

Unfurl records a relationship instance under its source's ``requirements:``, named after
its target, created the first time an operation runs on it; its ``capability`` names the
target's capability the requirement connects to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from unfurl_lite.load.structure import split_types
from unfurl_lite.model.entities import Instance, NodeState, Status
from unfurl_lite.model.lineage import (
    as_mapping as mapping,
)
from unfurl_lite.model.lineage import (
    capabilities_of,
    matching_capability,
    wanted_capability,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.plan.tasks import Task


def relationship_instance(
    instances: Mapping[str, Instance], task: Task, spec: Mapping[str, Any] | None = None,
    attach: bool = True,
) -> Instance | None:
    """The relationship instance a relationship operation runs on, as Unfurl records it:
    under its source's ``requirements:``, named after its target, created when first used
    (``attach``: kept under its source; a reader of the records leaves them as they are)."""
    requirement, source = task.requirement, instances.get(task.source or "")
    if requirement is None or source is None:
        return None
    found = source.relationships.get(requirement.name)
    if found is None:
        found = Instance(
            name=task.peer or requirement.node,
            template=f"{source.template}~r~{requirement.name}",
            status=Status.pending,
            priority=source.priority,
        )
        if spec is not None and task.peer:
            found.extra["capability"] = capability_ref(
                spec, source.template, requirement.name, instances[task.peer].template
                if task.peer in instances else task.peer
            )
        if attach:
            source.relationships[requirement.name] = found
    return found


def relationship_type(task: Task) -> str:
    requirement = task.requirement
    return (requirement.relationship if requirement else None) or "tosca.relationships.DependsOn"


def capability_ref(spec: Mapping[str, Any], source: str, requirement: str, target: str) -> str:
    """Unfurl's ``capability`` of a relationship instance: the target's capability the
    requirement connects to, ``::target::.capabilities::[.name=NAME]``."""
    service = mapping(spec.get("service_template"))
    node_types = {**split_types(service.get("types"))[0], **mapping(service.get("node_types"))}
    templates = mapping(mapping(service.get("topology_template")).get("node_templates"))
    wanted = wanted_capability(mapping(templates.get(source)), node_types, requirement)
    capabilities = capabilities_of(mapping(templates.get(target)).get("type"), node_types)
    name = "host" if requirement == "host" and "host" in capabilities else "feature"
    name = matching_capability(capabilities, wanted) or name
    return f"::{target}::.capabilities::[.name={name}]"


#: relationship operations that take the relationship away
_UNLINKING = frozenset({"remove_target", "remove_source", "unlink"})


def on_relationship(task: Task, node: Instance, still_linked: bool = False) -> Task:
    """A relationship operation's task as it applies to its relationship instance (as
    Unfurl records it: ok and configured once linked, absent once unlinked); the status it
    would have given the node it runs on is applied to the node here. ``still_linked``: the
    unlink took away one of several target instances (a scale in, a rolled-back scale
    out), so the requirement stays as it was."""
    if task.done_state is not None:
        node.state = task.done_state
    if task.done_status is not None:
        node.status = task.done_status
    unlinking = task.name in _UNLINKING
    if unlinking and still_linked:
        return replace(task, running_state=None, done_state=None, done_status=None)
    return replace(
        task,
        running_state=None,
        done_state=None if unlinking else NodeState.configured,
        done_status=Status.absent if unlinking else Status.ok,
    )


def still_linked(instances: Mapping[str, Instance], task: Task, leaving: set[str]) -> bool:
    """Does the requirement an unlink runs on keep another target instance, one this job
    does not take down? Cloudify unlinks each removed instance of a scaled target; the
    connection to the others stays."""
    requirement = task.requirement
    if requirement is None or task.name not in _UNLINKING:
        return False
    return any(
        instance.template == requirement.node and name != task.peer and name not in leaving
        and instance.status in (Status.ok, Status.degraded, Status.error)
        for name, instance in instances.items()
    )


def drop_if_unrequired(
    templates: Mapping[str, Any], instances: Mapping[str, Instance], task: Task
) -> None:
    """After an unlink: if the source's template in the spec no longer has the requirement
    (an update dropped it), its relationship instance goes from the record."""
    source = instances.get(task.source or "")
    requirement = task.requirement
    if source is None or requirement is None or task.name not in _UNLINKING:
        return
    template = templates.get(source.template)
    if template is not None and all(r.name != requirement.name for r in template.requirements):
        source.relationships.pop(requirement.name, None)
