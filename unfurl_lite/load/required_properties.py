"""A node template that leaves out a property its type requires, refused as Unfurl 1.2.0
refuses it when it loads the service template (tosca-parser: '"properties" of template
"volume" is missing required field "['name']".'). A property is required unless its
definition says ``required: false`` or gives a ``default``; TOSCA's normative types
require a few (``tosca.nodes.Storage.BlockStorage``'s ``name``, unfurl-cases 273).

A template whose type derives from one not known here is not judged (its definitions
are not known).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.model.lineage import NORMATIVE_PROPERTIES, lineage, normative_name

#: the properties TOSCA's normative node types require with no default (Unfurl 1.2.0's
#: TOSCA 1.3 definitions; Unfurl's own types require none)
NORMATIVE_REQUIRED: dict[str, tuple[str, ...]] = {
    "tosca.nodes.Abstract.Storage": ("name",),
    "tosca.nodes.Storage.ObjectStorage": ("maxsize",),
    "tosca.nodes.network.FloatingIP": ("floating_network",),
    "tosca.nodes.ObjectStorage": ("name",),
}
_HINT = ("give the template a value for it (`properties: {{{name}: ...}}`), or give its "
         "definition a `default` or `required: false`")


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each node template missing a property its type requires."""
    service = get_section(doc, SERVICE)
    node_types = {**mapping(service.get("types")), **mapping(service.get("node_types"))}
    templates = mapping(get_section(doc, TOPOLOGY).get("node_templates"))
    found: dict[str, tuple[str, ...] | None] = {}
    for name, body in templates.items():
        body = mapping(body)
        type_name = body.get("type") or "tosca.nodes.Root"
        if not isinstance(type_name, str):
            continue
        if type_name not in found:
            found[type_name] = _required(type_name, node_types)
        required = found[type_name]
        given = body.get("properties")
        if not required or not isinstance(given, Mapping | None):
            continue
        missing = [key for key in required if key not in (given or {})]
        if missing:
            path = (*TOPOLOGY, "node_templates", name) + (("properties",) if given else ())
            yield problem_at(doc, path, file,
                             f'"properties" of template "{name}" is missing required field '
                             f'"{missing}"', _HINT.format(name=missing[0]))


def _required(type_name: str, node_types: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The properties a template of ``type_name`` must give, in declared order (None: a
    type in its lineage is not known here)."""
    definitions: dict[str, Any] = {}
    for name in reversed(lineage(type_name, node_types)):
        if name in node_types:
            definitions.update(mapping(mapping(node_types[name]).get("properties")))
            continue
        normative: str | None = normative_name(name)
        line: list[str] = []
        while normative is not None:
            if normative not in NORMATIVE_PROPERTIES:
                return None
            line.append(normative)
            normative = NORMATIVE_PROPERTIES[normative][0]
        for ancestor in reversed(line):
            definitions.update({key: {} for key in NORMATIVE_REQUIRED.get(ancestor, ())})
    return tuple(key for key, d in definitions.items()
                 if isinstance(d, Mapping) and d.get("required", True) is not False
                 and "default" not in d)


__all__ = ["NORMATIVE_REQUIRED", "problems"]
