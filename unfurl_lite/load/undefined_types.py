"""Type names a document uses that no definition gives: a relationship, capability, data or
interface type, refused at validate where Unfurl 1.2.0 refuses the service template at load
("No definition for type "X" found."), each probe run with Unfurl 1.2.0
(tests/data/unfurl120/49-unknown-types).

As in tosca-parser, only what a template uses is judged: the node types the templates are
(with their ancestors), the relationships their requirements make (with theirs), the data
types those types' properties and attributes name (with theirs), and the topology's inputs.
A type nothing uses may name what it likes, as in Unfurl. Node types are
:mod:`~unfurl_lite.load.type_checks`'s. A name is known when the document (its imports
merged, Unfurl's ``types:`` section too) defines it, when Unfurl 1.2.0 does
(:data:`~unfurl_lite.model.normative.DEFINED_TYPE_NAMES`), in the short spellings
tosca-parser expands (``tosca:Endpoint``, ``Endpoint``; data types only ``tosca:X``), and
for Cloudify's ``cloudify.`` names (Cloudify's documents are read here beyond Unfurl), and
the secret data types ``unfurl.datatypes.Sensitive`` and ``sensitive`` (this tool's).
"""

from __future__ import annotations

from collections.abc import Iterator

from unfurl_lite.errors import Problem
from unfurl_lite.load.builder import SENSITIVE_TYPES
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    did_you_mean,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.model.entities import INTERFACE_ALIASES
from unfurl_lite.model.lineage import parents
from unfurl_lite.model.narrow import is_list, is_map
from unfurl_lite.model.normative import DEFINED_TYPE_NAMES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: each kind's section of the service template and the prefix its short names expand with
_SECTIONS = {"relationship": ("relationship_types", "tosca.relationships."),
             "capability": ("capability_types", "tosca.capabilities."),
             "data": ("data_types", "tosca.datatypes."),
             "interface": ("interface_types", "")}


_EXAMPLES = {"relationship": "tosca.relationships.DependsOn, tosca.relationships.ConnectsTo",
             "capability": "tosca.capabilities.Node, tosca.capabilities.Endpoint",
             "data": "string, integer, map, list, tosca.datatypes.Credential",
             "interface": "tosca.interfaces.node.lifecycle.Standard"}


class _Names:
    """What the document defines, kind by kind, and the problems found, each place once."""

    def __init__(self, doc: Any, file: str) -> None:
        self.doc = doc
        self.file = file
        service = get_section(doc, SERVICE)
        self.any_kind = mapping(service.get("types"))
        self.defined = {kind: mapping(service.get(section))
                        for kind, (section, _) in _SECTIONS.items()}
        self.problems: list[Problem] = []
        self.seen: set[tuple[str, str]] = set()

    def known(self, kind: str, name: str) -> bool:
        if name in self.defined[kind] or name in self.any_kind or \
                name in DEFINED_TYPE_NAMES[kind] or name.startswith("cloudify."):
            return True
        if kind == "interface":
            return name in INTERFACE_ALIASES
        if kind == "data":  # only PortSpec and PortDef have a short name there; the
            # secret types are this tool's (docs/differences-from-unfurl.md)
            return name in ("tosca:PortSpec", "tosca:PortDef") or name in SENSITIVE_TYPES
        prefix = _SECTIONS[kind][1]
        short = name[len("tosca:"):] if name.startswith("tosca:") else name
        return "." not in short and prefix + short in DEFINED_TYPE_NAMES[kind]

    def use(self, kind: str, name: Any, path: tuple[Any, ...], where: str) -> None:
        """``name``, a type of ``kind`` used at ``path``: refused if nothing defines it,
        else the types it names in turn are used."""
        if not isinstance(name, str) or (kind, name) in self.seen:
            return
        self.seen.add((kind, name))
        if not self.known(kind, name):
            self.refuse(kind, name, path, where)
            return
        body = self.defined[kind].get(name)
        if body is None:
            body = self.any_kind.get(name)
        if not is_map(body):
            return
        section = (*SERVICE, _SECTIONS[kind][0] if name in self.defined[kind] else "types",
                   name)
        derived_from = body.get("derived_from")
        for index, parent in enumerate(parents(derived_from)):
            self.use(kind, parent, (*section, "derived_from",
                                    *((index,) if is_list(derived_from) else ())),
                     f"{kind} type {name!r}")
        self.use_body(body, section, f"{kind} type {name!r}")

    def use_body(self, body: dict[str, Any], section: tuple[Any, ...], where: str) -> None:
        """The data, capability and interface types a type's definition names."""
        for key in ("properties", "attributes"):
            for prop, definition in mapping(body.get(key)).items():
                self.use("data", mapping(definition).get("type"),
                         (*section, key, prop, "type"), where)
        for cap, definition in mapping(body.get("capabilities")).items():
            self.use("capability", mapping(definition).get("type"),
                     (*section, "capabilities", cap, "type"), where)
        for iface, definition in mapping(body.get("interfaces")).items():
            self.use("interface", mapping(definition).get("type"),
                     (*section, "interfaces", iface, "type"), where)

    def refuse(self, kind: str, name: str, path: tuple[Any, ...], where: str,
               message: str | None = None) -> None:
        section, prefix = _SECTIONS[kind]
        short = name[len("tosca:"):] if name.startswith("tosca:") else name
        full = short if short in DEFINED_TYPE_NAMES[kind] else prefix + short
        if kind in ("data", "relationship") and full in DEFINED_TYPE_NAMES[kind]:
            hint = f"write {full!r}: Unfurl 1.2.0 does not find {name!r}"
        else:
            hint = did_you_mean(name, [*self.defined[kind], *DEFINED_TYPE_NAMES[kind]]) or (
                f"define it under spec.service_template.{section}, or use one Unfurl "
                f"defines ({_EXAMPLES[kind]}, ...)")
        self.problems.append(problem_at(
            self.doc, path, self.file,
            message or f'No definition for type "{name}" found ({kind} type used by {where})',
            hint))


def problems(doc: Any, file: str) -> Iterator[Problem]:
    names = _Names(doc, file)
    node_types = get_section(doc, (*SERVICE, "node_types"))
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    relationship_templates = get_section(doc, (*TOPOLOGY, "relationship_templates"))
    used: dict[str, str] = {}  # the document's node types a template is, with ancestors
    for template, body in templates.items():
        _node_type_used(mapping(body).get("type"), node_types, used, str(template))
        _requirements(names, template, body, relationship_templates)
    for type_name, template in used.items():
        names.use_body(mapping(node_types[type_name]), (*SERVICE, "node_types", type_name),
                       f"node type {type_name!r} (node template {template!r})")
    for name, body in relationship_templates.items():
        names.use("relationship", mapping(body).get("type"),
                  (*TOPOLOGY, "relationship_templates", name, "type"),
                  f"relationship template {name!r}")
    for name, definition in get_section(doc, (*TOPOLOGY, "inputs")).items():
        names.use("data", mapping(definition).get("type"),
                  (*TOPOLOGY, "inputs", name, "type"), f"input {name!r}")
    return iter(names.problems)


def _node_type_used(type_name: Any, node_types: dict[str, Any], used: dict[str, str],
                    template: str) -> None:
    stack = [type_name]
    while stack:
        name = stack.pop()
        if isinstance(name, str) and name in node_types and name not in used:
            used[name] = template
            stack.extend(parents(mapping(node_types[name]).get("derived_from")))


def _requirements(names: _Names, template: Any, body: Any,
                  relationship_templates: dict[str, Any]) -> None:
    requirements = mapping(body).get("requirements")
    if not is_list(requirements):
        return
    for index, item in enumerate(requirements):
        if not is_map(item) or len(item) != 1:
            continue
        ((req, value),) = item.items()
        relationship = mapping(value).get("relationship")
        path = (*TOPOLOGY, "node_templates", template, "requirements", index, req,
                "relationship")
        if isinstance(relationship, str):
            if relationship in relationship_templates:
                continue  # judged as a relationship template
            # here tosca-parser expands no short name (``DependsOn``, ``tosca:DependsOn``)
            if names.known("relationship", relationship) and (
                    "." in relationship or relationship in names.defined["relationship"]
                    or relationship in names.any_kind):
                names.use("relationship", relationship, path, f"node template {template!r}")
            else:
                names.refuse("relationship", relationship, path, "", (
                    f'Relationship template or type "{relationship}" was not found for '
                    f'requirement "{req}" of node "{template}".'))
        elif is_map(relationship):
            names.use("relationship", relationship.get("type"), (*path, "type"),
                      f"node template {template!r}")
            where = (f"the relationship of requirement {req!r} of node template "
                     f"{template!r}")
            names.use_body(relationship, path, where)
