"""``get_attribute`` and ``get_property`` in the relationships requirements use, refused as
Unfurl 1.2.0 refuses them when it loads the service template: tosca-parser validates the
functions of each relationship a requirement makes (a relationship template it names, a
relationship type it names, one written inline, or one its node type's declaration gives),
never of a relationship template no requirement uses. Each rule was probed with Unfurl
1.2.0 (tests/load/test_relationship_refs.py re-asks it):

- in the inputs of the relationship's operations, its type's (and its ancestors') with its
  own: ``TARGET`` and ``SOURCE`` are the requirement's target and source, judged as in a node
  template (load/function_refs.py; ``get_property`` of two arguments as
  load/property_refs.py judges it); ``SELF`` is the relationship: ``get_attribute`` of it
  is refused ('Node template "SELF" was not found'), ``get_property`` of a property its
  type does not declare and it does not set is refused ('get_property function referencing
  property "x" not found in node template "db"', the relationship's name: its requirement's,
  or the relationship template's); a template named is judged as anywhere else;
- in the relationship's own ``properties``, ``SELF``, ``TARGET`` and ``SOURCE`` make Unfurl
  1.2.0 fail to load the ensemble ("'CommentedMap' object has no attribute
  'type_definition'"): refused by name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from unfurl_lite.errors import Problem
from unfurl_lite.load.function_refs import Judge, function_call, operation_inputs
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.load.property_refs import HINT, message, undeclared_by
from unfurl_lite.load.structure import implied_requirements, written_requirements
from unfurl_lite.load.type_tables import Types
from unfurl_lite.model.lineage import ancestry, lineage, parents
from unfurl_lite.model.normative import NORMATIVE_RELATIONSHIPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the properties TOSCA's normative relationship types declare (their lineage:
#: model/normative.NORMATIVE_RELATIONSHIPS; Unfurl's own types are not judged here)
_PROPERTIES: dict[str, tuple[str, ...]] = {
    "tosca.relationships.ConnectsTo": ("credential",),
    "tosca.relationships.AttachesTo": ("location", "device"),
}
_ENDS = ("SELF", "TARGET", "SOURCE")


class _Use:
    """A relationship a requirement makes: who makes it, what it connects, what it is:
    its name as tosca-parser names it (the relationship template's, else the
    requirement's), its type, the path of its own body (a relationship template, an inline
    mapping) and that body ({} for a relationship type named). A plain class: typing's
    NamedTuple would bring typing to a cold plan's start."""

    __slots__ = ("body", "name", "path", "source", "target", "type_name")

    def __init__(self, source: str, target: str, name: str, type_name: Any,
                 path: tuple[Any, ...], body: Mapping[str, Any]) -> None:
        self.source, self.target, self.name = source, target, name
        self.type_name, self.path, self.body = type_name, path, body


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each function Unfurl 1.2.0 refuses in a relationship a requirement uses, once per
    place."""
    service = get_section(doc, SERVICE)
    templates = mapping(get_section(doc, TOPOLOGY).get("node_templates"))
    judge = Judge(doc, templates, Types(doc))
    node_types = {**mapping(service.get("types")), **mapping(service.get("node_types"))}
    relationship_types = mapping(service.get("relationship_types"))
    seen: set[tuple[tuple[Any, ...], str]] = set()
    for use in _uses(service, templates, node_types):
        chain = ancestry(use.type_name, lambda t: parents(
            mapping(relationship_types.get(t)).get("derived_from"))) if isinstance(
            use.type_name, str) else []
        for path, found in _judged(use, chain, relationship_types, judge, node_types):
            if (path, found[0]) not in seen:
                seen.add((path, found[0]))
                yield problem_at(doc, path, file, *found)


def _uses(service: Mapping[str, Any], templates: Mapping[str, Any],
          node_types: Mapping[str, Any]) -> Iterator[_Use]:
    """Each relationship a requirement makes, as tosca-parser makes them: for each
    requirement a template writes or its type declares (one its type declares only when a
    template matches it: else no relationship is made, and the job is refused as "missing
    requirements"), the relationship template it names, the relationship type it names, or
    the one written inline (where: the template's requirement, else the declaring type's)."""
    relationship_templates = mapping(mapping(service.get("topology_template")).get(
        "relationship_templates"))
    implied = implied_requirements(service)
    for name, body in templates.items():
        body = mapping(body)
        matched = {req: target for req, _, target in implied.get(str(name), ())}
        written = written_requirements(body.get("requirements"))
        declared = declared_requirements(body.get("type"), node_types)
        for req in dict.fromkeys([*written, *declared]):
            value = written[req][1] if req in written else None
            definition = {**declared.get(req, ((), {}))[1], **(
                value if isinstance(value, dict) else {} if value is None else {"node": value})}
            node = definition.get("node")
            target = node if isinstance(node, str) and node in templates else matched.get(req)
            if req not in written and target is None:
                continue  # no relationship is made ("missing requirements" at the job)
            relationship = definition.get("relationship")
            if isinstance(relationship, str) and relationship in relationship_templates:
                own = mapping(relationship_templates[relationship])
                yield _Use(str(name), target or "", relationship, own.get("type"),
                           (*TOPOLOGY, "relationship_templates", relationship), own)
            elif isinstance(relationship, str):
                yield _Use(str(name), target or "", req, relationship, (), {})
            elif isinstance(relationship, dict):
                path = (*TOPOLOGY, "node_templates", name, "requirements", written[req][0],
                        req, "relationship") if req in written and isinstance(
                        value, dict) and "relationship" in value else declared[req][0]
                yield _Use(str(name), target or "", req, relationship.get("type"), path,
                           relationship)


def declared_requirements(type_name: Any, node_types: Mapping[str, Any]) -> dict[
        str, tuple[tuple[Any, ...], dict[str, Any]]]:
    """requirement -> (where its relationship is written, its definition) of each
    requirement a node type declares, the nearest type's winning."""
    found: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    for owner in lineage(type_name if isinstance(type_name, str) else None, node_types):
        entries = mapping(node_types.get(owner)).get("requirements")
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            for req, value in mapping(entry).items():
                if str(req) not in found and isinstance(value, dict):
                    found[str(req)] = ((*SERVICE, "node_types", owner, "requirements", index,
                                        req, "relationship"), value)
    return found


def _judged(use: _Use, chain: list[str], relationship_types: Mapping[str, Any], judge: Judge,
            node_types: Mapping[str, Any]) -> Iterator[tuple[tuple[Any, ...],
                                                               tuple[str, str]]]:
    for prop, value in mapping(use.body.get("properties")).items():
        call = function_call(value)
        if call and call[1] and call[1][0] in _ENDS:
            yield (*use.path, "properties", prop), (
                f"{call[0]} of {call[1][0]} in a relationship's properties (property "
                f"{prop!r} of relationship {use.name!r}) is not supported: Unfurl 1.2.0 cannot "
                "load it (it fails with \"'CommentedMap' object has no attribute ...\")",
                "read it in the relationship's operations (their inputs), where SOURCE and "
                "TARGET are its ends, or name the template")
    sources: list[tuple[tuple[Any, ...], Mapping[str, Any]]] = [
        ((*SERVICE, "relationship_types", t), mapping(relationship_types[t]))
        for t in reversed(chain) if t in relationship_types]
    if use.body:
        sources.append((use.path, use.body))
    context = ("relationship", use.source, use.target, use.name)
    for path, value in operation_inputs(sources):
        call = function_call(value)
        if call is None:
            continue
        function, args = call
        if function == "get_property" and len(args) == 2 and isinstance(args[1], str):
            found = _property(use, chain, relationship_types, judge, node_types, path, args)
        else:
            found = judge.verdict(context, call)
        if found is not None:
            yield path, found


def _property(use: _Use, chain: list[str], relationship_types: Mapping[str, Any],
              judge: Judge, node_types: Mapping[str, Any], path: tuple[Any, ...],
              args: list[Any]) -> tuple[str, str] | None:
    """A two-argument ``get_property`` in a relationship's operation."""
    first, prop = args
    if first == "SELF":
        declared = _properties(chain, relationship_types) if chain else None
        if declared is None or prop in declared or prop in mapping(use.body.get(
                "properties")):
            return None
        return (f'get_property function referencing property "{prop}" not found in node '
                f'template "{use.name}" (SELF is a relationship of node template '
                f'"{use.source}": its type {use.type_name} does not declare it)',
                "declare it in the relationship's type, or set it on the relationship")
    name = {"TARGET": use.target, "SOURCE": use.source}.get(first, first)
    if not isinstance(name, str) or (first not in _ENDS and path[:len(TOPOLOGY)] == TOPOLOGY):
        return None  # a template named in the topology: load/property_refs.py judges it
    type_name = undeclared_by(dict(judge.templates), dict(node_types), name, prop)
    if type_name is None:
        return None
    return message(name, prop, type_name), HINT.format(name=prop, type=type_name)


def _properties(chain: list[str], relationship_types: Mapping[str, Any]) -> set[str] | None:
    """The properties a relationship type and its ancestors declare; None when one of them
    is not known here."""
    found: set[str] = set()
    for type_name in chain:
        if type_name in relationship_types:
            found.update(mapping(mapping(relationship_types[type_name]).get("properties")))
            continue
        full: str | None = type_name.replace("tosca:", "tosca.relationships.") if \
            type_name.startswith("tosca:") or "." in type_name \
            else f"tosca.relationships.{type_name}"
        while full is not None:
            if not full.startswith("tosca.") or full not in NORMATIVE_RELATIONSHIPS:
                return None
            found.update(_PROPERTIES.get(full, ()))
            full = next(iter(NORMATIVE_RELATIONSHIPS[full][0]), None)
    return found
