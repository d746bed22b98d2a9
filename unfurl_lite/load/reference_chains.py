"""Chains of ``get_property`` links (each property a template has reading the next) that
Unfurl 1.2.0 cannot load: tosca-parser resolves each link inside the one reading it when it
loads the service template, so a loop of links, or a chain of more than about 240 links,
ends its load with "maximum recursion depth exceeded" (measured: 229 links deploy; 241
failed to load for one deploy and rendered for another; 249 fail `validate`; a loop of
three fails both). Refused at validate,
at the property where the loop or the longest chain starts; before, such a document passed
validate and failed at deploy's render ("expression nested too deeply").

Only what tosca-parser follows at load: a property whose value *is* a two-argument
``get_property`` (the template's own, or its type's ``default``) of ``SELF`` or of a node
template by name. A chain through Jinja or ``eval`` is read when the job renders it, as in
Unfurl, and fails there when too deep.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.model.lineage import lineage

#: the most links a chain may have: Unfurl 1.2.0 deploys 229, cannot load 241
MAX_REFERENCE_CHAIN = 230

_Link = tuple[str, str]  # (template, property)


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """The loops of links, and the chains longer than MAX_REFERENCE_CHAIN, once each."""
    templates = mapping(get_section(doc, TOPOLOGY).get("node_templates"))
    service = get_section(doc, SERVICE)
    node_types = {**mapping(service.get("types")), **mapping(service.get("node_types"))}
    links = _links(templates, node_types)
    if len(links) <= 1:
        return
    for start, message, hint in _verdicts(links):
        template, prop = start
        given = prop in mapping(mapping(templates.get(template)).get("properties"))
        path = (*TOPOLOGY, "node_templates", template) + (("properties", prop) if given
                                                           else ())
        yield problem_at(doc, path, file, message, hint)


def _links(templates: Mapping[str, Any], node_types: Mapping[str, Any]) -> dict[_Link, _Link]:
    """(template, property) -> the (template, property) its value reads."""
    found: dict[_Link, _Link] = {}
    for name, body in templates.items():
        body = mapping(body)
        values: dict[str, Any] = {}
        for type_name in reversed(lineage(body.get("type"), node_types)):
            for prop, definition in mapping(mapping(node_types.get(type_name)).get(
                    "properties")).items():
                if isinstance(definition, dict) and "default" in definition:
                    values[str(prop)] = definition["default"]
        values.update((str(k), v) for k, v in mapping(body.get("properties")).items())
        for prop, value in values.items():
            args = value.get("get_property") if isinstance(value, dict) and len(
                value) == 1 else None
            if isinstance(args, list) and len(args) == 2 and all(
                    isinstance(a, str) for a in args):
                target = str(name) if args[0] == "SELF" else args[0]
                if target in templates:
                    found[(str(name), prop)] = (target, args[1])
    return found


def _verdicts(links: dict[_Link, _Link]) -> Iterator[tuple[_Link, str, str]]:
    """Each loop (once, where the walk first meets it) and each longest chain's start.
    Every link has one successor, so walking from each start, remembering how far each
    link is from the chain's end, is linear."""
    length: dict[_Link, int] = {}  # links to the chain's end; -1: on or into a loop
    for start in links:
        path: list[_Link] = []
        on_path: dict[_Link, int] = {}
        current: _Link | None = start
        while current is not None and current not in length and current not in on_path:
            on_path[current] = len(path)
            path.append(current)
            current = links.get(current)
        if current is not None and current in on_path:  # a loop closes here
            loop = path[on_path[current]:]
            for link in path:
                length[link] = -1
            shown = " -> ".join(f"{t}.{p}" for t, p in (*loop, loop[0]))
            yield (loop[0], f"get_property loop: {shown}: Unfurl 1.2.0 cannot load it "
                   "(\"maximum recursion depth exceeded\")",
                   "one of these properties must have a value of its own")
            continue
        for link in reversed(path):  # each one's successor is known by now
            after = links.get(link)
            count = 0 if after is None else length[after]
            length[link] = -1 if count < 0 else count + (after is not None)
    reads = set(links.values())
    for start, count in length.items():
        if count > MAX_REFERENCE_CHAIN and start not in reads:
            yield (start, f"a chain of {count} get_property links from {start[0]}.{start[1]} "
                   f"is longer than {MAX_REFERENCE_CHAIN}: Unfurl 1.2.0 cannot load it "
                   "(\"maximum recursion depth exceeded\")",
                   "read the far end directly, or give a property along the chain a value of "
                   "its own")
