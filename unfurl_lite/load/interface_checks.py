"""Validation of interfaces and operations: an interface a template uses must be declared
by its type (or be one every type has), and an operation must be one its interface
declares. The keys of an interface that are not operations are
:data:`~unfurl_lite.model.entities.RESERVED_INTERFACE_KEYS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from unfurl_lite.errors import Problem
from unfurl_lite.load.interfaces import marshalled
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    declared_types,
    did_you_mean,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.load.type_checks import (
    NORMATIVE_NODE_TYPES,
    relationships_of,
    requirements_read_once,
)
from unfurl_lite.model.entities import (
    INTERFACE_ALIASES,
    INTERFACE_OPERATIONS,
    RESERVED_INTERFACE_KEYS,
    canonical_interface,
)
from unfurl_lite.model.lineage import ancestry, parents

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

Owners: TypeAlias = "list[tuple[tuple[Any, ...], Any]]"
#: the document being validated, its owners, found once for the checks that walk them, and
#: their interfaces' :func:`marshalled` bytes, made when a check first asks for them
_found: list[tuple[Any, Owners, list[bytes | None]]] = []


@contextmanager
def owners_found_once(doc: Any) -> Iterator[None]:
    """While validating ``doc``: :func:`interface_owners` walks it once, not once per
    check (a list per document; another document, or another thread's, walks as before),
    and each template's requirements are read once (:func:`requirements_read_once`)."""
    with requirements_read_once(doc):
        _found[:] = [(doc, list(_owners(doc)), [])]
        try:
            yield
        finally:
            _found.clear()


def interface_owners(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, interfaces mapping) of everything that can declare operations and declares
    some: an owner without interfaces has nothing for a check to look at (most of a large
    ensemble's requirements have no relationship of their own)."""
    found = _found[:1]
    if found and found[0][0] is doc:
        return iter(found[0][1])
    return _owners(doc)


def keyed_owners(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any, bytes | None]]:
    """:func:`interface_owners` with their interfaces' :func:`marshalled` bytes (None: not
    known): a check whose verdict on an owner depends only on what its interfaces hold
    judges once the owners that hold the same (a generated ensemble's 10,000 templates
    declare the same operations), and each of them again only when it found a problem."""
    found = _found[:1]
    if not (found and found[0][0] is doc):
        return ((path, interfaces, None) for path, interfaces in _owners(doc))
    _, owners, keys = found[0]
    if len(keys) != len(owners):
        keys[:] = [marshalled(interfaces) for _, interfaces in owners]
    return ((path, interfaces, key) for (path, interfaces), key in zip(owners, keys, strict=True))


def _owners(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    for section in ("node_types", "relationship_types"):
        for name, body in get_section(doc, (*SERVICE, section)).items():
            if interfaces := mapping(body).get("interfaces"):
                yield (*SERVICE, section, name, "interfaces"), interfaces
    for section in ("node_templates", "relationship_templates"):
        for name, body in get_section(doc, (*TOPOLOGY, section)).items():
            base = (*TOPOLOGY, section, name)
            if interfaces := mapping(body).get("interfaces"):
                yield (*base, "interfaces"), interfaces
            if section == "relationship_templates" and (
                    interfaces := mapping(body).get("target_interfaces")):
                yield (*base, "target_interfaces"), interfaces
            if section == "node_templates":
                for index, req, relationship in relationships_of(body):
                    if not relationship:
                        continue
                    at = (*base, "requirements", index, req, "relationship")
                    if interfaces := relationship.get("interfaces"):
                        yield (*at, "interfaces"), interfaces
                    # Cloudify's relationship_lifecycle operations run on the target
                    if interfaces := relationship.get("target_interfaces"):
                        yield (*at, "target_interfaces"), interfaces


def operations_of(body: Any) -> Iterator[tuple[tuple[str, ...], str]]:
    body = mapping(body)
    for key in body:
        if key not in RESERVED_INTERFACE_KEYS:
            yield (key,), key
    for key in mapping(body.get("operations")):
        yield ("operations", key), key


#: Interfaces every node type has: TOSCA's Standard and Unfurl's Install (declared by
#: tosca.nodes.Root), and Cloudify's node interfaces (accepted on any node, see the docs).
NODE_INTERFACES = ("Standard", "Install", "Lifecycle", "Validation", "Monitoring")
#: Interfaces every relationship type has (Unfurl 1.2.0 accepts these on any relationship).
RELATIONSHIP_INTERFACES = ("Configure", "Install", "Standard", "RelationshipLifecycle")


def declared_interfaces(
    type_name: str, types: dict[str, Any], base: tuple[str, ...] = NODE_INTERFACES,
    normative: Callable[[str], bool] = NORMATIVE_NODE_TYPES.__contains__,
) -> set[str] | None:
    """The interfaces a type declares, with its ancestors'; None when a type in the chain
    is not defined here (an import may declare more)."""
    declared = set(base)
    for name in ancestry(type_name, lambda t: parents(
            mapping(types[t]).get("derived_from")) if t in types else ()):
        if name in types:
            interfaces = mapping(mapping(types[name]).get("interfaces"))
            declared |= {canonical_interface(str(i)) for i in interfaces}
        elif not normative(name):
            return None
    return declared


def _normative_relationship(name: str) -> bool:
    return name.startswith(("tosca.relationships.", "cloudify.relationships.")) or name in (
        "DependsOn", "HostedOn", "ConnectsTo", "AttachesTo", "RoutesTo")


def _relationship_owners(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, relationship body) of relationship templates and inline relationships."""
    for name, body in get_section(doc, (*TOPOLOGY, "relationship_templates")).items():
        yield (*TOPOLOGY, "relationship_templates", name), body
    for name, body in get_section(doc, (*TOPOLOGY, "node_templates")).items():
        for index, req, relationship in relationships_of(body):
            yield ((*TOPOLOGY, "node_templates", name, "requirements", index, req,
                    "relationship"), relationship)


def _undeclared(doc: Any, file: str, path: tuple[Any, ...], body: Any, type_name: str,
                declared: set[str], types: dict[str, Any], kind: str) -> Iterator[Problem]:
    for interface in mapping(mapping(body).get("interfaces")):
        if canonical_interface(str(interface)) in declared or interface == "defaults":
            continue
        spelled = sorted(declared | {a for a, c in INTERFACE_ALIASES.items() if c in declared})
        where = (f"in {kind}_types: {type_name}: interfaces: {interface}: {{...}}"
                 if type_name in types else
                 f"in a {kind} type derived from {type_name} ({kind}_types: MyType: "
                 f"{{derived_from: {type_name}, interfaces: {{{interface}: {{...}}}}}}) "
                 "and give the template that type")
        hint = did_you_mean(str(interface), spelled) or (
            f"declare it {where}; {type_name} declares {', '.join(sorted(declared))}"
        )
        yield problem_at(doc, (*path, "interfaces", interface), file,
                         f"interface {interface!r} is not declared by type {type_name!r}", hint)


def _undeclared_interfaces(doc: Any, file: str) -> Iterator[Problem]:
    """TOSCA lets a template assign operations only to interfaces its type declares; an
    undeclared one (``Standrad:``) would otherwise be silently never run."""
    node_types = get_section(doc, (*SERVICE, "node_types"))
    by_type: dict[str, set[str] | None] = {}  # many templates, few types
    for name, body in get_section(doc, (*TOPOLOGY, "node_templates")).items():
        type_name = mapping(body).get("type")
        if not isinstance(type_name, str):
            continue
        if type_name not in by_type:
            by_type[type_name] = declared_interfaces(type_name, node_types)
        declared = by_type[type_name]
        if declared is not None and mapping(body).get("interfaces"):
            yield from _undeclared(doc, file, (*TOPOLOGY, "node_templates", name), body,
                                   str(type_name), declared, node_types, "node")
    relationship_types = get_section(doc, (*SERVICE, "relationship_types"))
    for path, body in _relationship_owners(doc):
        type_name = mapping(body).get("type")
        if not isinstance(type_name, str):
            type_name = "tosca.relationships.Root"
        declared = declared_interfaces(
            type_name, relationship_types, RELATIONSHIP_INTERFACES, _normative_relationship)
        if declared is not None:
            yield from _undeclared(doc, file, path, body, type_name, declared,
                                   relationship_types, "relationship")


def _untyped_type_interfaces(doc: Any, file: str) -> Iterator[Problem]:
    """A type's interface with no ``type:`` must be a well-known one: ``Standrad:`` in a
    node type would declare a new, never-run interface (Unfurl: "Interface type ... not
    found")."""
    known = set(INTERFACE_OPERATIONS) | set(INTERFACE_ALIASES)
    for section in ("node_types", "relationship_types"):
        for name, body in get_section(doc, (*SERVICE, section)).items():
            for interface, definition in mapping(mapping(body).get("interfaces")).items():
                if str(interface) in known or interface == "defaults" or mapping(
                        definition).get("type"):
                    continue
                hint = did_you_mean(str(interface), sorted(known)) or (
                    f"give its interface type: {interface}: {{type: my.interfaces."
                    f"{interface}}}")
                owner = f"{section[:-1].replace('_', ' ')} {name!r}"
                yield problem_at(doc, (*SERVICE, section, name, "interfaces", interface),
                                 file, f"interface {interface!r} of {owner} has no type and is "
                                 "not a TOSCA, Unfurl or Cloudify interface", hint)


def _unknown_operations(doc: Any, file: str) -> Iterator[Problem]:
    clean: set[bytes] = set()  # interfaces whose operations are all known: so are an equal's
    for path, interfaces, key in keyed_owners(doc):
        if key in clean:
            continue
        unknown: list[str] = []
        yield from _unknown_operations_of(doc, file, path, interfaces, unknown)
        if not unknown and key is not None:
            clean.add(key)


def _unknown_operations_of(doc: Any, file: str, path: tuple[Any, ...], interfaces: Any,
                           unknown: list[str]) -> Iterator[Problem]:
    """The unknown operations of one owner's interfaces; ``unknown`` gets every operation
    its interface does not know, refused or declared by an interface type (which may
    differ by owner: the judgement is then not only of what the interfaces hold)."""
    for interface, body in mapping(interfaces).items():
        known = INTERFACE_OPERATIONS.get(canonical_interface(str(interface)))
        if known is None:
            yield from _undeclared_custom(doc, file, path, str(interface), body, unknown)
            continue
        declared: tuple[str, ...] | None = None  # looked up only for an unknown name
        for subpath, op in operations_of(body):
            if op in known:
                continue
            unknown.append(op)
            if declared is None:
                type_name = _interface_type(doc, path, str(interface))
                declared = interface_type_operations(doc, type_name) if type_name else ()
            if op not in declared:
                base = _BASE_TYPES.get(canonical_interface(str(interface)), interface)
                hint = did_you_mean(op, [*known, *declared, *RESERVED_INTERFACE_KEYS]) or (
                    f"{interface} declares {', '.join((*known, *declared))}; for an "
                    f"operation of your own, declare an interface type (interface_types: "
                    f"my.interfaces.X: {{derived_from: {base}, operations: {{{op}: }}}}) "
                    "and give the interface `type: my.interfaces.X`, as Unfurl requires")
                yield problem_at(doc, (*path, interface, *subpath), file,
                                 f"unknown operation {op!r} on interface {interface!r}", hint)


def _undeclared_custom(doc: Any, file: str, path: tuple[Any, ...], interface: str, body: Any,
                       unknown: list[str]) -> Iterator[Problem]:
    """An interface of one's own (``Mine: {type: my.interfaces.X}``) given an operation its
    interface type does not declare, refused as tosca-parser refuses it ('"interfaces" of
    template "app" contains unknown field "op2".'; tests/data/unfurl120/56-custom-interfaces).
    Judged only where the interface type is the document's own; its ancestors' operations
    count (Unfurl 1.2.0 refuses those too, a stricter reading not followed)."""
    if len(path) < 3 or path[-3] not in ("node_templates", "node_types"):
        return
    type_name = _interface_type(doc, path, interface)
    types = declared_types(doc, "interface_types")
    if type_name is None or type_name not in types:
        return
    declared = set(interface_type_operations(doc, type_name))
    for name in ancestry(type_name, lambda t: parents(mapping(types.get(t)).get(
            "derived_from"))):  # one derived from Standard (say) has Standard's too
        declared.update(INTERFACE_OPERATIONS.get(canonical_interface(name), ()))
    for subpath, op in operations_of(body):
        unknown.append(op)  # judged by the owner's interface type: never cached as clean
        if op in declared:
            continue
        owner = "template" if path[-3] == "node_templates" else "node type"
        yield problem_at(
            doc, (*path, interface, *subpath), file,
            f'"interfaces" of {owner} "{path[-2]}" contains unknown field "{op}".',
            did_you_mean(op, sorted(declared)) or (
                f"interface type {type_name!r} declares "
                f"{', '.join(sorted(declared)) or 'no operations'}; declare it there "
                f"(`interface_types: {{{type_name}: {{operations: {{{op}: {{}}}}}}}}`)"))


_BASE_TYPES = {canonical: alias for alias, canonical in INTERFACE_ALIASES.items()}
_INTERFACE_TYPE_KEYS = frozenset({"derived_from", "version", "metadata", "description",
                                  "inputs", "operations", "notifications", "type"})


def interface_type_operations(doc: Any, type_name: str) -> tuple[str, ...]:
    """The operations an interface type of ``interface_types`` declares, its ancestors'
    included (``operations:`` or, in TOSCA 1.2's form, keys beside ``derived_from``)."""
    types = declared_types(doc, "interface_types")
    found: list[str] = []
    for name in ancestry(type_name, lambda t: parents(mapping(types.get(t)).get(
            "derived_from"))):
        body = mapping(types.get(name))
        found += [str(k) for k in mapping(body.get("operations"))]
        found += [str(k) for k in body if k not in _INTERFACE_TYPE_KEYS]
    return tuple(dict.fromkeys(found))


def _interface_type(doc: Any, path: tuple[Any, ...], interface: str) -> str | None:
    """The ``type:`` of an interface, given where it is or on the node type (or an
    ancestor) it comes from."""
    interfaces = get_section(doc, path)
    own = mapping(interfaces.get(interface)).get("type")
    if isinstance(own, str):
        return own
    if len(path) < 2 or path[-3] not in ("node_templates", "node_types"):
        return None
    node_types = get_section(doc, (*SERVICE, "node_types"))
    start = (mapping(get_section(doc, path[:-1])).get("type") if path[-3] == "node_templates"
             else path[-2])
    wanted = canonical_interface(interface)
    for name in ancestry(start, lambda t: parents(mapping(node_types.get(t)).get(
            "derived_from"))):
        for key, body in mapping(mapping(node_types.get(name)).get("interfaces")).items():
            found = mapping(body).get("type")
            if canonical_interface(str(key)) == wanted and isinstance(found, str):
                return found
    return None
