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
    CapabilityShape,
    InstanceGraph,
    RelationshipShape,
)
from unfurl_lite.model.lineage import NORMATIVE_ATTRIBUTES

#: the numbers of Unfurl 1.2.0's int enums (``Status``, ``NodeState``, ``Priority``)
_NUMBERS: dict[str, tuple[str, ...]] = {
    "Status": ("unknown", "ok", "degraded", "error", "pending", "absent"),
    "NodeState": ("", "initial", "creating", "created", "configuring", "configured",
                  "starting", "started", "stopping", "stopped", "deleting", "deleted",
                  "error"),
    "Priority": ("ignore", "optional", "required", "critical"),
}


class UnfurlEnum(int):
    """A status, node state or priority as a query gives it: Unfurl's enum, shown
    ``Status.ok``. Unfurl's are ``int`` enums, and so is this one: its number compares,
    orders, hashes and converts (``[.status=$one]`` with ``one: 1`` keeps an ok instance,
    ``Status.ok`` equals ``NodeState.initial``, ``'.state' | eval > 3``, ``| int``); text
    is never equal (``[.status=1]`` and ``[.status=ok]`` read the text as the enum's
    value: never equal, as in Unfurl)."""

    kind: str
    name: str

    def __new__(cls, kind: str, name: str) -> UnfurlEnum:
        names = _NUMBERS.get(kind, ())
        made = super().__new__(cls, names.index(name) if name in names else -1)
        made.kind = kind
        made.name = name
        return made

    def __str__(self) -> str:
        return f"{self.kind}.{self.name}"

    __repr__ = __str__

    def __reduce__(self) -> tuple[Any, ...]:
        return (UnfurlEnum, (self.kind, self.name))

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
    #: a raw value evaluated with an entity as where relative queries start (an artifact's)
    evaluate_at: Callable[[Any, Entity], Any] = lambda value, entity: value
    #: a value a query read of an entity without a view (an artifact's): (key, name, value)
    note_read: Callable[[str, str, Any], None] = lambda key, name, value: None

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
        if not isinstance(key, str):  # `::0`: Unfurl fails on a name that is not text
            raise ExpressionError(f"query '::{key}': an instance's name is text, not an index",
                                  hint="write '::name'")
        return self.world.node(key)

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
        return nodes_named(self.world, self.world.graph.children.get(None, ()))


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
        found = self.world.view(self.name)
        return {} if found is None else found

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
        return nodes_named(self.world, self.world.graph.children.get(self.name, ()))

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
        defaults: Mapping[str, Any] = getattr(self.shape, "attributes", {})
        if key in defaults:
            return self.world.evaluate(defaults[key])
        raise KeyError(key)

    def attribute_names(self) -> list[str]:
        defaults: Mapping[str, Any] = getattr(self.shape, "attributes", {})
        return [*self.shape.properties, *(k for k in defaults if k not in self.shape.properties)]

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


#: the fields of an artifact definition Unfurl 1.2.0 makes its instance's attributes (each
#: null when the definition leaves it out)
ARTIFACT_FIELDS = ("file", "repository", "deploy_path", "version", "checksum",
                   "checksum_algorithm", "mime_type", "file_extensions", "permissions",
                   "intent", "target", "order", "contents")


class ArtifactEntity(Entity):
    """An artifact of a node instance (``.artifacts``): its definition's fields and
    properties as attributes, evaluated with the artifact as where a relative query starts
    (``contents: "{{ '.parent::.name' | eval }}"`` names its node), as Unfurl's
    ArtifactInstance. ``a.intent`` in a template is the attribute, as Unfurl's properties."""

    kind = "ArtifactInstance"

    def __init__(self, world: World, owner: str, name: str, definition: Mapping[str, Any]):
        super().__init__(world)
        self.owner = owner
        self.name = name
        self.definition = definition
        self.type = definition.get("type") or "tosca.artifacts.Root"

    def __repr__(self) -> str:
        return f"ArtifactInstance('{self.owner}~a~{self.name}')"

    __str__ = __repr__

    @property
    def key(self) -> str:
        return f"::{self.owner}::.artifacts::{self.name}"

    @property
    def parent(self) -> Entity | None:
        return self.world.node(self.owner)

    def attribute(self, key: Any) -> Any:
        """A query's read: noted for change detection, as Unfurl keys it."""
        value = self._value(key)
        self.world.note_read(self.key[2:], key, value)
        return value

    def _value(self, key: Any) -> Any:
        properties: Mapping[str, Any] = self.definition.get("properties") or {}
        if key in properties:
            return self.world.evaluate_at(properties[key], self)
        if key in ARTIFACT_FIELDS:
            return self.world.evaluate_at(self.definition.get(key), self)
        raise KeyError(key)

    def attribute_names(self) -> list[str]:
        return list(dict.fromkeys([*ARTIFACT_FIELDS, *(self.definition.get("properties") or {})]))

    def __getattr__(self, key: str) -> Any:  # `a.intent` in a template (not noted: Unfurl's)
        if key.startswith("_") or key not in self.attribute_names():
            raise AttributeError(key)
        return self._value(key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArtifactEntity) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def artifacts_of(node: NodeEntity) -> dict[str, ArtifactEntity]:
    """A node instance's artifacts by name: those its type and its ancestors declare, then
    its template's own (a name declared again is the nearer one's)."""
    definitions = node.world.definitions()
    node_types: Mapping[str, Any] = definitions.get("node_types") or {}
    found: dict[str, Any] = {}
    for type_name in reversed(node.world.lineage(node.template)):
        declared = node_types.get(type_name)
        found.update((declared.get("artifacts") or {}) if isinstance(declared, Mapping) else {})
    template = (definitions.get("node_templates") or {}).get(node.template)
    found.update((template.get("artifacts") or {}) if isinstance(template, Mapping) else {})
    return {str(name): ArtifactEntity(node.world, node.name, str(name),
                                      body if isinstance(body, Mapping) else {"file": body})
            for name, body in found.items()}


def nodes_named(world: World, names: Any) -> list[Entity]:
    return [n for n in (world.node(name) for name in names) if n is not None]
