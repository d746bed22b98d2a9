"""What a query walks: the topology's root, node instances, their capabilities and the
relationships of their requirements, with the keys Unfurl gives each (``.name``,
``.parents``, ``.targets``...) and their attributes (an operation's value, else the
template's attribute, else its property).

Values come from the views operations see (:mod:`.context`), so a query reads what a
template would, and what it reads is noted the same way for change detection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.instance_graph import (
    CONFIGURES,
    HOSTED_ON,
    CapabilityShape,
    InstanceGraph,
    RelationshipShape,
)

#: attributes TOSCA's normative node types declare (null until an operation sets them)
NORMATIVE_ATTRIBUTES = {
    "tosca.nodes.Compute": ("private_address", "public_address", "networks", "ports"),
}


class UnfurlEnum:
    """A status or node state as a query gives it: Unfurl's enum, shown ``Status.ok``;
    equal only to the same value (``[.status=ok]`` compares text with it: never equal,
    as in Unfurl)."""

    __slots__ = ("kind", "name")

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name

    def __str__(self) -> str:
        return f"{self.kind}.{self.name}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, UnfurlEnum) and other.kind == self.kind
                and other.name == self.name)

    def __hash__(self) -> int:
        return hash((self.kind, self.name))

    def record_form(self) -> str:
        return self.name


@dataclass
class World:
    """Everything a query can reach in one evaluation context."""

    graph: InstanceGraph
    view: Callable[[str], Mapping[str, Any] | None]  # an instance's values (its view)
    inputs: Callable[[], Mapping[str, Any]]  # the topology's inputs, evaluated when read
    outputs: Callable[[], Mapping[str, Any]]
    evaluate: Callable[[Any], Any]  # a raw capability or relationship property's value
    instance_fields: Callable[[str], Mapping[str, Any]]  # created, protected...
    lineage: Callable[[str], tuple[str, ...]] = lambda template: ()  # a template's types
    definitions: Callable[[], Mapping[str, Any]] = dict  # the types and templates as written
    deployment: str = ""
    project: str = ""  # the ensemble's folder (get_dir's base)

    def __post_init__(self) -> None:
        self._nodes: dict[str, NodeEntity] = {}
        self.root = RootEntity(self)

    def node(self, name: str | None) -> Entity | None:
        if name is None:
            return self.root
        if name not in self.graph.templates:
            return None
        if name not in self._nodes:
            self._nodes[name] = NodeEntity(self, name)
        return self._nodes[name]

    def all(self) -> AllInstances:
        return AllInstances(self)


class AllInstances(Mapping[str, Any]):
    """``::``: every instance by name, the root first (Unfurl's ``root.all``); a name that
    is not one gives null (one result), as in Unfurl."""

    def __init__(self, world: World) -> None:
        self.world = world

    def __getitem__(self, key: Any) -> Any:
        if key == "root":
            return self.world.root
        return self.world.node(key) if isinstance(key, str) else None

    def __iter__(self) -> Iterator[str]:
        yield "root"
        yield from self.world.graph.order

    def __len__(self) -> int:
        return 1 + len(self.world.graph.order)


class Entity:
    """A thing with Unfurl's special keys; subclasses say which keys they have."""

    kind = "Entity"
    name = ""

    def __init__(self, world: World) -> None:
        self.world = world

    # --- special keys (`.name`) -------------------------------------------------------
    def special(self, key: str) -> Any:
        if key == ".":
            return self
        if key == "..":
            return self.parent
        getter = SPECIAL_KEYS.get(key[1:])
        if getter is None or not getter.applies(self):
            raise ExpressionError(
                f"{self.kind} {self.name!r} has no key {key!r}",
                hint="the keys are: " + ", ".join(sorted(
                    "." + name for name, g in SPECIAL_KEYS.items() if g.applies(self))))
        return getter.read(self)

    def attribute(self, key: Any) -> Any:
        raise KeyError(key)

    @property
    def parent(self) -> Entity | None:
        return None

    @property
    def ancestors(self) -> list[Entity]:
        found: list[Entity] = []
        current: Entity | None = self
        while current is not None:
            found.append(current)
            current = current.parent
        return found

    @property
    def root(self) -> Entity:
        return self.ancestors[-1]

    @property
    def key(self) -> str:
        return ""

    @property
    def attributes(self) -> Mapping[str, Any]:
        return _Attributes(self)

    def __repr__(self) -> str:
        return f"{self.kind}('{self.key}')"

    __str__ = __repr__

    @property
    def _label(self) -> str:  # how a template's error names it
        return f"{self.kind} {self.name!r}"

    def as_ref(self) -> dict[str, str]:
        """How Unfurl writes an instance in a record: a reference to it."""
        return {"ref": self.key}

    record_form = as_ref


class _Attributes(Mapping[str, Any]):
    """``entity.attributes`` in a template: its values by name."""

    def __init__(self, entity: Entity) -> None:
        self.entity = entity

    def __getitem__(self, key: str) -> Any:
        return self.entity.attribute(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.entity.attribute_names())  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.entity.attribute_names())  # type: ignore[attr-defined]


class RootEntity(Entity):
    kind = "TopologyInstance"
    name = "root"
    type = "~topology"

    @property
    def key(self) -> str:
        return "::root"

    def attribute(self, key: Any) -> Any:
        if key == "inputs":
            return self.world.inputs()
        if key == "outputs":
            return self.world.outputs()
        raise KeyError(key)

    def attribute_names(self) -> list[str]:
        return ["inputs", "outputs"]

    @property
    def instances(self) -> list[Entity]:
        return _nodes(self.world, self.world.graph.children.get(None, ()))


class NodeEntity(Entity):
    kind = "NodeInstance"

    def __init__(self, world: World, name: str) -> None:
        super().__init__(world)
        self.name = name

    def __repr__(self) -> str:
        return f"NodeInstance('{self.name}')"

    __str__ = __repr__

    @property
    def key(self) -> str:
        return f"::{self.name}"

    @property
    def template(self) -> str:
        return self.world.graph.templates[self.name]

    @property
    def view(self) -> Mapping[str, Any]:
        return self.world.view(self.name) or {}

    @property
    def type(self) -> Any:
        lineage = self.world.lineage(self.template)
        return lineage[0] if lineage else None

    def attribute(self, key: Any) -> Any:
        view = self.view
        attributes: Mapping[str, Any] = view.get("attributes") or {}
        if key in attributes:
            return attributes[key]
        properties: Mapping[str, Any] = view.get("properties") or {}
        if key in properties:
            return properties[key]
        if key in self._normative_attributes():
            return None
        raise KeyError(key)

    def attribute_names(self) -> list[str]:
        view = self.view
        return list(dict.fromkeys([*(view.get("properties") or {}),
                                   *self._normative_attributes(),
                                   *(view.get("attributes") or {})]))

    def _normative_attributes(self) -> tuple[str, ...]:
        lineage = self.world.lineage(self.template)
        return tuple(a for t in lineage for a in NORMATIVE_ATTRIBUTES.get(t, ()))

    @property
    def parent(self) -> Entity | None:
        return self.world.node(self.world.graph.parent.get(self.name))

    @property
    def instances(self) -> list[Entity]:
        return _nodes(self.world, self.world.graph.children.get(self.name, ()))

    @property
    def capabilities(self) -> list[CapabilityEntity]:
        return [CapabilityEntity(self.world, shape)
                for shape in self.world.graph.capabilities.get(self.name, ())]

    @property
    def requirements(self) -> list[RelationshipEntity]:
        return [RelationshipEntity(self.world, shape)
                for shape in self.world.graph.requirements.get(self.name, ())]

    def incoming(self) -> Iterator[RelationshipShape]:
        for capability in self.world.graph.capabilities.get(self.name, ()):
            yield from self.world.graph.incoming.get((self.name, capability.name), ())

    def status(self) -> UnfurlEnum:
        fields = self.world.instance_fields(self.name)
        return UnfurlEnum("Status", str(fields.get("status") or "unknown"))

    def state(self) -> UnfurlEnum | None:
        state = self.world.instance_fields(self.name).get("state")
        return UnfurlEnum("NodeState", str(state)) if state else None


class _ShapedEntity(Entity):
    """A capability or relationship: its shape names it; its properties are its values."""

    def __init__(self, world: World, shape: Any) -> None:
        super().__init__(world)
        self.shape = shape
        self.name = shape.name
        self.type = shape.type

    def attribute(self, key: Any) -> Any:
        if key in self.shape.properties:
            return self.world.evaluate(self.shape.properties[key])
        raise KeyError(key)

    def attribute_names(self) -> list[str]:
        return list(self.shape.properties)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.shape == self.shape

    def __hash__(self) -> int:
        return hash(self.key)


class CapabilityEntity(_ShapedEntity):
    kind = "CapabilityInstance"
    shape: CapabilityShape

    @property
    def key(self) -> str:
        return f"::{self.shape.owner}::.capabilities::[.name={self.name}]"

    @property
    def parent(self) -> Entity | None:
        return self.world.node(self.shape.owner)

    @property
    def relationships(self) -> list[RelationshipEntity]:
        return [RelationshipEntity(self.world, shape) for shape in
                self.world.graph.incoming.get((self.shape.owner, self.name), ())]


class RelationshipEntity(_ShapedEntity):
    kind = "RelationshipInstance"
    shape: RelationshipShape

    @property
    def key(self) -> str:
        return f"::{self.shape.source}::.requirements::[.name={self.name}]"

    @property
    def source(self) -> Entity | None:
        return self.world.node(self.shape.source)

    @property
    def target(self) -> Entity | None:
        return self.world.node(self.shape.target) if self.shape.target else None

    @property
    def capability(self) -> Entity | None:
        target = self.target
        if not isinstance(target, NodeEntity) or self.shape.capability is None:
            return None
        return next((c for c in target.capabilities if c.name == self.shape.capability), None)

    @property
    def parent(self) -> Entity | None:
        return self.capability



def _nodes(world: World, names: Any) -> list[Entity]:
    return [n for n in (world.node(name) for name in names) if n is not None]


# --- the special keys -------------------------------------------------------------------


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


def _hosted_on(node: NodeEntity) -> list[Entity]:
    """Unfurl's walk: each requirement's target, kept when the relationship is a HostedOn,
    and the walk continues through every target."""
    found: list[Entity] = []
    seen: set[str] = set()

    def walk(current: NodeEntity) -> None:
        for relationship in current.world.graph.requirements.get(current.name, ()):
            target = relationship.target
            if target is None or target in seen:
                continue
            seen.add(target)
            entity = current.world.node(target)
            if not isinstance(entity, NodeEntity):
                continue
            if relationship.is_a(HOSTED_ON):
                found.append(entity)
            walk(entity)

    walk(node)
    return found


def _configured_by(node: NodeEntity) -> list[Entity]:
    """The sources that configure it (``unfurl.relationships.Configures``), through the
    sources of each source."""
    found: list[Entity] = []
    seen: set[str] = set()

    def walk(current: NodeEntity) -> None:
        for relationship in current.incoming():
            if relationship.source in seen:
                continue
            seen.add(relationship.source)
            source = current.world.node(relationship.source)
            if not isinstance(source, NodeEntity):
                continue
            if relationship.is_a(CONFIGURES):
                found.append(source)
            walk(source)

    walk(node)
    return found


def _descendants(entity: Entity) -> list[Entity]:
    name = entity.name if isinstance(entity, NodeEntity) else None
    return [entity, *_nodes(entity.world, entity.world.graph.descendants(name))]


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


def _present(entity: Entity) -> bool:
    status = _status(entity)
    return isinstance(status, UnfurlEnum) and status.name in ("ok", "degraded", "error")


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
    # start-up: only when _super() runs
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
    "artifacts": _Key(lambda e: {}),
    "repository": _Key(lambda e: None),
    "created": _Key(_field("created")),
    "protected": _Key(_field("protected")),
    "last_change": _Key(_field("last_change")),
    "priority": _Key(lambda e: UnfurlEnum("Priority", str(_field("priority")(e) or "required"))),
    "present": _Key(_present),
    "operational": _Key(_present),
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
                           "environ", "attributeManager"})
