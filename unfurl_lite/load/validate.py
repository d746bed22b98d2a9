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

import re
from collections.abc import Iterator
from typing import Any

from unfurl_lite.errors import Problem
from unfurl_lite.load import merge
from unfurl_lite.load.interface_checks import (
    _undeclared_interfaces,
    _unknown_operations,
    _untyped_type_interfaces,
)
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    did_you_mean,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.load.schema_problems import schema_problems
from unfurl_lite.load.type_checks import (
    _requirement_cycles,
    _requirement_targets,
    _topology_root,
    _type_cycles,
    _unknown_types,
)
from unfurl_lite.load.unsupported import (
    _cloudify_unsupported,
    _unsupported_implementations,
    _unsupported_structure,
)


def check(doc: Any, file: str) -> list[Problem]:
    """Every problem in a merged ensemble document, sorted by file and line; [] if valid."""
    semantic = semantic_problems(doc, file)
    named = {(p.line, p.column) for p in semantic if p.message.startswith("Cloudify's")}
    problems = [p for p in schema_problems(doc, file) if (p.line, p.column) not in named]
    problems += semantic
    return sorted(problems, key=lambda p: (p.file or "", p.line or 0, p.column or 0))


def semantic_problems(doc: Any, file: str) -> list[Problem]:
    problems: list[Problem] = list(_unsupported_structure(doc, file))
    view = _with_types_section(doc)
    for check_one in (_unknown_types, _type_cycles, _requirement_targets,
                      _requirement_cycles, _undeclared_interfaces, _untyped_type_interfaces,
                      _unknown_operations, _unsupported_implementations,
                      _duplicate_templates, _workflows, _cloudify_unsupported,
                      _unknown_filters, _topology_root):
        problems += check_one(view, file)
    return problems


def _any_filter(value: dict[Any, Any] | list[Any]) -> bool:
    """Whether any string in the value could use a filter (the quick pass: most specs
    have none, and a large spec is mostly plain strings)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        for child in (item.values() if isinstance(item, dict) else item):
            if isinstance(child, str):
                if ("|" in child or "lookup" in child or "query" in child) and "{" in child:
                    return True
            elif isinstance(child, dict | list):
                if isinstance(child, dict) and isinstance(child.get("eval"), str | dict):
                    return True  # an Unfurl query or eval expression
                stack.append(child)
    return False


def _eval_key(name: Any) -> bool:
    from unfurl_lite.expressions.expr import EVAL_KEYS, FUNCTIONS

    return name in EVAL_KEYS or name in FUNCTIONS


#: a quoted query expression piped to eval in a template: ``'::node::attr' | eval``
_QUERY_FILTERED = re.compile(r"""['"](\.?::[^'"]*|\.[^'"\s]*)['"]\s*\|\s*eval\b""")


def _unknown_filters(doc: Any, file: str) -> Iterator[Problem]:
    """A Jinja2 filter the template sandbox does not have would fail its task at run
    time; say so now, naming Unfurl's filters that are not supported here."""
    from unfurl_lite.expressions.expr import supported_query
    from unfurl_lite.expressions.filters import UNSUPPORTED
    from unfurl_lite.expressions.template_names import (
        known_filters,
        unknown_filters,
        unsupported_lookups,
    )

    spec = mapping(doc).get("spec")
    if not isinstance(spec, dict | list) or not _any_filter(spec):
        return
    stack: list[tuple[tuple[Any, ...], Any]] = [(("spec",), spec)]
    found: list[tuple[tuple[Any, ...], str]] = []
    lookups: list[tuple[tuple[Any, ...], str]] = []
    queries: list[tuple[tuple[Any, ...], str]] = []
    functions: list[tuple[tuple[Any, ...], str]] = []
    while stack:  # only containers are pushed: a large spec is mostly plain strings
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, str):
                if "|" in item and "{" in item:
                    found += (((*path, key), name) for name in
                              dict.fromkeys(unknown_filters(item)))
                    queries += (((*path, key), text) for text in _QUERY_FILTERED.findall(item)
                                if not supported_query(text))
                if "{" in item and ("lookup" in item or "query" in item):
                    lookups += (((*path, key), name) for name in
                                dict.fromkeys(unsupported_lookups(item)))
            elif isinstance(item, dict | list):
                if isinstance(item, dict) and isinstance(item.get("eval"), str) \
                        and not supported_query(item["eval"]):
                    queries.append(((*path, key, "eval"), item["eval"]))
                if isinstance(item, dict) and isinstance(item.get("eval"), dict):
                    functions += (((*path, key, "eval", name), str(name))
                                  for name in item["eval"] if not _eval_key(name))
                stack.append(((*path, key), item))
    for path, text in queries:
        yield problem_at(
            doc, path, file, f"Unfurl's query expression {text!r} is not supported",
            "only '::node::attribute' is; use {get_attribute: [node, attribute]} or "
            "{get_property: [node, property]}")
    for path, name in functions:
        yield problem_at(
            doc, path, file, f"Unfurl's eval expression key {name!r} is not supported",
            "eval here knows get_env, sensitive, secret, file, get_input, template and the "
            "TOSCA functions (get_property, get_attribute, concat, join)")
    for path, name in found:
        message = (f"Unfurl's filter {name!r} is not supported" if name in UNSUPPORTED
                   else f"unknown filter {name!r}: not supported")
        hint = did_you_mean(name, sorted(known_filters())) or (
            "the filters here are Jinja2's built-ins and Unfurl's eval, ref, map_value, "
            "sensitive, abspath")
        yield problem_at(doc, path, file, message, hint)
    for path, name in lookups:
        yield problem_at(
            doc, path, file, f"Ansible's lookup plugin {name!r} is not supported",
            "only lookup('env', NAME) is (as get_env); read a project file with file('path')")


def _with_types_section(doc: Any) -> Any:
    """``doc`` with the node and relationship types of Unfurl's ``types:`` section seen as
    if declared under ``node_types`` and ``relationship_types`` (a shallow view)."""
    from unfurl_lite.load import structure

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
    from unfurl_lite.load import workflows

    return workflows.problems(doc, file)


def _duplicate_templates(doc: Any, file: str) -> Iterator[Problem]:
    """Two files that each define a template in full (with a type) clash; an override that
    only changes some keys of an included template is what merging is for."""
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    for name in templates:
        full = [d for d in merge.merged_from(templates, name) if "type" in mapping(d.value)]
        if len({d.file for d in full}) > 1:
            places = ", ".join(f"{d.file}:{d.line}" for d in full)
            yield problem_at(doc, (*TOPOLOGY, "node_templates", name), file,
                             f"node template {name!r} is defined more than once ({places})",
                             "rename one, or drop `type` from the one meant as an override")
