"""From an ensemble's plain data to the model: node types and templates (with their
interfaces, operations and requirements), the topology's inputs, and the recorded instances.

Pure: it reads no file. The loader calls it once the data is valid; validation and the
history reader call it too, to see the templates a spec declares.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from unfurl_lite.load import structure, yamlio
from unfurl_lite.load.interfaces import (
    apply_defaults,
    interfaces_of,
    interfaces_once,
    merge_interfaces,
)
from unfurl_lite.model import status_layout
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import (
    Instance,
    Interfaces,
    NodeState,
    NodeTemplate,
    NodeType,
    Priority,
    Requirement,
    Status,
    Topology,
    canonical_interface,
)
from unfurl_lite.model.lineage import (
    ancestry,
    normative_name,
    normative_values,
    parents,
    undeclared_properties,
)
from unfurl_lite.model.narrow import YAMLList, YAMLMap, cast, is_list, is_map
from unfurl_lite.model.normative import NORMATIVE_REQUIRED_REQUIREMENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from unfurl_lite.model.documents import (
        EnsembleDoc,
        InstanceRecord,
        NodeTemplateDoc,
        NodeTypeDoc,
        ReadyState,
        ServiceTemplateDoc,
        SpecDoc,
        StatusSection,
        TopologyTemplateDoc,
    )

CREDENTIAL = "tosca.datatypes.Credential"
SENSITIVE_TYPES = ("unfurl.datatypes.Sensitive", "sensitive", CREDENTIAL)


def build(file: Path, text: str, data: EnsembleDoc) -> Ensemble:
    """The model of an ensemble from its plain data: types, templates with their inherited
    interfaces and properties, requirements matched, and the recorded instances."""
    data = structure.normalised(data)
    spec: SpecDoc = data.get("spec") or {}
    service: ServiceTemplateDoc = spec.get("service_template") or {}
    topology_tpl: TopologyTemplateDoc = service.get("topology_template") or {}
    node_types, relationship_types = structure.split_types(service.get("types"))
    node_types.update(service.get("node_types") or {})
    relationship_types.update(service.get("relationship_types") or {})
    types = {name: _node_type(name, d or {}) for name, d in node_types.items()}
    relationship_templates: YAMLMap = topology_tpl.get("relationship_templates") or {}
    node_templates: dict[str, NodeTemplateDoc] = topology_tpl.get("node_templates") or {}
    inherited: dict[str, _Inherited] = {}  # by type: computed once, not once per template
    declared: dict[bytes, Interfaces] = {}  # by what templates declare: made once each
    data_types = structure.data_types(service)
    templates = {
        name: _node_template(name, d or {}, types, relationship_templates, relationship_types,
                             cache=inherited, data_types=data_types, declared_once=declared)
        for name, d in node_templates.items()
    }
    if any(_declares_requirements(d) for d in node_types.values()) or any(
        r.node not in templates for t in templates.values() for r in t.requirements
    ) or any(n in NORMATIVE_REQUIRED_REQUIREMENTS for n in {
        n for t in templates.values() for n in t.type_lineage}
    ):  # some requirement is left for matching, or names a type, or a normative type
        # requires one (rare: off the common path)
        for name, implied in structure.implied_requirements(service).items():
            templates[name] = _node_template(
                name, node_templates[name] or {}, types, relationship_templates,
                relationship_types, implied, data_types=data_types,
            )
    templates = _not_required_ignored(templates, topology_tpl.get("root"))
    inputs, sensitive_inputs = _inputs(topology_tpl.get("inputs") or {}, spec.get("inputs") or {})
    topology = Topology(
        templates=templates,
        types=types,
        inputs=inputs,
        sensitive_inputs=frozenset(sensitive_inputs),
        outputs=topology_tpl.get("outputs") or {},
        definitions=_definitions(service, node_types, relationship_types, topology_tpl),
    )
    return Ensemble(path=file, text=text, topology=topology, spec=spec, parse=yamlio.parse,
                    **_recorded(data, spec))


def with_recorded(ensemble: Ensemble, text: str, data: dict[str, Any]) -> Ensemble:
    """``ensemble`` as :func:`build` would make it from ``text`` (``data``) whose spec is
    the same as the ensemble's: a job's view of the file it just wrote (only the sections
    a job records differ), without building the templates again."""
    return replace(ensemble, text=text, plain=data, _document=None,
                   **_recorded(cast("EnsembleDoc", data), ensemble.spec))


def _recorded(data: EnsembleDoc, spec: SpecDoc) -> dict[str, Any]:
    """An Ensemble's fields that jobs record (status, lastJob, the log), not the spec's."""
    status: StatusSection = data.get("status") or {}
    recorded: dict[str, tuple[InstanceRecord | None, str | None]] = status_layout.flatten(
        status.get("instances") or {})
    instances = {name: build_instance(name, record or {}, parent)
                 for name, (record, parent) in recorded.items()}
    spec_instances: YAMLMap = spec.get("instances") or {}
    for name, record in spec_instances.items():
        if name not in instances:
            instances[name] = build_instance(name, structure.spec_instance_record(record))
    return {
        "instances": instances,
        "last_job": data.get("lastJob"),
        "jobs_log": data.get("jobsLog") or "jobs.tsv",
        "changes": _inline_changes(data),
        "inline_log": isinstance(data.get("changes"), list) and not data.get("jobsLog"),
    }


def _definitions(service: ServiceTemplateDoc, node_types: dict[str, Any],
                 relationship_types: dict[str, Any],
                 topology_tpl: TopologyTemplateDoc) -> dict[str, Any]:
    """What queries read beyond the model: types and templates as written."""
    declared: dict[str, NodeTypeDoc] = service.get("types") or {}
    capability_types: YAMLMap = {name: body for name, body in declared.items()
                        if name not in node_types and name not in relationship_types}
    capability_types.update(service.get("capability_types") or {})
    return {
        "node_types": node_types,
        "relationship_types": relationship_types,
        "capability_types": capability_types,
        "data_types": {**capability_types, **(service.get("data_types") or {})},
        "relationship_templates": topology_tpl.get("relationship_templates") or {},
        "node_templates": topology_tpl.get("node_templates") or {},
    }


def _not_required_ignored(templates: dict[str, NodeTemplate], root: Any) -> dict[str, NodeTemplate]:
    """With ``root: {node: NAME}``, Unfurl deploys that template and what it requires
    (transitively); every other template's instances get priority ``ignore``: recorded
    pending, never run."""
    node = root.get("node") if is_map(root) else None
    if not isinstance(node, str) or node not in templates:
        return templates
    required: set[str] = set()
    stack: list[str] = [node]
    while stack:
        name = stack.pop()
        if name in required or name not in templates:
            continue
        required.add(name)
        stack.extend(templates[name].dependencies)
    return {name: t if name in required else replace(t, priority=Priority.ignore)
            for name, t in templates.items()}
def _inline_changes(data: EnsembleDoc) -> list[YAMLMap] | None:
    changes: YAMLList | None = data.get("changes")
    if not isinstance(changes, list):
        return None
    return [c for c in changes if isinstance(c, dict)]


def _declares_requirements(node_type: NodeTypeDoc | None) -> bool:
    return isinstance(node_type, dict) and bool(node_type.get("requirements"))


def _inputs(definitions: YAMLMap, values: YAMLMap) -> tuple[YAMLMap, set[str]]:
    resolved: YAMLMap = {}
    sensitive: set[str] = set()
    for name, given in definitions.items():
        definition: YAMLMap = given if is_map(given) else {"default": given}
        resolved[name] = definition.get("default")  # declared, not required: null
        if _is_sensitive(definition):
            sensitive.add(name)
    resolved.update(values)
    return resolved, sensitive


def _is_sensitive(definition: Any) -> bool:
    if not is_map(definition):
        return False
    metadata: YAMLMap = definition.get("metadata") or {}
    return bool(metadata.get("sensitive")) or definition.get("type") in SENSITIVE_TYPES


def _node_type(name: str, data: NodeTypeDoc) -> NodeType:
    return NodeType(
        name=name,
        derived_from=_derived_from(data.get("derived_from")),
        properties=data.get("properties") or {},
        interfaces=interfaces_of(data.get("interfaces") or {}),
        metadata=data.get("metadata") or {},
        attributes=data.get("attributes") or {},
        interface_types=_interface_types(data.get("interfaces")),
    )


def _interface_types(interfaces: Any) -> dict[str, str]:
    """Interface type names given with ``type:`` (other than the well-known ones) -> the
    interface, so an operation can be named by its interface's type."""
    found: dict[str, str] = {}
    declared: YAMLMap = interfaces if is_map(interfaces) else {}
    for name, body in declared.items():
        type_name = body.get("type") if is_map(body) else None
        if isinstance(type_name, str) and canonical_interface(type_name) == type_name:
            found[type_name] = canonical_interface(str(name))
    return found


def _derived_from(value: Any) -> str | tuple[str, ...] | None:
    found = parents(value)
    return found[0] if isinstance(value, str) else (found or None)


def lineage(type_name: str, types: dict[str, NodeType]) -> tuple[str, ...]:
    return tuple(ancestry(
        type_name, lambda t: parents(types[t].derived_from) if t in types else ()))


#: What a template of a type inherits, the same for every template of that type: its
#: lineage (chain), its ancestors' interfaces, property definitions and interface types, its
#: properties (the definitions' defaults), attributes (declared: null when no default, and
#: defaults), sensitive properties and optional ones (``required: false``, no default);
#: read-only: a template copies what it changes
_Inherited: TypeAlias = (
    "tuple[tuple[str, ...], Interfaces, dict[str, Any], dict[str, str], dict[str, Any], "
    "dict[str, Any], frozenset[str], frozenset[str]]")


def _inherit(type_name: str, types: dict[str, NodeType]) -> _Inherited:
    chain = lineage(type_name, types)
    ancestors = [types[t] for t in reversed(chain) if t in types]  # root first
    interfaces: Interfaces = {}
    property_defs: dict[str, Any] = {}
    attribute_defs: dict[str, Any] = {}
    interface_types: dict[str, str] = {}
    for node_type in ancestors:
        interface_types.update(node_type.interface_types)
        interfaces = merge_interfaces(interfaces, node_type.interfaces)
        property_defs.update(node_type.properties)
        attribute_defs.update(node_type.attributes)
    properties, attributes = normative_values(chain)
    properties.update({key: d["default"] for key, d in property_defs.items()
                       if is_map(d) and "default" in d})
    attributes.update({key: _default_of(d) for key, d in attribute_defs.items()})
    sensitive = frozenset(k for k, d in property_defs.items() if _is_sensitive(d))
    optional = frozenset(k for k, d in property_defs.items() if is_map(d)
                         and d.get("required") is False and k not in properties)
    return (chain, interfaces, property_defs, interface_types, properties, attributes,
            sensitive, optional)


def _default_of(definition: Any) -> Any:
    return definition.get("default") if is_map(definition) else None


def _node_template(
    name: str,
    data: NodeTemplateDoc,
    types: dict[str, NodeType],
    relationship_templates: dict[str, Any],
    relationship_types: dict[str, Any],
    implied: list[tuple[str, dict[str, Any], str | None]] | None = None,
    cache: dict[str, _Inherited] | None = None,
    data_types: structure.DataTypes | None = None,
    declared_once: dict[bytes, Interfaces] | None = None,
) -> NodeTemplate:
    """One node template with what its type's ancestors give it (interfaces, property and
    attribute definitions, root first, the template's own last), as TOSCA inherits them."""
    type_name = data.get("type") or "tosca.nodes.Root"
    if isinstance(type_name, str) and type_name.startswith("tosca:"):
        type_name = normative_name(type_name)  # Unfurl records ``tosca:Root`` by its full name
    inherited = (cache or {}).get(type_name)
    if inherited is None:
        inherited = _inherit(type_name, types)
        if cache is not None:
            cache[type_name] = inherited
    chain, interfaces, property_defs, interface_types, properties, attributes, sensitive, \
        optional = inherited
    declared: YAMLMap = data.get("interfaces") or {}
    interfaces = merge_interfaces(interfaces, interfaces_once(declared, declared_once))
    interfaces = apply_defaults(interfaces, declared.get("defaults"))
    properties = {**properties, **(data.get("properties") or {})}
    if data_types is not None:
        # start-up: keeps model.tosca_values (4 modules) off `plan` until _node_template() runs
        from unfurl_lite.model.tosca_values import with_defaults

        properties = {key: with_defaults(property_defs.get(key), value, data_types)
                      for key, value in properties.items()}
    attributes = {**attributes, **(data.get("attributes") or {})}
    metadata: YAMLMap = data.get("metadata") or {}
    priority: object = data.get("priority") or metadata.get("priority") or "required"
    return NodeTemplate(
        name=name,
        type=type_name,
        properties=properties,
        requirements=_requirements(
            data.get("requirements") or [], implied, relationship_templates, relationship_types
        ),
        interfaces=interfaces,
        metadata=metadata,
        # a template ``imported`` from another ensemble is one Unfurl 1.2.0 selects there
        # (NodeSpec.abstract: "select"); no ensemble is imported here, so none is found
        directives=tuple(data.get("directives") or ()) + (
            ("select",) if data.get("imported") else ()),
        priority=_PRIORITIES.get(priority, Priority.required)
        if isinstance(priority, str) else Priority.required,
        type_lineage=chain,
        sensitive_properties=sensitive, credential_properties=frozenset(
            k for k in sensitive if _mapping_at(property_defs, k).get("type") == CREDENTIAL),
        default_instances=_default_instances(data),
        attributes=attributes,
        interface_types={**interface_types, **_interface_types(data.get("interfaces"))},
        # one the template writes itself and leaves unconnected is judged at validate, as
        # tosca-parser judges it (load/type_checks.py), never "missing" at the job
        missing_requirements=tuple(
            r for r, d, t in implied or ()
            if t is None and not structure.is_optional(d)
            and r not in structure.written_requirements(data.get("requirements"))),
        # a template typed directly with a normative type keeps its free-form properties
        # (docs/differences-from-unfurl.md); get_property of one is refused at validate
        undeclared_properties=undeclared_properties(
            chain, property_defs, {t: types[t].metadata for t in chain if t in types},
            data.get("properties") or (), metadata) if type_name in types else frozenset(),
        unset_properties=optional.difference(properties) if optional else frozenset(),
        written_targets=_written_targets(data.get("requirements")),
    )


def _written_targets(requirements: object) -> tuple[str, ...]:
    found: list[str] = []
    for entry in requirements if is_list(requirements) else ():
        for value in entry.values() if is_map(entry) else ():
            node = value.get("node") if is_map(value) else value
            if isinstance(node, str):
                found.append(node)
    return tuple(found)


def _default_instances(data: NodeTemplateDoc) -> int:
    capabilities: YAMLMap = data.get("capabilities") or {}
    scalable_capability: YAMLMap = capabilities.get("scalable") or {}
    scalable: YAMLMap = scalable_capability.get("properties") or {}
    value: object = scalable.get("default_instances", 1)
    return value if isinstance(value, int) and value >= 0 else 1


def _requirements(
    items: list[Any],
    implied: list[tuple[str, dict[str, Any], str | None]] | None,
    relationship_templates: dict[str, Any],
    relationship_types: dict[str, Any],
) -> tuple[Requirement, ...]:
    """The template's requirements, with those its type declares (or it leaves without a
    node) connected to the template they match."""
    found = [_requirement(r, relationship_templates, relationship_types) for r in items]
    if not implied:
        return tuple(found)
    matched = {name: (d, t) for name, d, t in implied if t is not None}
    connected: list[Requirement] = []
    for r in found:
        if r.name not in matched:
            connected.append(r)
        elif r.node and r.node == matched[r.name][0].get("node"):  # it names a type: in place
            definition, target = matched.pop(r.name)
            connected.append(_requirement({r.name: {**definition, "node": target}},
                                          relationship_templates, relationship_types))
        elif r.node:
            connected.append(r)
    for name, (definition, target) in matched.items():
        connected.append(
            _requirement({name: {**definition, "node": target}}, relationship_templates,
                         relationship_types)
        )
    return tuple(connected)


def _requirement(
    item: dict[str, Any], relationship_templates: dict[str, Any], relationship_types: dict[str, Any]
) -> Requirement:
    """One requirement assignment in any of TOSCA's spellings (a node name, or a mapping with a
    relationship template, type or inline relationship) and the interfaces its relationship
    runs."""
    ((name, given),) = item.items()
    if isinstance(given, str):
        return Requirement(name=name, node=given)
    value: YAMLMap = given or {}
    relationship: object = value.get("relationship")
    rel_interfaces: Interfaces = {}
    target_interfaces: Interfaces = {}
    rel_name: str | None = None
    if isinstance(relationship, str):
        rel_name = relationship
        if relationship in relationship_templates:
            template: YAMLMap = relationship_templates[relationship] or {}
            rel_interfaces = interfaces_of(template.get("interfaces") or {})
            target_interfaces = interfaces_of(template.get("target_interfaces") or {})
            rel_name = template.get("type", relationship)
    elif is_map(relationship):
        rel_name = relationship.get("type")
        rel_interfaces = interfaces_of(relationship.get("interfaces") or {})
        target_interfaces = interfaces_of(relationship.get("target_interfaces") or {})
    if rel_name in relationship_types:  # the type's interfaces, its ancestors' under them
        type_interfaces: Interfaces = {}
        for ancestor in reversed(ancestry(rel_name, lambda t: parents(
                _mapping_at(relationship_types, t).get("derived_from")))):
            if ancestor in relationship_types:
                type_interfaces = merge_interfaces(type_interfaces, interfaces_of(
                    _mapping_at(relationship_types, ancestor).get("interfaces") or {}))
        rel_interfaces = merge_interfaces(type_interfaces, rel_interfaces)
    occurrences: object = value.get("occurrences") or [1, 1]
    optional = bool(value.get("optional")) or (
        is_list(occurrences) and bool(occurrences) and occurrences[0] == 0
    )
    return Requirement(
        name=name,
        node=value.get("node", ""),
        relationship=rel_name,
        interfaces=rel_interfaces,
        optional=optional,
        target_interfaces=target_interfaces,
    )


def _mapping_at(mapping: YAMLMap, key: str) -> YAMLMap:
    return mapping.get(key) or {}


#: the keys of a status record the Instance models (the others are kept as they are)
_MODELED_KEYS = frozenset({"template", "priority", "readyState", "attributes", "created",
                           "lastConfigChange", "lastStateChange", "protected", "requirements"})
#: each enum's members by name (the names are the values): a dict lookup per instance
#: instead of the enum's call
_STATUSES = {name: Status(name) for name in Status.__members__}
_STATES = {name: NodeState(name) for name in NodeState.__members__}
_PRIORITIES = {name: Priority(name) for name in Priority.__members__}


def build_instance(name: str, record: InstanceRecord, host: str | None = None) -> Instance:
    """One recorded instance from its status record; keys we do not model are kept as they
    were, so writing the status back loses nothing."""
    given = record.get("readyState") or {}
    ready: ReadyState = {"local": given} if isinstance(given, str) else given
    local = ready.get("local", "unknown")
    state = ready.get("state")
    priority = record.get("priority", "required")
    return Instance(
        name=name,
        template=record.get("template") or name,
        status=_STATUSES.get(local, Status.unknown) if isinstance(local, str) else Status.unknown,
        state=_STATES.get(state) if isinstance(state, str) else None,
        priority=_PRIORITIES.get(priority, Priority.required)
        if isinstance(priority, str) else Priority.required,
        attributes=dict(record.get("attributes") or {}),
        created=record.get("created"),
        last_config_change=record.get("lastConfigChange"),
        last_state_change=record.get("lastStateChange"),
        protected=bool(record.get("protected", False)),
        extra={k: v for k, v in record.items() if k not in _MODELED_KEYS}
        | ({status_layout.HOSTED_ON: host} if host else {}),
        relationships=_relationships(record.get("requirements")),
    )


def _relationships(entries: Any) -> dict[str, Instance]:
    """Unfurl's ``requirements:`` list: ``- name: {relationship instance record}``."""
    found: dict[str, Instance] = {}
    for entry in entries if is_list(entries) else ():
        if is_map(entry) and len(entry) == 1:
            (name, record), = entry.items()
            if is_map(record):
                found[str(name)] = build_instance(str(record.get("name") or name),
                                                  cast("InstanceRecord", record))
    return found
