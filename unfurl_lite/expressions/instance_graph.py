"""The instances as Unfurl's queries see them: a tree by hosting under the topology's root
(``..``, ``.instances``, ``::*`` in Unfurl's order), each node's capabilities and
requirements (``.capabilities``, ``.requirements``, ``.sources``), and what each
relationship connects (its type, its properties, the capability of the target it ends at).

The shape only: names, types and raw property values. Values are read when a query
reaches them (:mod:`.entities`). The shape of a job's instances is computed once and
shared by every task that queries (:func:`graph_for` is cached on the topology and the
instances' names), so a job that never queries pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from unfurl_lite.model.entities import Instance, NodeTemplate, Requirement, Topology
from unfurl_lite.model.lineage import as_mapping, parents
from unfurl_lite.model.narrow import new_dict
from unfurl_lite.model.normative import NORMATIVE_RELATIONSHIPS, NORMATIVE_REQUIREMENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

#: TOSCA 1.3's normative node types' own capabilities, in its definition's order
NORMATIVE_NODE_CAPABILITIES: dict[str, tuple[tuple[str, str], ...]] = {
    "tosca.nodes.Root": (("feature", "tosca.capabilities.Node"),),
    "tosca.nodes.Abstract.Compute": (("host", "tosca.capabilities.Compute"),),
    "tosca.nodes.Compute": (
        ("host", "tosca.capabilities.Compute"),
        ("binding", "tosca.capabilities.network.Bindable"),
        ("os", "tosca.capabilities.OperatingSystem"),
        ("scalable", "tosca.capabilities.Scalable"),
        ("endpoint", "tosca.capabilities.Endpoint.Admin"),
    ),
    "tosca.nodes.DBMS": (("host", "tosca.capabilities.Compute"),),
    "tosca.nodes.Database": (("database_endpoint", "tosca.capabilities.Endpoint.Database"),),
    "tosca.nodes.WebServer": (
        ("data_endpoint", "tosca.capabilities.Endpoint"),
        ("admin_endpoint", "tosca.capabilities.Endpoint.Admin"),
        ("host", "tosca.capabilities.Compute"),
    ),
    "tosca.nodes.WebApplication": (("app_endpoint", "tosca.capabilities.Endpoint"),),
    "tosca.nodes.network.Network": (("link", "tosca.capabilities.network.Linkable"),),
    "tosca.nodes.ObjectStorage": (("storage_endpoint", "tosca.capabilities.Endpoint"),),
    "tosca.nodes.Storage.ObjectStorage": (("storage_endpoint", "tosca.capabilities.Endpoint"),),
    "tosca.nodes.Storage.BlockStorage": (("attachment", "tosca.capabilities.Attachment"),),
    "tosca.nodes.LoadBalancer": (("client", "tosca.capabilities.Endpoint.Public"),),
    "tosca.nodes.Container.Runtime": (
        ("host", "tosca.capabilities.Container"), ("scalable", "tosca.capabilities.Scalable")),
    "tosca.nodes.Container.Runtime.Docker": (("host", "tosca.capabilities.Container.Docker"),),
}
NORMATIVE_NODE_PARENTS = {
    "tosca.nodes.Abstract.Compute": "tosca.nodes.Root",
    "tosca.nodes.Compute": "tosca.nodes.Abstract.Compute",
    "tosca.nodes.SoftwareComponent": "tosca.nodes.Root",
    "tosca.nodes.DBMS": "tosca.nodes.SoftwareComponent",
    "tosca.nodes.Database": "tosca.nodes.Root",
    "tosca.nodes.WebServer": "tosca.nodes.SoftwareComponent",
    "tosca.nodes.WebApplication": "tosca.nodes.Root",
    "tosca.nodes.Container.Runtime": "tosca.nodes.SoftwareComponent",
    "tosca.nodes.Container.Runtime.Docker": "tosca.nodes.Container.Runtime",
    "tosca.nodes.Container.Application": "tosca.nodes.Root",
    "tosca.nodes.LoadBalancer": "tosca.nodes.Root",
    "tosca.nodes.ObjectStorage": "tosca.nodes.Root",
    "tosca.nodes.Abstract.Storage": "tosca.nodes.Root",
    "tosca.nodes.Storage.ObjectStorage": "tosca.nodes.Abstract.Storage",
    "tosca.nodes.Storage.BlockStorage": "tosca.nodes.Abstract.Storage",
    "tosca.nodes.network.Network": "tosca.nodes.Root",
    "tosca.nodes.network.Port": "tosca.nodes.Root",
}
#: normative capability types: parent, property defaults
NORMATIVE_CAPABILITIES: dict[str, tuple[str | None, dict[str, Any]]] = {
    "tosca.capabilities.Root": (None, {}),
    "tosca.capabilities.Node": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.Container": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.Storage": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.Compute": ("tosca.capabilities.Container", {}),
    "tosca.capabilities.Endpoint": ("tosca.capabilities.Root", {
        "protocol": "tcp", "secure": False, "network_name": "PRIVATE", "initiator": "source"}),
    "tosca.capabilities.Endpoint.Admin": ("tosca.capabilities.Endpoint", {"secure": True}),
    "tosca.capabilities.Endpoint.Public": ("tosca.capabilities.Endpoint", {
        "network_name": "PUBLIC", "floating": False}),
    "tosca.capabilities.Endpoint.Database": ("tosca.capabilities.Endpoint", {}),
    "tosca.capabilities.Scalable": ("tosca.capabilities.Root", {
        "min_instances": 1, "max_instances": 1}),
    "tosca.capabilities.Attachment": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.network.Linkable": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.network.Bindable": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.OperatingSystem": ("tosca.capabilities.Root", {}),
    "tosca.capabilities.Container.Docker": ("tosca.capabilities.Container", {"publish_all": False}),
}
HOSTED_ON = "tosca.relationships.HostedOn"
CONFIGURES = "unfurl.relationships.Configures"


@dataclass(frozen=True)
class CapabilityShape:
    """A node instance's capability as a query sees it."""

    owner: str  # the node instance's name
    name: str
    type: str
    lineage: tuple[str, ...]
    properties: Mapping[str, Any]
    #: its type's attributes' defaults (a query reads them; get_property does not)
    attributes: Mapping[str, Any] = field(default_factory=new_dict)


@dataclass(frozen=True)
class RelationshipShape:
    """A requirement of a node instance as a query sees it: source, target and type."""

    source: str  # the node instance's name
    name: str  # the requirement's name
    target: str | None
    type: str
    lineage: tuple[str, ...]
    capability: str | None  # the target's capability it connects to
    properties: Mapping[str, Any]
    requirement: str = ""  # the requirement's own name (``name`` may be its template's)
    #: its type's attributes' defaults (a query reads them; get_property does not)
    attributes: Mapping[str, Any] = field(default_factory=new_dict)

    def is_a(self, type_name: str) -> bool:
        return type_name in self.lineage


@dataclass
class InstanceGraph:
    """The instances a query walks: hosting, capabilities and relationships, both ways."""

    order: tuple[str, ...]  # every node instance, depth first by hosting (Unfurl's `::*`)
    templates: dict[str, str]  # instance -> template
    parent: dict[str, str | None]  # instance -> its host instance (None: the root)
    children: dict[str | None, tuple[str, ...]]  # None: the root's
    capabilities: dict[str, tuple[CapabilityShape, ...]]
    requirements: dict[str, tuple[RelationshipShape, ...]]
    incoming: dict[tuple[str, str], tuple[RelationshipShape, ...]] = field(default_factory=new_dict)

    def descendants(self, name: str | None) -> Iterator[str]:
        for child in self.children.get(name, ()):
            yield child
            yield from self.descendants(child)


def _instances_by_template(instances: Mapping[str, Instance]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for instance in instances.values():
        found.setdefault(instance.template, []).append(instance.name)
    return found


def _parent_of(instance: Instance, template: NodeTemplate | None,
               by_template: dict[str, list[str]], instances: Mapping[str, Instance]) -> str | None:
    pinned = instance.extra.get("hostedOn")
    if isinstance(pinned, str) and pinned in instances:
        return pinned
    host = template.host if template else None
    if host is None:
        return None
    if host in instances and instances[host].template == host:
        return host
    found = by_template.get(host)
    return found[0] if found else None


def build_graph(topology: Topology, instances: Mapping[str, Instance]) -> InstanceGraph:
    """The graph queries walk: each instance's host (its parent), its children in the order
    Unfurl visits them, its requirements and capabilities (``graph_for`` keeps it for a
    job's tasks)."""
    by_template = _instances_by_template(instances)
    types = _Types(topology.definitions)
    parent: dict[str, str | None] = {}
    children: dict[str | None, list[str]] = {None: []}
    for name, instance in instances.items():
        host = _parent_of(instance, topology.templates.get(instance.template), by_template,
                          instances)
        if host == name:
            host = None
        parent[name] = host
        children.setdefault(host, []).append(name)
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        order.append(name)
        for child in children.get(name, ()):
            visit(child)

    for top in children[None]:
        visit(top)
    for name in instances:  # a host cycle leaves some unvisited: keep them, in order
        if name not in seen:
            parent[name] = None
            children[None].append(name)
            visit(name)
    capabilities = {
        name: types.capabilities(name, topology.templates.get(instance.template))
        for name, instance in instances.items()
    }
    requirements: dict[str, tuple[RelationshipShape, ...]] = {}
    incoming: dict[tuple[str, str], list[RelationshipShape]] = {}
    for name in _template_order(topology, instances):
        template = topology.templates.get(instances[name].template)
        found: list[RelationshipShape] = []
        if template is None:
            requirements[name] = ()
            continue
        for requirement in template.requirements:
            shape = types.relationship(name, requirement, template, by_template, capabilities)
            found.append(shape)
            if shape.target is not None and shape.capability is not None:
                incoming.setdefault((shape.target, shape.capability), []).append(shape)
        requirements[name] = tuple(found)
    return InstanceGraph(
        order=tuple(order),
        templates={n: i.template for n, i in instances.items()},
        parent=parent,
        children={k: tuple(v) for k, v in children.items()},
        capabilities=capabilities,
        requirements=requirements,
        incoming={k: tuple(v) for k, v in incoming.items()},
    )


def _template_order(topology: Topology, instances: Mapping[str, Instance]) -> list[str]:
    """Instances in the order of their templates in the topology (Unfurl lists the
    relationships targeting a capability in that order)."""
    rank = {name: i for i, name in enumerate(topology.templates)}
    return sorted(instances, key=lambda n: rank.get(instances[n].template, len(rank)))


class _Types:
    """Lineages, capability and relationship definitions (the topology's ``definitions``)."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.node_types = as_mapping(definitions.get("node_types"))
        self.relationship_types = as_mapping(definitions.get("relationship_types"))
        self.capability_types = as_mapping(definitions.get("capability_types"))
        self.relationship_templates = as_mapping(definitions.get("relationship_templates"))
        self.node_templates = as_mapping(definitions.get("node_templates"))
        self._lineages: dict[tuple[str, str], tuple[str, ...]] = {}

    def lineage(self, kind: str, type_name: str) -> tuple[str, ...]:
        key = (kind, type_name)
        if key not in self._lineages:
            chain: list[str] = []

            def visit(name: str) -> None:
                if name in chain:
                    return
                chain.append(name)
                for parent in self._parents(kind, name):
                    visit(parent)

            visit(type_name)
            self._lineages[key] = tuple(chain)
        return self._lineages[key]

    def _parents(self, kind: str, name: str) -> tuple[str, ...]:
        if kind == "node":
            declared = as_mapping(self.node_types.get(name)).get("derived_from")
            if declared:
                return parents(declared)
            normative = NORMATIVE_NODE_PARENTS.get(name)
            return (normative,) if normative else (
                () if name == "tosca.nodes.Root" else ("tosca.nodes.Root",))
        if kind == "capability":
            declared = as_mapping(self.capability_types.get(name)).get("derived_from")
            if declared:
                return parents(declared)
            known = NORMATIVE_CAPABILITIES.get(name)
            return (known[0],) if known and known[0] else ()
        declared = as_mapping(self.relationship_types.get(name)).get("derived_from")
        if declared:
            return parents(declared)
        return NORMATIVE_RELATIONSHIPS.get(name, ((), ()))[0]

    def capability_defaults(self, type_name: str) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in reversed(self.lineage("capability", type_name)):
            values.update(NORMATIVE_CAPABILITIES.get(name, (None, {}))[1])
            for prop, definition in as_mapping(
                    as_mapping(self.capability_types.get(name)).get("properties")).items():
                if isinstance(definition, Mapping) and "default" in definition:
                    values[str(prop)] = definition["default"]
        return values

    def attribute_defaults(self, kind: str, type_name: str) -> dict[str, Any]:
        """A capability or relationship type's attributes' defaults, its ancestors' first
        (a query and get_attribute read them, as Unfurl 1.2.0; get_property does not)."""
        types = self.capability_types if kind == "capability" else self.relationship_types
        values: dict[str, Any] = {}
        for name in reversed(self.lineage(kind, type_name)):
            for attribute, definition in as_mapping(
                    as_mapping(types.get(name)).get("attributes")).items():
                if isinstance(definition, Mapping) and "default" in definition:
                    values[str(attribute)] = definition["default"]
        return values

    def capabilities(self, owner: str,
                     template: NodeTemplate | None) -> tuple[CapabilityShape, ...]:
        """A node's capabilities as Unfurl 1.2.0 lists them: those its template assigns,
        then its types' (most derived first), each with its type's property defaults, the
        node types' definitions' and the template's values, and its type's attribute
        defaults. One walk of the lineage does all of it, so it reads in one place."""
        if template is None:
            return ()
        chain = self.lineage("node", template.type)
        declared: dict[str, str] = {}
        order: list[str] = []
        for node_type in chain:  # most derived first: its declarations win and come first
            for name, type_name in self._declared_capabilities(node_type):
                if name not in declared:
                    declared[name] = type_name
                    order.append(name)
        assigned = as_mapping(as_mapping(self.node_templates.get(template.name)).get(
            "capabilities"))
        # those the template assigns first, in its order, then its types' (tosca-parser's)
        order = [str(n) for n in assigned if n in declared] + [
            n for n in order if n not in assigned]
        shapes: list[CapabilityShape] = []
        for name in order:
            type_name = declared[name]
            properties = self.capability_defaults(type_name)
            for node_type in reversed(chain):
                definition = as_mapping(as_mapping(as_mapping(
                    self.node_types.get(node_type)).get("capabilities")).get(name))
                for prop, value in as_mapping(definition.get("properties")).items():
                    if isinstance(value, Mapping) and "default" in value:
                        properties[str(prop)] = value["default"]
            properties.update(as_mapping(as_mapping(assigned.get(name)).get("properties")))
            shapes.append(CapabilityShape(owner, name, type_name,
                                          self.lineage("capability", type_name), properties,
                                          self.attribute_defaults("capability", type_name)))
        return tuple(shapes)

    def _declared_capabilities(self, node_type: str) -> list[tuple[str, str]]:
        body = as_mapping(self.node_types.get(node_type))
        if "capabilities" in body or node_type in self.node_types:
            found: list[tuple[str, str]] = []
            definition: YAMLValue
            for name, definition in as_mapping(body.get("capabilities")).items():
                type_name = (definition.get("type") if isinstance(definition, Mapping)
                             else definition)
                found.append((str(name), str(type_name or "tosca.capabilities.Root")))
            return found
        return list(NORMATIVE_NODE_CAPABILITIES.get(node_type, ()))

    def requirement_definition(self, template: NodeTemplate, name: str) -> Mapping[str, Any]:
        for node_type in self.lineage("node", template.type):
            for entry in as_mapping(self.node_types.get(node_type)).get("requirements") or ():
                definition = as_mapping(entry).get(name)
                if definition is not None:
                    return as_mapping(definition) if isinstance(definition, Mapping) else {
                        "node": definition}
            normative = NORMATIVE_REQUIREMENTS.get(node_type, {}).get(name)
            if normative is not None and node_type not in self.node_types:
                return {"relationship": normative[0], "capability": normative[1]}
        return {}

    def relationship(self, source: str, requirement: Requirement, template: NodeTemplate,
                     by_template: dict[str, list[str]],
                     capabilities: Mapping[str, tuple[CapabilityShape, ...]]) -> RelationshipShape:
        """A requirement's relationship as queries see it: named after its relationship
        template when it has one (as Unfurl names it), with its type's lineage and
        properties."""
        definition = self.requirement_definition(template, requirement.name)
        assignment = _assignment(self.node_templates.get(template.name), requirement.name,
                                 requirement.node)
        rel: YAMLValue = assignment.get("relationship", definition.get("relationship"))
        properties: dict[str, Any] = {}
        type_name = requirement.relationship
        name = requirement.name
        if isinstance(rel, str) and rel in self.relationship_templates:
            name = rel  # Unfurl names the relationship after its template
            body = as_mapping(self.relationship_templates[rel])
            type_name = str(body.get("type") or type_name or "tosca.relationships.Root")
            inline = as_mapping(body.get("properties"))
        else:
            if isinstance(rel, Mapping):
                type_name = str(rel.get("type") or type_name or "")
            elif isinstance(rel, str):
                type_name = rel
            inline = as_mapping(as_mapping(rel).get("properties"))
        type_name = type_name or "tosca.relationships.Root"
        lineage = self.lineage("relationship", type_name)
        for ancestor in reversed(lineage):
            for prop, value in as_mapping(
                    as_mapping(self.relationship_types.get(ancestor)).get("properties")).items():
                if isinstance(value, Mapping) and "default" in value:
                    properties[str(prop)] = value["default"]
        properties.update(inline)
        target = None
        if requirement.node and requirement.node in by_template:
            target = by_template[requirement.node][0]
        wanted = assignment.get("capability", definition.get("capability"))
        capability = self._target_capability(
            capabilities.get(target, ()) if target else (), wanted, lineage)
        return RelationshipShape(source, name, target, type_name, lineage, capability,
                                 properties, requirement.name,
                                 self.attribute_defaults("relationship", type_name))

    def _target_capability(self, shapes: tuple[CapabilityShape, ...], wanted: Any,
                           lineage: tuple[str, ...]) -> str | None:
        names = [s.name for s in shapes]
        if isinstance(wanted, str):
            if wanted in names:
                return wanted
            for shape in shapes:
                if wanted in shape.lineage:
                    return shape.name
        for relationship in lineage:
            valid: YAMLValue = (as_mapping(self.relationship_types.get(relationship)).get(
                "valid_target_types") or NORMATIVE_RELATIONSHIPS.get(relationship, ((), ()))[1])
            for type_name in valid if isinstance(valid, list | tuple) else ():
                for shape in shapes:
                    if type_name in shape.lineage:
                        return shape.name
        return "feature" if "feature" in names else (names[0] if names else None)


def _assignment(template: Any, name: str, node: str) -> Mapping[str, Any]:
    """The template's own entry for a requirement (its relationship, capability)."""
    entries: YAMLValue = as_mapping(template).get("requirements")
    for entry in entries if isinstance(entries, list) else ():
        value: YAMLValue = as_mapping(entry).get(name)
        if isinstance(value, Mapping) and value.get("node", node) == node:
            return value
    return {}


_CACHE: dict[tuple[int, tuple[tuple[str, str, Any], ...]], tuple[Topology, InstanceGraph]] = {}


def graph_for(topology: Topology, instances: Mapping[str, Instance]) -> InstanceGraph:
    """The graph of these instances (cached: a job's tasks share it until an instance is
    added, removed or moved to another host)."""
    key = (id(topology), tuple((n, i.template, i.extra.get("hostedOn"))
                               for n, i in instances.items()))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is topology:
        return cached[1]
    graph = build_graph(topology, instances)
    if len(_CACHE) > 16:
        _CACHE.clear()
    _CACHE[key] = (topology, graph)
    return graph
