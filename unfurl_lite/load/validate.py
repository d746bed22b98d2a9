"""Is a merged ensemble something we can plan from? Every problem at once, located.

Two layers: the JSON Schema says what shape each section has
(:mod:`~unfurl_lite.load.schema_problems`); the semantic checks then look across
sections, which a schema cannot: types and requirements
(:mod:`~unfurl_lite.load.type_checks`), interfaces and operations
(:mod:`~unfurl_lite.load.interface_checks`), and what is refused by name
(:mod:`~unfurl_lite.load.unsupported`). All report into :class:`Problem` so the user gets
one list, in file order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from unfurl_lite.errors import PathError, Problem
from unfurl_lite.load import origins, structure, workflows
from unfurl_lite.load.interface_checks import (
    _undeclared_interfaces,
    _unknown_operations,
    _untyped_type_interfaces,
    owners_found_once,
)
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.load.schema_problems import schema_problems
from unfurl_lite.load.type_checks import (
    _artifact_properties,
    _host_chains,
    _requirement_cycles,
    _requirement_targets,
    _topology_root,
    _type_cycles,
    _unknown_types,
    _unmatched_requirements,
)
from unfurl_lite.load.unsupported import (
    _cloudify_unsupported,
    _unsupported_implementations,
    _unsupported_structure,
)
from unfurl_lite.model.lineage import parents
from unfurl_lite.security.paths import jobs_log_path, protected_part

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def check(doc: Any, file: str) -> list[Problem]:
    """Every problem in a merged ensemble document, sorted by file and line; [] if valid."""
    semantic = semantic_problems(doc, file)
    named = {(p.line, p.column) for p in semantic if p.message.startswith("Cloudify's")}
    problems = [p for p in schema_problems(doc, file) if (p.line, p.column) not in named]
    problems += semantic
    return sorted(problems, key=lambda p: (p.file or "", p.line or 0, p.column or 0))


def semantic_problems(doc: Any, file: str) -> list[Problem]:
    problems: list[Problem] = list(_unsupported_structure(doc, file))
    problems += _blueprint_problems(doc, file)
    view = _with_types_section(doc)
    with owners_found_once(view):
        for check_one in (_unknown_types, _type_cycles, _requirement_targets,
                          _unmatched_requirements, _requirement_cycles, _host_chains,
                          _undeclared_interfaces, _untyped_type_interfaces,
                          _unknown_operations, _unsupported_implementations, _duplicate_templates,
                          _workflows, _cloudify_unsupported, _unknown_filters, _topology_root,
                          _jobs_log, _values, _property_references, _artifact_properties,
                          _required_properties, _function_references, _node_filters,
                          _target_capabilities, _undefined_types, _capability_assignments,
                          _relationship_properties, _outputs):
            problems += check_one(view, file)
    return problems


def _blueprint_problems(doc: Any, file: str) -> Iterator[Problem]:
    spec = mapping(mapping(doc).get("spec"))
    if not (spec.get("deployment_blueprints") or mapping(doc).get("environment")
            or mapping(spec.get("service_template")).get("deployment_blueprints")):
        return
    from unfurl_lite.load import blueprints  # start-up: only an ensemble that declares them

    yield from blueprints.problems(doc, file)


def _jobs_log(doc: Any, file: str) -> Iterator[Problem]:
    """``jobsLog:`` that names git's directory or a credential store, refused with the
    words of :func:`~unfurl_lite.security.paths.jobs_log_path`, which resolves it for jobs
    and readers (where symlinks lead, and whether it is a directory, is the file system's
    to say: checked when a job starts, not cached with the text's verdict)."""
    value = mapping(doc).get("jobsLog")
    if not isinstance(value, str) or protected_part(value) is None:
        return
    try:
        jobs_log_path(Path(file).parent, value, allow_outside=True)
    except PathError as exc:
        yield problem_at(doc, ("jobsLog",), file, exc.message, exc.hint)


def _values(doc: Any, file: str) -> Iterator[Problem]:
    """Values against their types, constraints and data types: only a document that
    declares a typed property or input has such checks (a cold plan of one that does not
    skips the module)."""
    service = get_section(doc, SERVICE)
    declared = ("type", "constraints", "entry_schema", "key_schema")
    if not service.get("data_types") and not mapping(service.get("types")) and not any(
            word in t for word in _TYPED for t in _template_types(doc)) and not any(
            key in mapping(d) for key in declared
            for body in [*mapping(service.get("node_types")).values(),
                         {"properties": get_section(doc, (*TOPOLOGY, "inputs"))}]
            for d in mapping(mapping(body).get("properties")).values()) and not any(
            mapping(body).get("capabilities")
            for body in get_section(doc, (*TOPOLOGY, "node_templates")).values()):
        return iter(())
    from unfurl_lite.load import value_checks  # start-up: keeps load.value_checks off `plan`

    return value_checks.value_problems(doc, file)


def _outputs(doc: Any, file: str) -> Iterator[Problem]:
    """An output without a ``value``, or whose static value its ``type`` refuses (the
    module is loaded only for a document with such an output)."""
    outputs = get_section(doc, (*TOPOLOGY, "outputs"))
    if all(isinstance(d, dict) and "value" in d and "type" not in d for d in outputs.values()):
        return iter(())
    from unfurl_lite.load import value_checks  # start-up: as _values

    return value_checks.output_problems(doc, file)


def _required_properties(doc: Any, file: str) -> Iterator[Problem]:
    """A template missing a property its type requires (the module is loaded only for a
    document that declares node types or uses a normative type that requires one)."""
    service = get_section(doc, SERVICE)
    if not service.get("node_types") and not mapping(service.get("types")) and not any(
            word in t for word in _REQUIRING for t in _template_types(doc)):
        return iter(())
    from unfurl_lite.load import required_properties  # start-up: only where one may be

    return required_properties.problems(doc, file)


def _template_types(doc: Any) -> set[str]:
    """The types the node templates name (each once: 10,000 templates, a few types), and
    the parents the document's node types name: a template of ``Mine``, derived from a
    Database, has a Database's typed properties."""
    types = (mapping(b).get("type") for b in get_section(doc, (*TOPOLOGY, "node_templates"))
             .values())
    named = {t for t in types if isinstance(t, str)}
    for body in get_section(doc, (*SERVICE, "node_types")).values():
        named.update(parents(mapping(body).get("derived_from")))
    return named


#: words in the names of the normative types whose properties are typed
#: (model/normative.py's NORMATIVE_PROPERTY_TYPES): a template of one has values to judge
_TYPED = ("Storage", "SoftwareComponent", "DBMS", "Database", "WebApplication", "network.",
          "ObjectStorage", "LoadBalancer", "Repository", "WebServer", "Container.Runtime",
          "Network", "Port", "FloatingIP")

#: words in the names of the normative types that require a property (Storage, FloatingIP)
_REQUIRING = ("Storage", "FloatingIP")


def _property_references(doc: Any, file: str) -> Iterator[Problem]:
    """``get_property`` of a property a template's type does not declare: only a document
    that declares node types can have one judged (a cold plan of one that does not skips
    the module)."""
    service = get_section(doc, SERVICE)
    if not service.get("node_types") and not mapping(service.get("types")):
        return iter(())
    from unfurl_lite.load import property_refs  # start-up: only for a document with types

    return property_refs.problems(doc, file)


def _function_references(doc: Any, file: str) -> Iterator[Problem]:
    """``get_attribute``/``get_property`` of what a template does not have, refused as
    Unfurl refuses them at load."""
    from unfurl_lite.load import expression_checks  # start-up: as _unknown_filters

    if expression_checks.text_lacks("get_attribute", "get_property"):
        return iter(())  # the document's text spells neither: nothing to judge
    # start-up: keeps load.function_refs off `plan` of a document that has no such function
    from unfurl_lite.load import function_refs, reference_chains, relationship_refs

    return itertools.chain(function_refs.problems(doc, file),
                           relationship_refs.problems(doc, file),
                           reference_chains.problems(doc, file))


def _relationship_properties(doc: Any, file: str) -> Iterator[Problem]:
    """A relationship's property its type does not declare, or a required one it leaves
    out (only a document that spells `relationship` can have either)."""
    from unfurl_lite.load import expression_checks  # start-up: as _unknown_filters

    if expression_checks.text_lacks("relationship"):
        return iter(())
    # start-up: only a document with relationships
    from unfurl_lite.load import relationship_properties

    return relationship_properties.problems(doc, file)


def _capability_assignments(doc: Any, file: str) -> Iterator[Problem]:
    """A template's capability, or capability property, its types do not declare (only
    a document whose templates assign capabilities can have one)."""
    from unfurl_lite.load import expression_checks  # start-up: as _unknown_filters

    if expression_checks.text_lacks("capabilities") or not any(
            isinstance(body, dict) and body.get("capabilities")
            for body in get_section(doc, (*TOPOLOGY, "node_templates")).values()):
        return iter(())
    # start-up: only a document whose templates assign capabilities
    from unfurl_lite.load import capability_assignments

    return capability_assignments.problems(doc, file)


def _undefined_types(doc: Any, file: str) -> Iterator[Problem]:
    """A relationship, capability, data or interface type a template uses that nothing
    defines (only a document that declares types, relationship templates, typed inputs or
    a requirement's relationship can use one)."""
    from unfurl_lite.load import expression_checks  # start-up: as _unknown_filters

    service = get_section(doc, SERVICE)
    if not (service.get("node_types") or service.get("types") or service.get("data_types")
            or get_section(doc, (*TOPOLOGY, "relationship_templates"))
            or get_section(doc, (*TOPOLOGY, "inputs"))) and (
            expression_checks.text_lacks("relationship") or not any(
                "relationship" in mapping(item.get(key))
                for body in get_section(doc, (*TOPOLOGY, "node_templates")).values()
                for item in (mapping(body).get("requirements") or ())
                if isinstance(item, dict) for key in item)):
        return iter(())
    from unfurl_lite.load import undefined_types  # start-up: only a document that can use one

    return undefined_types.problems(doc, file)


def _target_capabilities(doc: Any, file: str) -> Iterator[Problem]:
    """A requirement connected to a template without a capability it may connect to."""
    if not any(mapping(body).get("requirements") for body in get_section(
            doc, (*SERVICE, "topology_template", "node_templates")).values()):
        return iter(())
    # start-up: keeps load.target_capabilities off `plan` of a document without requirements
    from unfurl_lite.load import target_capabilities

    return target_capabilities.problems(doc, file)


def _node_filters(doc: Any, file: str) -> Iterator[Problem]:
    """A requirement's ``node_filter`` Unfurl refuses at load, or with a key not built
    here."""
    from unfurl_lite.load import expression_checks  # start-up: as _unknown_filters

    if expression_checks.text_lacks("node_filter"):
        return iter(())
    # start-up: keeps load.node_filter_checks off `plan` of a document without a node_filter
    from unfurl_lite.load import node_filter_checks

    return node_filter_checks.problems(doc, file)


def _unknown_filters(doc: Any, file: str) -> Iterator[Problem]:
    # start-up: keeps load.expression_checks off validate's import until _unknown_filters() runs
    from unfurl_lite.load import expression_checks

    return expression_checks.problems(doc, file)


def _with_types_section(doc: Any) -> Any:
    """``doc`` with the node and relationship types of Unfurl's ``types:`` section seen as
    if declared under ``node_types`` and ``relationship_types`` (a shallow view)."""
    service = get_section(doc, SERVICE)
    if not mapping(service.get("types")):
        return doc
    nodes, relationships = structure.split_types(service["types"])
    view_service = dict(service)
    view_service["node_types"] = {**nodes, **mapping(service.get("node_types"))}
    view_service["relationship_types"] = {
        **relationships, **mapping(service.get("relationship_types"))
    }
    return {**doc, "spec": {**mapping(doc.get("spec")), "service_template": view_service}}


def _workflows(doc: Any, file: str) -> Iterator[Problem]:
    return workflows.problems(doc, file)


def _duplicate_templates(doc: Any, file: str) -> Iterator[Problem]:
    """Two files that each define a template in full (with a type) clash; an override that
    only changes some keys of an included template is what merging is for."""
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    if not origins.has_merged(templates):  # plain data (the fast road): nothing merged
        return
    for name in templates:
        full = [d for d in origins.merged_from(templates, name) if "type" in mapping(d.value)]
        if len({d.file for d in full}) > 1:
            places = ", ".join(f"{d.file}:{d.line}" for d in full)
            yield problem_at(doc, (*TOPOLOGY, "node_templates", name), file,
                             f"node template {name!r} is defined more than once ({places})",
                             "rename one, or drop `type` from the one meant as an override")
