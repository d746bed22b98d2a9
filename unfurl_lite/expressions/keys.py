"""Unfurl's query keys (``.name``, ``.parents``, ``.targets``...): how each is read and on
which kinds of entity it means something. A query's ``.KEY`` is Unfurl's
``getattr(instance, KEY)``: every public property of Unfurl 1.2.0's instance classes is
either read here or refused by name (``INTERNAL_KEYS``, Unfurl's Python objects);
tests/data/unfurl120/queries/names.json lists them as Unfurl defines them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.entities import (
    CapabilityEntity,
    Entity,
    NodeEntity,
    RelationshipEntity,
    RootEntity,
    UnfurlEnum,
    artifacts_of,
    nodes_named,
)
from unfurl_lite.expressions.instance_graph import CONFIGURES, HOSTED_ON


@dataclass(frozen=True)
class _Key:
    """How a query key is read, and on which kinds of entity it means something."""

    read: Callable[[Any], Any]
    kinds: tuple[type, ...] = (Entity,)

    def applies(self, entity: Entity) -> bool:
        return isinstance(entity, self.kinds)


def _by_name(pairs: list[tuple[str, Entity | None]]) -> dict[str, Any]:
    """Requirement name -> instance, a list when several share the name (Unfurl's
    ``.targets`` and ``.sources``)."""
    found: dict[str, Any] = {}
    for name, entity in pairs:
        if entity is None:
            continue
        if name not in found:
            found[name] = entity
        elif isinstance(found[name], list):
            found[name].append(entity)
        else:
            found[name] = [found[name], entity]
    return found


def _targets(node: NodeEntity) -> dict[str, Any]:
    return _by_name([(r.name, r.target) for r in node.requirements])


def _sources(node: NodeEntity) -> dict[str, Any]:
    return _by_name([(shape.name, node.world.node(shape.source)) for shape in node.incoming()])


def _walk(node: NodeEntity, edges: Callable[[NodeEntity], Iterator[tuple[str | None, Any]]],
          kind: str) -> list[Entity]:
    """Unfurl's walk for ``.hosted_on`` and ``.configured_by``: every node an edge reaches,
    kept when its relationship is a ``kind``, the walk going on through each."""
    found: list[Entity] = []
    seen: set[str] = set()

    def walk(current: NodeEntity) -> None:
        for name, relationship in edges(current):
            if name is None or name in seen:
                continue
            seen.add(name)
            entity = current.world.node(name)
            if not isinstance(entity, NodeEntity):
                continue
            if relationship.is_a(kind):
                found.append(entity)
            walk(entity)

    walk(node)
    return found


def _hosted_on(node: NodeEntity) -> list[Entity]:
    """Each requirement's target, kept when the relationship is a HostedOn."""
    return _walk(node, lambda current: (
        (r.target, r) for r in current.world.graph.requirements.get(current.name, ())),
        HOSTED_ON)


def _configured_by(node: NodeEntity) -> list[Entity]:
    """The sources that configure it (``unfurl.relationships.Configures``), through the
    sources of each source."""
    return _walk(node, lambda current: ((r.source, r) for r in current.incoming()), CONFIGURES)


def _descendants(entity: Entity) -> list[Entity]:
    name = entity.name if isinstance(entity, NodeEntity) else None
    return [entity, *nodes_named(entity.world, entity.world.graph.descendants(name))]


def _field(name: str) -> Callable[[Any], Any]:
    def read(entity: Any) -> Any:
        if not isinstance(entity, NodeEntity):
            return None
        return entity.world.instance_fields(entity.name).get(name)
    return read


def _status(entity: Entity) -> Any:
    if isinstance(entity, NodeEntity):
        return entity.status()
    if isinstance(entity, RootEntity):
        return UnfurlEnum("Status", "unknown")
    return UnfurlEnum("Status", "ok")


def _status_in(*names: str) -> Callable[[Entity], bool]:
    def test(entity: Entity) -> bool:
        status = _status(entity)
        return isinstance(status, UnfurlEnum) and status.name in names
    return test


_present = _status_in("ok", "degraded", "error")
_operational = _status_in("ok", "degraded")
_STARTED_ONCE = frozenset({"created", "configuring", "configured", "starting", "started",
                           "stopping", "stopped"})


def _active(entity: Entity) -> bool:
    """Unfurl's ``active``: past its initial state, whether it has been created (and not
    deleted or in error); otherwise whether its status is not pending or absent."""
    state = entity.state() if isinstance(entity, NodeEntity) else None
    if state is not None and state.name != "initial":
        return state.name in _STARTED_ONCE
    return _status_in("unknown", "ok", "degraded", "error")(entity)


def _owner(entity: Entity) -> Entity:
    if isinstance(entity, RelationshipEntity):
        return entity.source or entity
    if isinstance(entity, CapabilityEntity):
        return entity.parent or entity
    return entity


class _Names(Mapping[str, Any]):
    """``.names``: what TOSCA's ``get_attribute`` looks a name up in: the node's
    attributes, then its requirements (the capability each connects to), then its
    capabilities."""

    def __init__(self, node: NodeEntity) -> None:
        self.node = node

    def __getitem__(self, key: str) -> Any:
        try:
            return self.node.attribute(key)
        except KeyError:
            pass
        for relationship in self.node.requirements:
            if relationship.name == key:
                return relationship.capability
        for capability in self.node.capabilities:
            if capability.name == key:
                return capability
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        names = [*self.node.attribute_names(), *(r.name for r in self.node.requirements),
                 *(c.name for c in self.node.capabilities)]
        return iter(dict.fromkeys(names))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _names(entity: Entity) -> Any:
    if isinstance(entity, NodeEntity):
        return _Names(entity)
    return dict(entity.attributes)


def _super(entity: Entity) -> Any:
    # start-up: keeps expressions.inheritance (3 modules) off `deploy`, `check` until _super() runs
    from unfurl_lite.expressions.inheritance import super_values

    return super_values(entity)


_NODE = (NodeEntity,)
_HAS_INSTANCES = (NodeEntity, RootEntity)
SPECIAL_KEYS: dict[str, _Key] = {
    "name": _Key(lambda e: e.name),
    "type": _Key(lambda e: e.type),
    "tosca_id": _Key(lambda e: e.key),
    "key": _Key(lambda e: e.key),
    "tosca_name": _Key(lambda e: e.template if isinstance(e, NodeEntity) else e.name),
    "uri": _Key(lambda e: "#" + e.key),
    "deployment": _Key(lambda e: e.world.deployment),
    "status": _Key(_status),
    "local_status": _Key(lambda e: e.status() if isinstance(e, NodeEntity) else None),
    "state": _Key(lambda e: e.state() if isinstance(e, NodeEntity) else None),
    "parent": _Key(lambda e: e.parent),
    "parents": _Key(lambda e: list(reversed(e.ancestors))[:-1]),
    "ancestors": _Key(lambda e: e.ancestors),
    "root": _Key(lambda e: e.root),
    "apex": _Key(lambda e: e.root),
    "instances": _Key(lambda e: e.instances, _HAS_INSTANCES),
    "descendants": _Key(_descendants, _HAS_INSTANCES),
    "descendents": _Key(_descendants, _HAS_INSTANCES),
    "capabilities": _Key(lambda e: e.capabilities, _NODE),
    "requirements": _Key(lambda e: e.requirements if isinstance(e, NodeEntity) else [],
                         _HAS_INSTANCES),
    "relationships": _Key(lambda e: e.relationships, (CapabilityEntity,)),
    "targets": _Key(_targets, _NODE),
    "sources": _Key(_sources, _NODE),
    "hosted_on": _Key(_hosted_on, _NODE),
    "configured_by": _Key(_configured_by, _NODE),
    "source": _Key(lambda e: e.source, (RelationshipEntity,)),
    "target": _Key(lambda e: e.target, (RelationshipEntity,)),
    "capability": _Key(lambda e: e.capability, (RelationshipEntity,)),
    "artifacts": _Key(lambda e: artifacts_of(e) if isinstance(e, NodeEntity) else {}),
    "repository": _Key(lambda e: None),
    "created": _Key(_field("created")),
    "protected": _Key(_field("protected")),
    "last_change": _Key(_field("last_change")),
    "priority": _Key(lambda e: UnfurlEnum("Priority", str(_field("priority")(e) or "required"))),
    "present": _Key(_present),
    "operational": _Key(_operational),
    "active": _Key(_active),
    "missing": _Key(_status_in("pending", "absent")),
    "last_config_change": _Key(_field("last_config_change")),
    "last_state_change": _Key(_field("last_state_change")),
    "customized": _Key(_field("customized")),
    "manual_override_status": _Key(lambda e: None),  # (1.2.0 never reads it back)
    "dependencies": _Key(lambda e: []),  # (1.2.0's are set by its jobs' tasks only)
    "imported": _Key(lambda e: None),  # (instances of other ensembles are refused)
    "nested_name": _Key(lambda e: e.name),  # (nested topologies are refused)
    "nested_key": _Key(lambda e: e.key),
    "base_dir": _Key(lambda e: e.world.project or None),
    "parent_topology": _Key(lambda e: None, (RootEntity,)),
    "readonly": _Key(lambda e: False),
    "required": _Key(lambda e: str(_field("priority")(e) or "required") == "required"),
    "attributes": _Key(lambda e: dict(e.attributes)),
    "names": _Key(_names),
    # later Unfurl versions' keys (not in 1.2.0; docs/differences-from-unfurl.md)
    "owner": _Key(_owner),
    "super": _Key(_super, _NODE),
}

#: keys Unfurl 1.2.0 gives that are its internal Python objects, refused by name
INTERNAL_KEYS = frozenset({"template", "all", "shadow", "imports", "templar",
                           "environ", "attributeManager", "parentRelation", "proxy",
                           "tmp_dir"})


def read_key(entity: Entity, key: str) -> Any:
    """``entity``'s value for the query key ``key`` (``.``, ``..``, ``.name``...)."""
    if key == ".":
        return entity
    if key == "..":
        return entity.parent
    getter = SPECIAL_KEYS.get(key[1:])
    if getter is None or not getter.applies(entity):
        raise ExpressionError(
            f"{entity.kind} {entity.name!r} has no key {key!r}",
            hint="the keys are: " + ", ".join(sorted(
                "." + name for name, g in SPECIAL_KEYS.items() if g.applies(entity))))
    return getter.read(entity)
