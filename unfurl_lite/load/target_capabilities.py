"""A requirement connected to a template that has no capability it may connect to, refused
as tosca-parser refuses it when Unfurl 1.2.0 loads the service template
(``RelationshipTemplate.get_matching_capabilities``): the target's capabilities that the
requirement's ``capability`` names (by name, else by type), then those of a type its
relationship's ``valid_target_types`` allows (``tosca.relationships.ConnectsTo``: an
Endpoint). None left: 'No matching capability "tosca.capabilities.Compute" found on target
node "db" with capabilities ['feature'] for requirement "host" of node "app".' or 'No
capability with a matching target type found on target node "db" for requirement "db" of
node "app".' (tests/load/test_target_capabilities.py, each probe run with Unfurl 1.2.0).

Judged only where every type involved is known here: the target's lineage, the capability
types and their ancestors, the relationship type's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.load.relationship_refs import declared_requirements
from unfurl_lite.load.structure import TargetTypes
from unfurl_lite.load.type_tables import CAPABILITY_TYPES, Types
from unfurl_lite.model.lineage import parents
from unfurl_lite.model.normative import NORMATIVE_REQUIREMENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HINT = ("connect it to a template that has such a capability, or name the capability "
         "(`capability: NAME`) and a relationship type it may target")


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each requirement a template writes, naming a template, that finds no capability
    there."""
    service = get_section(doc, SERVICE)
    templates = mapping(get_section(doc, TOPOLOGY).get("node_templates"))
    types = Types(doc)
    targets = TargetTypes(service)
    node_types = {**mapping(service.get("types")), **mapping(service.get("node_types"))}
    #: (the target's type, the capability and the relationship asked for, whether the
    #: template names the capability) -> what is missing
    verdicts: dict[tuple[Any, Any, Any, bool], tuple[Any, list[str]] | None] = {}
    for name, body in templates.items():
        requirements = mapping(body).get("requirements")
        declared: dict[str, Any] | None = None
        for index, entry in enumerate(requirements if isinstance(requirements, list) else ()):
            for req, value in mapping(entry).items():
                node = value if isinstance(value, str) else mapping(value).get("node")
                if not isinstance(node, str) or node not in templates:
                    continue
                if declared is None:
                    declared = _declared(types, mapping(body).get("type"), node_types)
                definition = {**mapping(declared.get(str(req))), **(
                    value if isinstance(value, dict) else {"node": value})}
                named = isinstance(value, dict) and "capability" in value
                target = mapping(templates[node])
                key = (target.get("type"), definition.get("capability"),
                       definition.get("relationship"), named)
                try:  # (a layered topology asks the same of hundreds of links)
                    missing = verdicts[key]
                except KeyError:
                    missing = _missing(types, targets, target, definition, named)
                    verdicts[key] = missing
                except TypeError:  # an inline relationship (a mapping): asked each time
                    missing = _missing(types, targets, target, definition, named)
                if missing:
                    yield problem_at(doc, (*TOPOLOGY, "node_templates", name, "requirements",
                                           index), file, _message(str(name), str(req), node,
                                                                  *missing), _HINT)


def _declared(types: Types, type_name: Any, node_types: Mapping[str, Any]) -> dict[str, Any]:
    """requirement -> its definition, as the template's type and its ancestors declare it
    (the document's types nearer than TOSCA's)."""
    found: dict[str, Any] = {}
    for ancestor in reversed(types.chain(type_name or "tosca.nodes.Root") or ()):
        for req, (relationship, capability) in NORMATIVE_REQUIREMENTS.get(ancestor, {}).items():
            found[req] = {"capability": capability, "relationship": relationship}
    found.update({r: d for r, (_, d) in declared_requirements(type_name, node_types).items()})
    return found


def _missing(types: Types, targets: TargetTypes, body: Mapping[str, Any],
             definition: Mapping[str, Any], named: bool = True) -> tuple[Any, list[str]] | None:
    """None when the target's capabilities answer the requirement; else the capability
    it asked for (or None) and the target's capabilities. ``named``: the template itself
    names the capability; when only its type does, Unfurl 1.2.0 first looks for one its
    relationship's ``valid_target_types`` allow, and connects to that (a ``dependency``
    with a ConnectsTo relationship connects to a Database's ``database_endpoint``, not
    its ``feature``; tests/load/test_target_capabilities.py)."""
    chain = types.chain(body.get("type") or "tosca.nodes.Root")
    if chain is None:
        return None
    capabilities = types.capabilities(chain)
    wanted = definition.get("capability")
    valid = targets.of(definition)
    if valid and not named and wanted is not None:
        allowed = _derived(types, capabilities, valid)
        if allowed is None or allowed:
            return None
    matched: dict[str, Any] | None = capabilities
    if isinstance(wanted, str) and wanted in capabilities:
        matched = {wanted: capabilities[wanted]}
    elif isinstance(wanted, str):
        matched = _derived(types, capabilities, (wanted,))
    if matched and valid:
        matched = _derived(types, matched, valid)
    if matched is None or matched:
        return None
    return wanted, sorted(capabilities)


def _message(source: str, req: str, target: str, wanted: Any, capabilities: list[str]) -> str:
    if isinstance(wanted, str):
        return (f'No matching capability "{wanted}" found on target node "{target}" with '
                f"capabilities {capabilities} for requirement \"{req}\" of node "
                f'"{source}".')
    return (f'No capability with a matching target type found on target node "{target}" for '
            f'requirement "{req}" of node "{source}".')


def _derived(types: Types, capabilities: Mapping[str, Any] | None,
             wanted: tuple[str, ...]) -> dict[str, Any] | None:
    """The capabilities whose type derives from one of ``wanted``; None when a type on the
    way is not known here."""
    found: dict[str, Any] = {}
    for name, type_name in (capabilities or {}).items():
        derives = _derives(types, type_name, wanted)
        if derives is None:
            return None
        if derives:
            found[name] = type_name
    return found


def _derives(types: Types, type_name: Any, wanted: tuple[str, ...]) -> bool | None:
    pending = [type_name]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if not isinstance(name, str):
            return None
        if name in wanted:
            return True
        if name in seen:
            continue
        seen.add(name)
        if name in types.capability_types:
            pending.extend(parents(mapping(types.capability_types[name]).get("derived_from")))
        elif name in CAPABILITY_TYPES:
            parent = CAPABILITY_TYPES[name][0]
            if parent:
                pending.append(parent)
        else:
            return None
    return False
