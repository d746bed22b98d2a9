"""The status layout: Unfurl writes an instance hosted on another nested under its host's
record (``instances:`` inside the host's entry), so both tools must read and write that
shape; a flat layout (older unfurl-lite) still reads. The pure reading and nesting functions
live in :mod:`unfurl_lite.model.status_layout` (loading needs them too); this module adds
the relationship instances a job records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.model.status_layout import (  # noqa: F401 (the layout, as records use it)
    CHILDREN,
    HOSTED_ON,
    flatten,
    has_nested,
    host_instances,
    nest,
)
from unfurl_lite.model.topology import (
    as_mapping,
    capabilities_of,
    matching_capability,
    wanted_capability,
)

if TYPE_CHECKING:
    from unfurl_lite.plan.tasks import Task


def relationship_instance(
    instances: Mapping[str, Instance], task: Task, spec: Mapping[str, Any] | None = None
) -> Instance | None:
    """The relationship instance a relationship operation runs on, as Unfurl records it:
    under its source's ``requirements:``, named after its target, created when first used."""
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
        source.relationships[requirement.name] = found
    return found


def relationship_type(task: Task) -> str:
    requirement = task.requirement
    return (requirement.relationship if requirement else None) or "tosca.relationships.DependsOn"


def capability_ref(spec: Mapping[str, Any], source: str, requirement: str, target: str) -> str:
    """Unfurl's ``capability`` of a relationship instance: the target's capability the
    requirement connects to, ``::target::.capabilities::[.name=NAME]``."""
    service = as_mapping(spec.get("service_template"))
    from unfurl_lite.load.structure import split_types

    node_types = {**split_types(service.get("types"))[0], **as_mapping(service.get("node_types"))}
    templates = as_mapping(as_mapping(service.get("topology_template")).get("node_templates"))
    wanted = wanted_capability(as_mapping(templates.get(source)), node_types, requirement)
    capabilities = capabilities_of(as_mapping(templates.get(target)).get("type"), node_types)
    name = "host" if requirement == "host" and "host" in capabilities else "feature"
    name = matching_capability(capabilities, wanted) or name
    return f"::{target}::.capabilities::[.name={name}]"
