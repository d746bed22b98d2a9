"""A requirement's ``node_filter`` that Unfurl 1.2.0 refuses when it loads the service
template, refused at validate in its words (tests/load/test_node_filter_checks.py records
each probe's answer from Unfurl 1.2.0):

- a template's filter, as tosca-parser's ``_validate_nodefilter`` shapes it: ``properties``
  a list of one-key mappings, ``capabilities`` a list of one-key mappings whose bodies are
  filters of that shape;
- every filter a requirement is matched with (the template's, else its type's), as Unfurl's
  solver reads it: a condition is a mapping; a mapping of constraints holds exactly one
  clause, of TOSCA's operators (``eval``/``q`` aside); ``and``/``or``/``not``/``assert``
  are not read (the solver fails on them);
- the filter keys of Unfurl's solver not built here, ``match`` and ``requirements``,
  refused by name (load/node_filters.py would otherwise ignore them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.model.lineage import lineage

#: TOSCA's constraint operators (tosca-parser's Constraint.CONSTRAINTS)
OPERATORS = frozenset({
    "equal", "greater_than", "greater_or_equal", "less_than", "less_or_equal", "in_range",
    "valid_values", "length", "min_length", "max_length", "pattern", "schema",
})
_LOGICAL = frozenset({"and", "or", "not", "assert"})
_HINT_SHAPE = ("write the filter as TOSCA's node_filter: `properties:` a list of one-key "
               "conditions (`- port: 3306`, `- port: {in_range: [1, 9000]}`), `capabilities:` "
               "a list of `- NAME: {properties: [...]}`")
_HINT_CLAUSE = ("one clause per condition: `- port: {greater_than: 1}` and `- port: "
                "{less_than: 9000}` as two list items; operators: " + ", ".join(sorted(OPERATORS)))

Found = tuple[tuple[Any, ...], str, str]


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each node_filter problem, once per place."""
    service = get_section(doc, SERVICE)
    seen: set[tuple[tuple[Any, ...], str]] = set()
    for name, body in mapping(get_section(doc, TOPOLOGY).get("node_templates")).items():
        for path, message, hint in _template_filters(str(name), mapping(body), service):
            if (path, message) not in seen:
                seen.add((path, message))
                yield problem_at(doc, path, file, message, hint)


def refused_requirements(name: str, body: Mapping[str, Any],
                         service: Mapping[str, Any]) -> set[str]:
    """The requirements of a template whose filter is refused above: Unfurl stops at the
    refusal, so whether such a requirement finds a template is never asked."""
    refused: set[str] = set()
    for path, _, _ in _template_filters(name, body, service):
        at = path.index("node_filter") if "node_filter" in path else 0
        refused.add(str(path[at - 1]))
    return refused


def _template_filters(name: str, body: Mapping[str, Any],
                      service: Mapping[str, Any]) -> Iterator[Found]:
    here = (*TOPOLOGY, "node_templates", name)
    own: dict[str, tuple[Any, tuple[Any, ...]]] = {}
    misshapen: set[str] = set()
    requirements = body.get("requirements")
    for index, entry in enumerate(requirements if isinstance(requirements, list) else ()):
        for req, spec in mapping(entry).items():
            if isinstance(spec, dict) and "node_filter" in spec:
                path = (*here, "requirements", index, req, "node_filter")
                own.setdefault(str(req), (spec["node_filter"], path))
                shape = list(_shape(spec["node_filter"], path, name)) \
                    if spec["node_filter"] else []
                if shape:  # tosca-parser stops there: the solver never reads it
                    misshapen.add(str(req))
                yield from shape
            elif isinstance(spec, dict | str):
                own.setdefault(str(req), (None, ()))
    for req, (node_filter, path) in _effective(own, body.get("type"), service).items():
        if node_filter and req not in misshapen:
            yield from _solver(node_filter, path, name, req)


def _effective(own: dict[str, tuple[Any, tuple[Any, ...]]], type_name: Any,
               service: Mapping[str, Any]) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    """Each requirement's filter as the solver reads it: the template's where its
    requirement says ``node_filter``, else the nearest type's that declares it."""
    node_types = mapping(service.get("node_types"))
    unfurl_types = mapping(service.get("types"))
    found = {req: value for req, value in own.items() if value[0] is not None}
    for type_name_ in lineage(type_name, node_types) if isinstance(type_name, str) else ():
        definitions = mapping(node_types.get(type_name_)).get("requirements")
        for index, entry in enumerate(definitions if isinstance(definitions, list) else ()):
            for req, spec in mapping(entry).items():
                if str(req) in found or (str(req) in own and own[str(req)][0] is not None):
                    continue
                if isinstance(spec, dict) and "node_filter" in spec:
                    section = "types" if unfurl_types.get(type_name_) is node_types[
                        type_name_] else "node_types"
                    found[str(req)] = (spec["node_filter"], (
                        *SERVICE, section, type_name_, "requirements", index, req,
                        "node_filter"))
    return found


def _shape(node_filter: Any, path: tuple[Any, ...], template: str) -> Iterator[Found]:
    """tosca-parser's ``_validate_nodefilter`` of a template's filter."""
    where = f'nodefilter on template "{template}"'
    found = list(_filter_shape(node_filter, path, where, template))
    yield from found
    if found or not isinstance(node_filter, dict):
        return
    capabilities = node_filter.get("capabilities")
    if not capabilities:
        return
    if not isinstance(capabilities, list):
        yield ((*path, "capabilities"), f'"capabilities" of nodefilter in template '
               f'"{template}" must be of type "list"', _HINT_SHAPE)
        return
    for index, entry in enumerate(capabilities):
        at = (*path, "capabilities", index)
        if not isinstance(entry, dict):
            yield (at, f'capabilities list item on nodefilter in template "{template}" must '
                   'be of type "dict"', _HINT_SHAPE)
        elif len(entry) != 1:
            yield (at, f'Invalid nodefilter on template "{template}": only one capability '
                   'name per list item', _HINT_SHAPE)
        else:
            ((cap, body),) = entry.items()
            yield from _filter_shape(body, (*at, cap), f'capability "{cap}" on nodefilter on '
                                     f'template "{template}"', template)


def _filter_shape(node_filter: Any, path: tuple[Any, ...], where: str,
                  template: str) -> Iterator[Found]:
    if not isinstance(node_filter, dict):
        yield path, f'{where} must be of type "dict"', _HINT_SHAPE
        return
    if "properties" not in node_filter:
        return
    conditions = node_filter["properties"]
    if not isinstance(conditions, list):
        yield (*path, "properties"), f'"properties" of {where} must be of type "list"', \
            _HINT_SHAPE
        return
    for index, condition in enumerate(conditions):
        at = (*path, "properties", index)
        if not isinstance(condition, dict):
            yield at, f'filter in {where} must be of type "dict"', _HINT_SHAPE
        elif len(condition) != 1:
            yield (at, f"Invalid {where}: only one property allowed per filter condition",
                   _HINT_SHAPE)


def _solver(node_filter: Any, path: tuple[Any, ...], template: str,
            requirement: str) -> Iterator[Found]:
    """What Unfurl's solver fails on when it reads the filter a requirement is matched
    with, and the keys it reads that are not built here."""
    context = f'(requirement "{requirement}" of node template "{template}")'
    if not isinstance(node_filter, dict):
        yield path, f"node_filter must be a mapping {context}", _HINT_SHAPE
        return
    for key in ("match", "requirements"):
        if node_filter.get(key):
            yield ((*path, key), f"node_filter `{key}` (Unfurl's solver) is not supported "
                   f"{context}", "choose the target with `node: TEMPLATE` or with "
                   "`properties`/`capabilities` conditions")
    yield from _conditions(node_filter.get("properties"), (*path, "properties"), context)
    capabilities = node_filter.get("capabilities")
    for index, entry in enumerate(capabilities if isinstance(capabilities, list) else ()):
        if isinstance(entry, dict) and len(entry) >= 1:
            cap, body = next(iter(entry.items()))
            if isinstance(body, dict):
                yield from _conditions(body.get("properties"),
                                       (*path, "capabilities", index, cap, "properties"),
                                       context)


def _conditions(conditions: Any, path: tuple[Any, ...], context: str) -> Iterator[Found]:
    if not conditions:
        return
    if not isinstance(conditions, list):
        yield path, f"node_filter conditions must be a list {context}", _HINT_SHAPE
        return
    for index, condition in enumerate(conditions):
        at = (*path, index)
        if not isinstance(condition, dict) or not condition:
            yield at, f"a node_filter condition must be a one-key mapping {context}", \
                _HINT_SHAPE
            continue
        key, value = next(iter(condition.items()))
        if key in _LOGICAL:
            yield ((*at, key), f"`{key}` in a node_filter condition is not supported: "
                   f"Unfurl 1.2.0's solver fails on it ('str' object has no attribute "
                   f"'items') {context}", "write one condition per property; a filter's "
                   "conditions must all hold")
        elif isinstance(value, dict) and "eval" not in value and "q" not in value:
            if len(value) != 1:
                yield ((*at, key), f"Invalid constraint: {value} (must be a map with one "
                       f"key) {context}", _HINT_CLAUSE)
            elif next(iter(value)) not in OPERATORS:
                yield ((*at, key, next(iter(value))), f'Invalid property '
                       f'"{next(iter(value))}" (not a constraint operator) {context}',
                       _HINT_CLAUSE)
