"""The status layout: Unfurl writes an instance hosted on another nested under its host's
record (``instances:`` inside the host's entry), so both tools must read and write that
shape; a flat layout (older unfurl-lite) still reads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.model.entities import Instance, NodeTemplate, Status

if TYPE_CHECKING:
    from unfurl_lite.plan.tasks import Task

#: the key, in an instance's record, of the instances it hosts
CHILDREN = "instances"
#: the key, in an instance's ``extra``, naming the instance it is hosted on
HOSTED_ON = "hostedOn"


def flatten(recorded: Any, detach: bool = False) -> dict[str, tuple[Any, str | None]]:
    """name -> (record without its hosted instances, host's name or None), in document
    order, hosts before what they host. ``detach`` takes the hosted instances out of the
    records themselves (to rewrite them) rather than out of copies."""
    found: dict[str, tuple[Any, str | None]] = {}

    def walk(entries: Any, parent: str | None) -> None:
        if not isinstance(entries, Mapping):
            return
        for name, record in entries.items():
            name = str(name)
            children = None
            if isinstance(record, dict) and CHILDREN in record:
                if detach:
                    children = record.pop(CHILDREN)
                else:
                    children = record[CHILDREN]
                    record = {k: v for k, v in record.items() if k != CHILDREN}
            if name not in found:
                found[name] = (record, parent)
            walk(children, name)

    walk(recorded, None)
    return found


def has_nested(recorded: Any) -> bool:
    return isinstance(recorded, Mapping) and any(
        isinstance(r, Mapping) and CHILDREN in r for r in recorded.values()
    )


def host_instances(
    templates: Mapping[str, NodeTemplate], instances: Mapping[str, Instance]
) -> dict[str, str]:
    """instance -> the instance it is hosted on: its pinned host, or the only instance of
    its template's host template."""
    by_template: dict[str, list[str]] = {}
    for inst in instances.values():
        by_template.setdefault(inst.template, []).append(inst.name)
    hosts: dict[str, str] = {}
    for inst in instances.values():
        template = templates.get(inst.template)
        host = template.host if template is not None else None
        if host is None or host == inst.template:
            continue
        pinned = inst.extra.get(HOSTED_ON)
        peers = by_template.get(host, [])
        if isinstance(pinned, str) and pinned in peers:
            hosts[inst.name] = pinned
        elif len(peers) == 1 and peers[0] != inst.name:
            hosts[inst.name] = peers[0]
    return hosts


def nest(
    records: Mapping[str, Any], parents: Mapping[str, str | None], order: Iterable[str], empty: Any
) -> Any:
    """Arrange flat ``records`` as Unfurl writes them: each under its host's record.
    ``empty`` makes a new mapping (ruamel's type for a round-trip document)."""
    top = empty()
    placed: set[str] = set()

    def root_of(name: str) -> str | None:
        seen = {name}
        parent = parents.get(name)
        while parent is not None:
            if parent in seen or parent not in records:
                return None  # a cycle or a missing host: written at the top
            seen.add(parent)
            parent = parents.get(parent)
        return name

    def place(name: str) -> None:
        if name in placed:
            return
        placed.add(name)
        record = records[name]
        parent = parents.get(name)
        if parent is not None and root_of(name) is not None:
            place(parent)
            host = records[parent]
            if isinstance(record, dict) and record.get(HOSTED_ON) == parent:
                record.pop(HOSTED_ON)
            if isinstance(host, dict):
                children = host.get(CHILDREN)
                if children is None:
                    children = empty()
                    host[CHILDREN] = children
                children[name] = record
                return
        top[name] = record

    for name in order:
        if name in records:
            place(name)
    for name in records:
        place(name)
    return top


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


#: capabilities of TOSCA's normative node types (name -> capability type)
_NORMATIVE_CAPABILITIES: dict[str, dict[str, str]] = {
    "tosca.nodes.Root": {"feature": "tosca.capabilities.Node"},
    "tosca.nodes.Compute": {
        "host": "tosca.capabilities.Compute",
        "endpoint": "tosca.capabilities.Endpoint.Admin",
        "os": "tosca.capabilities.OperatingSystem",
        "scalable": "tosca.capabilities.Scalable",
        "binding": "tosca.capabilities.network.Bindable",
    },
    "tosca.nodes.WebServer": {
        "data_endpoint": "tosca.capabilities.Endpoint",
        "admin_endpoint": "tosca.capabilities.Endpoint.Admin",
        "host": "tosca.capabilities.Container",
    },
    "tosca.nodes.WebApplication": {"app_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.DBMS": {"host": "tosca.capabilities.Container"},
    "tosca.nodes.Database": {"database_endpoint": "tosca.capabilities.Endpoint.Database"},
}
#: capability types that derive from another (child -> parent)
_CAPABILITY_PARENTS = {
    "tosca.capabilities.Endpoint.Admin": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Endpoint.Database": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Endpoint.Public": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Compute": "tosca.capabilities.Container",
    "tosca.capabilities.Endpoint": "tosca.capabilities.Root",
    "tosca.capabilities.Container": "tosca.capabilities.Root",
    "tosca.capabilities.Node": "tosca.capabilities.Root",
}


def capability_ref(spec: Mapping[str, Any], source: str, requirement: str, target: str) -> str:
    """Unfurl's ``capability`` of a relationship instance: the target's capability the
    requirement connects to, ``::target::.capabilities::[.name=NAME]``."""
    service = _mapping(spec.get("service_template"))
    from unfurl_lite.load.structure import split_types

    node_types = {**split_types(service.get("types"))[0], **_mapping(service.get("node_types"))}
    templates = _mapping(_mapping(service.get("topology_template")).get("node_templates"))
    wanted = _wanted_capability(_mapping(templates.get(source)), node_types, requirement)
    capabilities = capabilities_of(_mapping(templates.get(target)).get("type"), node_types)
    name = "host" if requirement == "host" and "host" in capabilities else "feature"
    name = matching_capability(capabilities, wanted) or name
    return f"::{target}::.capabilities::[.name={name}]"


def capabilities_of(type_name: Any, node_types: Mapping[str, Any]) -> dict[str, Any]:
    """name -> capability type of a node type, inherited ones included."""
    capabilities: dict[str, Any] = {}
    for ancestor in reversed(_lineage(type_name, node_types)):
        capabilities.update(_NORMATIVE_CAPABILITIES.get(ancestor, {}))
        for name, body in _mapping(_mapping(node_types.get(ancestor)).get("capabilities")).items():
            capabilities[str(name)] = body.get("type") if isinstance(body, Mapping) else body
    return capabilities


def matching_capability(capabilities: Mapping[str, Any], wanted: Any) -> str | None:
    """The capability a requirement's ``capability`` (a name or a type) connects to."""
    if not isinstance(wanted, str):
        return None
    if wanted in capabilities:
        return wanted
    return next((n for n, t in capabilities.items() if _is_a(t, wanted)), None)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _lineage(type_name: Any, node_types: Mapping[str, Any]) -> list[str]:
    chain: list[str] = []
    while isinstance(type_name, str) and type_name not in chain:
        chain.append(type_name)
        type_name = _mapping(node_types.get(type_name)).get("derived_from")
    if "tosca.nodes.Root" not in chain:
        chain.append("tosca.nodes.Root")
    return chain


def _wanted_capability(
    template: Mapping[str, Any], node_types: Mapping[str, Any], requirement: str
) -> Any:
    for entries in [template.get("requirements")] + [
        _mapping(node_types.get(t)).get("requirements")
        for t in _lineage(template.get("type"), node_types)
    ]:
        for entry in entries if isinstance(entries, list) else ():
            value = _mapping(_mapping(entry).get(requirement))
            if value.get("capability"):
                return value["capability"]
    return None


def _is_a(capability_type: Any, wanted: str) -> bool:
    seen: set[str] = set()
    while isinstance(capability_type, str) and capability_type not in seen:
        if capability_type == wanted:
            return True
        seen.add(capability_type)
        capability_type = _CAPABILITY_PARENTS.get(capability_type)
    return False
