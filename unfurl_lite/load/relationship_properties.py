"""The properties of a relationship template, named (``relationship_templates``) or written
inline in a requirement, judged against its relationship type as Unfurl 1.2.0 judges them
when it loads the service template (tests/data/unfurl120/53-relationship-properties): one
the type does not declare ('"properties" of template "rt" contains unknown field "q".'; an
inline relationship is named after its requirement) and a required one left out ('"properties"
of template "rt" is missing required field "['p']".') are refused. Unlike a node template's
undeclared property, which Unfurl drops, a relationship's is an error there.

A relationship whose type, or an ancestor of it, is not known here in full (Unfurl's own
ConnectsTo kinds, Cloudify's) is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    did_you_mean,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.load.type_checks import relationships_of
from unfurl_lite.model.lineage import parents
from unfurl_lite.model.normative import NORMATIVE_RELATIONSHIP_PROPERTIES, NORMATIVE_RELATIONSHIPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PREFIX = "tosca.relationships."


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each relationship's undeclared property and missing required one, in tosca-parser's
    words, at the relationship."""
    service = get_section(doc, SERVICE)
    types = {**mapping(service.get("types")), **mapping(service.get("relationship_types"))}
    found: dict[str, dict[str, bool] | None] = {}
    owners: list[tuple[tuple[Any, ...], str, Any]] = [
        ((*TOPOLOGY, "relationship_templates", name), str(name), body)
        for name, body in get_section(doc, (*TOPOLOGY, "relationship_templates")).items()]
    for template, body in get_section(doc, (*TOPOLOGY, "node_templates")).items():
        owners.extend(((*TOPOLOGY, "node_templates", template, "requirements", index, req,
                        "relationship"), req, relationship)
                      for index, req, relationship in relationships_of(body))
    for path, name, body in owners:
        type_name = mapping(body).get("type")
        if not isinstance(type_name, str):
            continue
        if type_name not in found:
            found[type_name] = _declared(type_name, types)
        declared = found[type_name]
        given = mapping(body).get("properties")
        if declared is None or not isinstance(given, dict | None):
            continue
        for prop in given or {}:
            if prop not in declared:
                yield problem_at(
                    doc, (*path, "properties", prop), file,
                    f'"properties" of template "{name}" contains unknown field "{prop}".',
                    did_you_mean(str(prop), declared) or (
                        f"its type {type_name!r} declares "
                        f"{', '.join(sorted(map(str, declared))) or 'no properties'}; "
                        "declare it in the relationship type"))
        missing = [p for p, required in declared.items() if required and p not in (given or {})]
        if missing:
            yield problem_at(
                doc, (*path, "properties") if given else path, file,
                f'"properties" of template "{name}" is missing required field "{missing}".',
                f"give it a value (`properties: {{{missing[0]}: ...}}`), or give its "
                "definition a `default` or `required: false`")


def _declared(type_name: str, types: dict[str, Any]) -> dict[str, bool] | None:
    """Property -> required, for a relationship type and its ancestors (the nearest
    definition wins); None when one of them is not known here."""
    declared: dict[str, bool] = {}
    pending, seen = [type_name], set()
    order: list[str] = []
    while pending:
        name = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name in types:
            order.append(name)
            pending.extend(parents(mapping(types[name]).get("derived_from")))
            continue
        full = name if "." in name else _PREFIX + name.removeprefix("tosca:")
        if full not in NORMATIVE_RELATIONSHIPS or not full.startswith(_PREFIX):
            return None
        order.append(full)
        pending.extend(NORMATIVE_RELATIONSHIPS[full][0])
    for name in reversed(order):
        if name in types:
            for prop, definition in mapping(mapping(types[name]).get("properties")).items():
                definition = mapping(definition)
                declared[str(prop)] = definition.get("required", True) is not False \
                    and "default" not in definition
        else:
            declared.update(NORMATIVE_RELATIONSHIP_PROPERTIES.get(name, {}))
    return declared
