"""Sections Unfurl 1.2.0 allows beyond TOSCA's: a service template's ``types:`` (types of
any kind in one section, told apart by what they derive from; its data types with those of
``data_types:``), ``spec.instances`` (instances declared in the spec, which exist without
being deployed, their templates possibly inline) and the ensemble's ``environment.inputs``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping
from contextvars import ContextVar

from unfurl_lite.model.lineage import (
    NORMATIVE_PROPERTIES,
    ancestry,
    as_mapping,
    capabilities_of,
    is_a,
    lineage,
    matching_capability,
    normative_name,
    parents,
)
from unfurl_lite.model.narrow import YAMLValue, cast, is_list, is_map
from unfurl_lite.model.normative import NORMATIVE_RELATIONSHIPS, NORMATIVE_REQUIRED_REQUIREMENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.documents import InstanceRecord, NodeTypeDoc
    from unfurl_lite.model.tosca_values import DataTypes

#: what Unfurl records as ``created`` for an instance declared in the spec
SPEC_CREATED = "::root"

#: the topology inputs the job being loaded sets itself (``--var input_NAME VALUE``)
_JOB_INPUTS: ContextVar[frozenset[str]] = ContextVar("job_inputs", default=frozenset())


@contextlib.contextmanager
def inputs_given(names: Collection[str]) -> Iterator[None]:
    """While loading for a job that sets these topology inputs on its command line: a
    required input among them is not missing (Unfurl checks inputs with ``--var``'s)."""
    token = _JOB_INPUTS.set(frozenset(names))
    try:
        yield
    finally:
        _JOB_INPUTS.reset(token)


def job_inputs() -> frozenset[str]:
    return _JOB_INPUTS.get()


def split_types(types: Any) -> tuple[dict[str, NodeTypeDoc], dict[str, NodeTypeDoc]]:
    """(node types, relationship types) among a ``types:`` section. A type is a relationship
    type when its ``derived_from`` chain reaches ``tosca.relationships``; other kinds
    (capability, data, ...) reach their own normative prefix and are neither."""
    if not is_map(types):
        return {}, {}
    nodes: dict[str, NodeTypeDoc] = {}
    relationships: dict[str, NodeTypeDoc] = {}
    for name in types:
        kind = _kind(str(name), types)
        if kind == "node":
            nodes[name] = types[name]
        elif kind == "relationship":
            relationships[name] = types[name]
    return nodes, relationships


def _kind(name: str, types: dict[str, Any]) -> str:
    seen: set[str] = set()
    current: Any = name
    while isinstance(current, str) and current in types and current not in seen:
        seen.add(current)
        body = types[current]
        current = body.get("derived_from") if is_map(body) else None
        if is_list(current):  # Unfurl's multiple inheritance: the first parent's kind
            current = current[0] if current else None
    if not isinstance(current, str) or current in seen:
        return "node"
    if current.startswith(("tosca.relationships.", "unfurl.relationships.")):
        return "relationship"
    if current.startswith(("tosca.nodes.", "unfurl.nodes.")) or "." not in current:
        return "node"
    return "other"


def data_types(service: Any) -> DataTypes | None:
    """The data types a service template declares (``data_types:``, and those of Unfurl's
    ``types:``), or None when it declares none (the common case: a property of a normative
    data type keeps the value it was given)."""
    service = as_mapping(service)
    declared: dict[str, Any] = dict(as_mapping(service.get("data_types")))
    types: YAMLValue = service.get("types")
    if isinstance(types, dict):
        nodes, relationships = split_types(types)
        declared.update({k: v for k, v in types.items()
                         if k not in nodes and k not in relationships})
    if not declared:
        return None
    from unfurl_lite.model.tosca_values import DataTypes  # start-up: rare: off a cold plan's path

    return DataTypes(declared)


def normalised(data: YAMLValue) -> Any:
    """The ensemble's data as Unfurl reads it before validating: its own ``environment``
    section's inputs merged over ``spec.inputs`` (Unfurl's order; ``--var`` goes over
    both), the deployment blueprint it chooses applied (load/blueprints.py),
    ``substitution_mappings: {node: NAME}`` read as ``root``, and templates written inline
    in ``spec.instances`` made node templates. The data itself when it has none of these
    (the common case copies nothing)."""
    if not isinstance(data, dict):
        return data
    environment: YAMLValue = data.get("environment")
    given: YAMLValue = environment.get("inputs") if isinstance(environment, dict) else None
    if isinstance(given, dict) and given and isinstance(data.get("spec"), dict):
        spec = data["spec"]
        data = {**data, "spec": {**spec, "inputs": {**as_mapping(spec.get("inputs")), **given}}}
    if isinstance(environment, dict) and environment.get("deployment_blueprint"):
        from unfurl_lite.load import blueprints  # start-up: only an ensemble that chooses one

        data = blueprints.applied(data)
    return hoist_inline_templates(_root_alias(data))


def _root_alias(data: dict[str, Any]) -> dict[str, Any]:
    """``substitution_mappings: {node: NAME}`` in an ensemble's own topology read as
    Unfurl's ``root: {node: NAME}``, its alias (the other forms are refused at validate)."""
    spec = as_mapping(data.get("spec"))
    service = as_mapping(spec.get("service_template"))
    topology = as_mapping(service.get("topology_template"))
    mappings: YAMLValue = topology.get("substitution_mappings")
    if not is_root_form(mappings) or topology.get("root") is not None:
        return data
    topology = {**topology, "root": mappings}
    service = {**service, "topology_template": topology}
    return {**data, "spec": {**spec, "service_template": service}}


def is_root_form(mappings: YAMLValue) -> bool:
    """``substitution_mappings`` that only names the topology's node: Unfurl's ``root``."""
    return is_map(mappings) and list(mappings) == ["node"]


def hoist_inline_templates(data: dict[str, Any]) -> dict[str, Any]:
    """The ensemble's data with each ``spec.instances`` entry whose ``template`` is a
    mapping (a template written inline, as Unfurl's own tests declare instances) turned
    into a node template of the instance's name, as Unfurl does; the data unchanged when
    there is none (the common case copies nothing)."""
    spec = as_mapping(data.get("spec"))
    declared: YAMLValue = spec.get("instances")
    if not isinstance(declared, dict) or not any(
        is_map(r) and is_map(r.get("template")) for r in declared.values()
    ):
        return data
    service = dict(as_mapping(spec.get("service_template")))
    topology = dict(as_mapping(service.get("topology_template")))
    node_templates = dict(as_mapping(topology.get("node_templates")))
    instances: dict[str, Any] = {}
    record: YAMLValue
    for name, record in declared.items():
        if isinstance(record, dict) and isinstance(record.get("template"), dict):
            node_templates.setdefault(name, record["template"])
            record = {**record, "template": name}
        instances[name] = record
    topology["node_templates"] = node_templates
    service["topology_template"] = topology
    return {**data, "spec": {**spec, "service_template": service, "instances": instances}}


def spec_instance_record(record: Any) -> InstanceRecord:
    """The status record of an instance declared in the spec, as Unfurl creates it: ready
    (``ok``) unless it says otherwise, created by the topology itself."""
    result = cast("InstanceRecord", dict(record) if is_map(record) else {})
    result.setdefault("readyState", "ok")
    result.setdefault("created", SPEC_CREATED)
    return result


def implied_requirements(
    service: Any,
) -> dict[str, list[tuple[str, dict[str, Any], str | None]]]:
    """template -> (requirement name, definition, matched template or None) for each
    requirement its type declares (or it declares without a ``node``) that the template
    does not connect itself. As Unfurl does, a requirement is matched to the template its
    ``node`` names (a template, or the first other template of that type) or else to the
    first other template with the ``capability`` it asks for, one its ``node_filter``
    refuses left out, an optional one not searched for (see :func:`_match`); a template
    with the ``default`` directive only when no other template matches. A requirement that
    names neither is matched by its relationship type's ``valid_target_types``
    (tosca-parser's rule: a ``connect`` with only ``relationship: {type: ConnectsToX}``
    finds the template with that endpoint)."""
    service = as_mapping(service)
    node_types = {**split_types(service.get("types"))[0], **as_mapping(service.get("node_types"))}
    targets = TargetTypes(service)
    templates = as_mapping(as_mapping(service.get("topology_template")).get("node_templates"))
    lineages: dict[Any, list[str]] = {}
    capabilities: dict[Any, dict[str, Any]] = {}
    found: dict[str, list[tuple[str, dict[str, Any], str | None]]] = {}
    declared: dict[Any, dict[str, dict[str, Any]]] = {}
    for name, body in templates.items():
        body = as_mapping(body)
        type_name = body.get("type") if isinstance(body.get("type"), str) else None
        if type_name not in declared:
            lineages[type_name] = lineage(type_name, node_types)
            declared[type_name] = {}
            for ancestor in reversed(lineages[type_name]):
                if ancestor not in node_types:
                    declared[type_name].update(_normative_required(ancestor))
                for entry in _entries(as_mapping(node_types.get(ancestor)).get("requirements")):
                    declared[type_name].update(entry)
        if not declared[type_name] and _all_connected(body.get("requirements"), templates):
            continue  # the common case, kept cheap: nothing to match
        definitions = dict(declared[type_name])
        given: set[str] = set()
        for entry in _entries(body.get("requirements")):
            for req, value in entry.items():
                node = as_mapping(value).get("node")
                if node and (not isinstance(node, str) or node in templates):
                    given.add(req)  # a template it names (a type it names is matched)
                elif req in definitions:
                    definitions[req] = {**definitions[req], **as_mapping(value)}
                else:
                    definitions[req] = dict(as_mapping(value))
        for req, definition in definitions.items():
            if req in given:
                continue
            if definition.get("node") is None and definition.get("capability") is None:
                definition = {**definition, "capability": targets.of(definition)}
            target = _match(str(name), definition, templates, node_types, lineages, capabilities,
                            targets.is_a, targets)
            found.setdefault(str(name), []).append((req, definition, target))
    return found


def _normative_required(type_name: str) -> dict[str, dict[str, Any]]:
    """The required requirements of a normative type and its normative ancestors (the
    nearest definition wins; Docker's host over Container.Application's)."""
    line: list[str] = []
    name: str | None = normative_name(type_name)
    while name is not None and name not in line:
        line.append(name)
        name = NORMATIVE_PROPERTIES.get(name, (None,))[0]
    found: dict[str, dict[str, Any]] = {}
    for ancestor in reversed(line):
        for req, definition in NORMATIVE_REQUIRED_REQUIREMENTS.get(ancestor, {}).items():
            found[req] = {**found.get(req, {}), **definition}
    return found


def _all_connected(requirements: Any, templates: Mapping[str, Any]) -> bool:
    """Whether each requirement the template writes names a template (one that names a
    type, or nothing, is left for matching)."""
    for entry in requirements if is_list(requirements) else ():
        for value in entry.values() if is_map(entry) else ():
            node = value.get("node") if is_map(value) else value
            if not node or (isinstance(node, str) and node not in templates):
                return False
    return True


def type_candidates(source: str, node_type: str, node_filter: Any, templates: Mapping[str, Any],
                    node_types: dict[str, Any], definition: Mapping[str, Any] | None = None,
                    targets: TargetTypes | None = None) -> list[str]:
    """The templates a requirement of ``source`` naming ``node_type`` could connect to, as
    :func:`_match` looks for them: the others of that type its ``node_filter`` (None: no
    filter) passes and that offer a capability it may connect to (with ``definition`` and
    ``targets``: the ``capability`` it names, its relationship's ``valid_target_types``, as
    Unfurl 1.2.0's solver asks), those with Unfurl's ``default`` directive only when no
    other does."""
    found: list[str] = []
    fallback: list[str] = []
    offers = _offers(definition, node_types, targets) if definition is not None and \
        targets is not None else None
    for name, body in templates.items():
        if name == source or not is_map(body):
            continue
        chain = lineage(body.get("type") if isinstance(body.get("type"), str) else None,
                        node_types)
        if node_type not in chain or (node_filter is not None and not _passes(
                node_filter, body, chain, node_types)) or (offers and not offers(body)):
            continue
        (fallback if "default" in _directives(body) else found).append(str(name))
    return found or fallback


def _offers(definition: Mapping[str, Any], node_types: dict[str, Any],
            targets: TargetTypes) -> Callable[[Mapping[str, Any]], bool] | None:
    """Whether a candidate has a capability a requirement may connect to: the one it names
    (by name or type), of a type its relationship's ``valid_target_types`` allows; None when
    it asks for neither."""
    wanted = definition.get("capability")
    valid = targets.of(definition)
    if not isinstance(wanted, str) and not valid:
        return None

    def offers(body: Mapping[str, Any]) -> bool:
        found = capabilities_of(body.get("type"), node_types)
        types = [t for n, t in found.items() if not isinstance(wanted, str) or n == wanted
                 or targets.is_a(t, wanted)]
        return any(not valid or any(targets.is_a(t, v) for v in valid) for t in types)
    return offers


def _entries(value: Any) -> list[dict[str, Any]]:
    return [
        {str(k): v if is_map(v) else {"node": v} for k, v in entry.items()}
        for entry in (value if is_list(value) else ())
        if is_map(entry)
    ]


def _match(
    source: str,
    definition: dict[str, Any],
    templates: Any,
    node_types: dict[str, Any],
    lineages: dict[Any, list[str]],
    capabilities: dict[Any, dict[str, Any]],
    capability_is_a: Callable[[Any, str], bool] = is_a,
    targets: TargetTypes | None = None,
) -> str | None:
    """The template that satisfies a requirement left for matching: the node it names, else
    the first other template with the wanted type and capability that its ``node_filter``
    does not refuse (load/node_filters.py); one with Unfurl's ``default`` directive only
    when no other matches. As Unfurl 1.2.0's solver, an optional requirement (``occurrences:
    [0, ...]``) is matched only to a template it names, never searched for."""
    node, wanted = definition.get("node"), definition.get("capability")
    if isinstance(node, str) and node in templates:
        return node
    if is_optional(definition):
        return None
    if isinstance(node, str):  # a type: the first of the templates it may connect to
        found = type_candidates(source, node, definition.get("node_filter"), templates,
                                node_types, definition, targets)
        return found[0] if found else None
    fallback: str | None = None  # a template with Unfurl's ``default`` directive
    for name, body in templates.items():
        if name == source or not is_map(body):
            continue
        type_name = body.get("type") if isinstance(body.get("type"), str) else None
        if type_name not in lineages:
            lineages[type_name] = lineage(type_name, node_types)
        if wanted is None:
            continue
        else:
            if type_name not in capabilities:
                capabilities[type_name] = capabilities_of(type_name, node_types)
            matched = matching_capability(capabilities[type_name], wanted) is not None or any(
                capability_is_a(c, w) for c in capabilities[type_name].values()
                for w in (wanted if isinstance(wanted, tuple) else ()))
        if not matched or ("node_filter" in definition and not _passes(
                definition["node_filter"], body, lineages[type_name], node_types)):
            continue
        if "default" not in _directives(body):
            return str(name)
        fallback = fallback or str(name)
    return fallback


class TargetTypes:
    """The capability types a relationship type may target (``valid_target_types``, the
    nearest in its lineage), and capability types' lineage through the document's own
    ``capability_types``."""

    def __init__(self, service: Mapping[str, Any]) -> None:
        self.relationship_types = {**split_types(service.get("types"))[1],
                                   **as_mapping(service.get("relationship_types"))}
        topology = as_mapping(service.get("topology_template"))
        self.relationship_templates = as_mapping(topology.get("relationship_templates"))
        self.capability_types = as_mapping(service.get("capability_types"))

    def of(self, definition: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The capability types a requirement's relationship may target; None when it
        declares none (then nothing is matched, as before)."""
        relationship: YAMLValue = definition.get("relationship")
        current: Any = relationship.get("type") if isinstance(relationship, Mapping) \
            else relationship
        if isinstance(current, str) and current in self.relationship_templates:
            current = as_mapping(self.relationship_templates[current]).get("type")
        seen: set[str] = set()
        while isinstance(current, str) and current not in seen:
            seen.add(current)
            body = as_mapping(self.relationship_types.get(current))
            valid: YAMLValue = body.get("valid_target_types") if body else \
                NORMATIVE_RELATIONSHIPS.get(current, ((), ()))[1]
            if isinstance(valid, list | tuple) and valid:
                return tuple(str(v) for v in valid)
            current = body.get("derived_from") if body else next(
                iter(NORMATIVE_RELATIONSHIPS.get(current, ((), ()))[0]), None)
        return None

    def is_a(self, capability_type: Any, wanted: str) -> bool:
        """Through the document's capability types, then TOSCA's and Unfurl's own."""
        return any(is_a(name, wanted) for name in ancestry(capability_type, lambda t: parents(
            as_mapping(self.capability_types.get(t)).get("derived_from"))))


def _passes(node_filter: Any, body: Mapping[str, Any], chain: list[str],
            node_types: dict[str, Any]) -> bool:
    """Whether a candidate template passes a requirement's ``node_filter``: its properties
    with its types' defaults, and the properties its capabilities are given."""
    from unfurl_lite.load import node_filters  # start-up: only a requirement with a filter

    properties: dict[str, Any] = {}
    for ancestor in reversed(chain):
        for name, definition in as_mapping(as_mapping(node_types.get(ancestor)).get(
                "properties")).items():
            if is_map(definition) and "default" in definition:
                properties[str(name)] = definition["default"]
    properties.update(as_mapping(body.get("properties")))
    given = as_mapping(body.get("capabilities"))

    def capability(name: str) -> Mapping[str, Any] | None:
        if name not in given and name not in capabilities_of(chain[0], node_types):
            return None
        return as_mapping(as_mapping(given.get(name)).get("properties"))

    return node_filters.matches(node_filter, properties, capability)


def _directives(body: dict[str, Any]) -> list[Any]:
    directives = body.get("directives")
    return directives if is_list(directives) else []


def written_requirements(requirements: Any) -> dict[str, tuple[int, Any]]:
    """name -> (index, value) of each requirement a template writes itself (the first of a
    name written twice)."""
    written: dict[str, tuple[int, Any]] = {}
    for index, entry in enumerate(requirements if is_list(requirements) else ()):
        for name, value in entry.items() if is_map(entry) else ():
            written.setdefault(str(name), (index, value))
    return written


def is_default(body: Any) -> bool:
    """Whether a template has Unfurl's ``default`` directive (tosca-parser only warns about
    a requirement of one that finds no template)."""
    directives = as_mapping(body).get("directives")
    return is_list(directives) and "default" in directives


def is_optional(definition: dict[str, Any]) -> bool:
    occurrences = definition.get("occurrences")
    return bool(definition.get("optional")) or (
        is_list(occurrences) and bool(occurrences) and occurrences[0] == 0
    )
