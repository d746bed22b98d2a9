"""``get_attribute`` and ``get_property`` naming what the template does not have, refused as
Unfurl 1.2.0 refuses them when it loads the service template (tosca-parser's
``_validate_intrinsic_functions``: 'Attribute "x" was not found in node template "t".').

Only where tosca-parser looks, and only as deep: a value that *is* the function (not one
nested in a map, a list, ``concat`` or ``eval``) of a node template's declared properties
(a template's own, or its type's ``default``), of its capabilities' properties, of the
inputs of its interfaces' operations (its type's included), of an output, and of the
operations of a relationship a requirement uses (load/relationship_refs.py walks those).
Judged, in tosca-parser's words (tests/data/unfurl120/47-unset-optional-properties and
tests/load/test_function_refs.py record what Unfurl 1.2.0 answers):

- ``get_attribute: [T, x]``: ``x`` is an attribute the type (or an ancestor) declares, or a
  property the template has (set and declared, or a declared ``default``);
- ``get_attribute: [T, name, x, ...]``: ``name`` is such an attribute of a complex type (a
  scalar one takes no index), else a capability of T whose type declares attribute ``x``;
- ``get_property: [T, name, key, ...]``: ``name`` is a property T has whose value holds
  each ``key`` in turn, else a capability of T with a value for property ``key``;
- for both, a requirement ``name`` of T reads the capability ``name`` of its target;
  ``T`` names a template (or a type: its first template), ``SELF`` in a node template,
  ``TARGET``/``SOURCE`` only in a relationship's operations.

``HOST`` is searched as tosca-parser searches it (load/host_refs.py). Nothing is judged
where a type in the lineage is not known here (imported from elsewhere, or an Unfurl type
this table lacks).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence

from unfurl_lite.errors import Problem
from unfurl_lite.load.host_refs import UNSET as _UNSET
from unfurl_lite.load.host_refs import host_verdict
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.load.type_tables import Types, as_list
from unfurl_lite.model.entities import RESERVED_INTERFACE_KEYS, canonical_interface
from unfurl_lite.model.lineage import (
    NORMATIVE_DEFAULTS,
    normative_name,
    undeclared_properties,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FUNCTIONS = ("get_attribute", "get_property")

#: TOSCA's scalar types: an attribute of one takes no index or key
_SCALARS = frozenset({
    "integer", "string", "boolean", "float", "range", "number", "timestamp",
    "scalar-unit.size", "scalar-unit.frequency", "scalar-unit.time", "version",
    "tosca:integer", "tosca:string", "tosca:boolean", "tosca:float",
})

_HINT_ATTRIBUTE = ("declare it in the template's type (`attributes: {{{name}: {{type: "
                   "string, required: false}}}}`), or read it where Unfurl does not check it "
                   "at load (`{{eval: '::{template}::{name}'}}`)")
_HINT_CAPABILITY = ("name a capability or requirement the template has, or a property it has "
                    "a value for (an optional property left unset is not there)")
_HINT_VALUE = "give the property the value it reads, or read it with an `eval` expression"
_HINT_KEYWORD = ("`{keyword}` names the {role} of a relationship: use it in a relationship's "
                 "operations, or name the template")


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each ``get_attribute``/``get_property`` Unfurl 1.2.0 refuses when it loads the
    service template, once per place."""
    topology = get_section(doc, TOPOLOGY)
    templates = mapping(topology.get("node_templates"))
    types = Types(doc)
    judge = Judge(doc, templates, types)
    seen: set[tuple[tuple[Any, ...], str]] = set()
    for path, context, call in _calls(doc, templates, judge):
        message = judge.verdict(context, call)
        if message is None or (path, message[0]) in seen:
            continue
        seen.add((path, message[0]))
        yield problem_at(doc, path, file, *message)


#: where a function is read: ("node", template, "", "") / ("outputs", "", "", "") /
#: ("relationship", source template, target template or "", the relationship's name: its
#: requirement's, or the relationship template's)
Context = tuple[str, str, str, str]


def function_call(value: Any) -> tuple[str, list[Any]] | None:
    if isinstance(value, dict) and len(value) == 1:
        for name in _FUNCTIONS:
            if name in value:
                args = value[name]
                return name, args if isinstance(args, list) else [args]
    return None


def _calls(doc: Any, templates: Mapping[str, Any], judge: Judge) -> Iterator[
        tuple[tuple[Any, ...], Context, tuple[str, list[Any]]]]:
    """(where it is written, the context it is read in, the call) of each function
    tosca-parser validates."""
    service = get_section(doc, SERVICE)
    types = judge.types
    for name, body in templates.items():
        body = mapping(body)
        here = (*TOPOLOGY, "node_templates", name)
        context: Context = ("node", str(name), "", "")
        chain = types.chain(body.get("type") or "tosca.nodes.Root")
        given = mapping(body.get("properties"))
        calls = [(prop, function_call(value)) for prop, value in given.items()]
        if chain is not None and any(call for _prop, call in calls):
            present = judge.properties(chain, body)  # the values tosca-parser reads
            for prop, call in calls:
                if call and prop in present:
                    yield (*here, "properties", prop), context, call
        if chain is not None and _has_calls(types, chain):
            for prop, definition in types.properties(chain).items():
                call = function_call(mapping(definition).get("default"))
                if call and prop not in given:
                    owner = next(t for t in chain if prop in mapping(
                        mapping(types.node_types.get(t)).get("properties")))
                    yield (*_type_path(service, owner), "properties", prop,
                           "default"), context, call
        for cap, cap_body in mapping(body.get("capabilities")).items():
            for prop, value in mapping(mapping(cap_body).get("properties")).items():
                call = function_call(value)
                if call:
                    yield (*here, "capabilities", cap, "properties", prop), context, call
        if (chain is not None and _has_calls(types, chain)) or _any_call(body):
            sources = [(_type_path(service, t), mapping(types.node_types.get(t)))
                       for t in reversed(chain or ()) if t in types.node_types]
            sources.append((here, body))
            for path, value in operation_inputs(sources):
                call = function_call(value)
                if call:
                    yield path, context, call
    for out, body in mapping(get_section(doc, TOPOLOGY).get("outputs")).items():
        call = function_call(mapping(body).get("value"))
        if call:
            yield (*TOPOLOGY, "outputs", out, "value"), ("outputs", "", "", ""), call


@functools.cache
def _has_calls(types: Types, chain: tuple[str, ...]) -> bool:
    """Whether a type of ``chain`` has an input or a property default that is a function
    (found once per lineage)."""
    bodies = [mapping(types.node_types[t]) for t in chain if t in types.node_types]
    return any(_any_call(body) or any(function_call(mapping(d).get("default")) for d in
                                      mapping(body.get("properties")).values())
               for body in bodies)


def _any_call(body: Mapping[str, Any]) -> bool:
    """Whether any input of ``body``'s interfaces is a function (the quick look before the
    merge: most templates have none)."""
    interfaces = body.get("interfaces")
    if not interfaces or not isinstance(interfaces, dict):
        return False
    for iface in interfaces.values():
        if not isinstance(iface, dict):
            continue
        if any(function_call(v) for v in mapping(iface.get("inputs")).values()):
            return True
        for op, op_body in (*mapping(iface.get("operations")).items(), *iface.items()):
            inputs = op_body.get("inputs") if isinstance(op_body, dict) else None
            if inputs and isinstance(inputs, dict) and op != "inputs" and any(
                    function_call(v) for v in inputs.values()):
                return True
    return False


def _type_path(service: Mapping[str, Any], type_name: str) -> tuple[Any, ...]:
    types = mapping(service.get("types"))
    if type_name in types and types[type_name] is mapping(service.get("node_types")).get(
            type_name):
        return (*SERVICE, "types", type_name)
    return (*SERVICE, "node_types", type_name)


def operation_inputs(sources: Sequence[tuple[tuple[Any, ...], Mapping[str, Any]]]) -> Iterator[
        tuple[tuple[Any, ...], Any]]:
    """(path, value) of each operation input and interface input of ``sources`` (a type's
    ancestors first, the template last): the one that wins where several set a name; an
    interface's own input only where no operation of it sets that name."""
    operations: dict[tuple[str, str, str], tuple[tuple[Any, ...], Any]] = {}
    shared: dict[tuple[str, str], tuple[tuple[Any, ...], Any]] = {}
    for path, body in sources:
        for iface, iface_body in mapping(body.get("interfaces")).items():
            if iface == "defaults" or not isinstance(iface_body, dict):
                continue
            key = canonical_interface(str(iface))
            here = (*path, "interfaces", iface)
            for name, value in mapping(iface_body.get("inputs")).items():
                shared[(key, str(name))] = ((*here, "inputs", name), value)
            ops = [(op, op_body, (*here, "operations", op))
                   for op, op_body in mapping(iface_body.get("operations")).items()]
            ops += [(op, op_body, (*here, op)) for op, op_body in iface_body.items()
                    if op not in RESERVED_INTERFACE_KEYS]
            for op, op_body, op_path in ops:
                for name, value in mapping(mapping(op_body).get("inputs")).items():
                    operations[(key, str(op), str(name))] = ((*op_path, "inputs", name), value)
    yield from operations.values()
    overridden = {(key, name) for key, _op, name in operations}
    yield from (found for key, found in shared.items() if key not in overridden)


class Judge:
    def __init__(self, doc: Any, templates: Mapping[str, Any], types: Types) -> None:
        self.templates = templates
        self.types = types
        service = get_section(doc, SERVICE)
        #: another document may bring templates Unfurl would find: names not judged
        self.open_world = bool(
            mapping(doc).get("environment") or mapping(mapping(doc).get("spec")).get(
                "deployment_blueprints") or service.get("deployment_blueprints")
            or get_section(doc, TOPOLOGY).get("substitution_mappings"))

    def verdict(self, context: Context, call: tuple[str, list[Any]]) -> tuple[
            str, str] | None:
        """What Unfurl 1.2.0 says of ``call`` read in ``context`` (message, hint), or None
        when it accepts it or it is not judged here: which template the first argument
        names (``SELF``, ``TARGET``/``SOURCE`` by context, a name or a type's first
        template), then the two-argument attribute or the longer path's walk."""
        function, args = call
        if len(args) < 2 or not all(isinstance(a, str | int) for a in args[1:]):
            return None
        kind, owner, target, requirement = context
        first = args[0]
        if not isinstance(first, str):
            return None
        if first == "HOST":
            return host_verdict(self, function, args, owner) if kind == "node" else None
        if first in ("TARGET", "SOURCE"):
            if kind == "node":
                role = "target" if first == "TARGET" else "source"
                return (f'"{first}" keyword can only be used in context to "Relationships" '
                        f'{role} node (in node template "{owner}")',
                        _HINT_KEYWORD.format(keyword=first, role=role))
            if kind != "relationship" or function != "get_attribute" or len(args) != 2:
                return None
            name = target if first == "TARGET" else owner
            if name not in self.templates:
                return None
            return self._attribute(name, args[1], owner)
        if first == "SELF":
            if kind == "outputs" and function == "get_attribute":
                return ('Node template "SELF" was not found (in the outputs)',
                        "name the template: `SELF` has no meaning in an output")
            if kind == "relationship" and function == "get_attribute" and not (
                    self.open_world or self._template(requirement)):
                # tosca-parser looks for a node template named as the relationship, which
                # is named after its requirement
                return (f'Node template "SELF" was not found (get_attribute in '
                        f'relationship "{requirement}" of node template "{owner}")',
                        "read the relationship's ends with `SOURCE` or `TARGET`, or its own "
                        "values with an `eval` expression")
            if kind != "node":
                return None
            name = owner
        else:
            found = self._template(first)
            if found is None:
                if self.open_world or kind == "relationship":
                    return None
                return (f'Node template "{first}" was not found (referenced by {function})',
                        "name one of the node templates of the topology")
            name = found
        if len(args) == 2:
            if function == "get_attribute":
                return self._attribute(name, args[1], owner or name)
            return None  # two-argument get_property: load/property_refs.py
        if function == "get_attribute":
            return self._attribute_path(name, args, owner or name)
        return self._property_path(name, args, owner or name)

    def _template(self, name: str) -> str | None:
        """The template ``name`` names: itself, else the first template of that type."""
        if name in self.templates:
            return name
        for template, body in self.templates.items():
            chain = self.types.chain(mapping(body).get("type") or "tosca.nodes.Root")
            if chain is not None and (name in chain or normative_name(name) in chain):
                return str(template)
        return None

    def _facts(self, name: str) -> tuple[tuple[str, ...], Mapping[str, Any]] | None:
        body = mapping(self.templates.get(name))
        chain = self.types.chain(body.get("type") or "tosca.nodes.Root")
        return None if chain is None else (chain, body)

    def properties(self, chain: tuple[str, ...], body: Mapping[str, Any]) -> dict[str, Any]:
        """The properties tosca-parser gives the template: those it sets that its type
        declares (any, where its type takes any) but not named as a capability, and the
        declared defaults it leaves."""
        declared = self.types.properties(chain)
        own = {t: mapping(mapping(self.types.node_types[t]).get("metadata"))
               for t in chain if t in self.types.node_types}
        given = mapping(body.get("properties"))
        left_out = undeclared_properties(chain, declared, own, given,
                                         mapping(body.get("metadata")))
        capabilities = self.types.capabilities(chain)
        found = {k: v for k, v in given.items() if k not in left_out and k not in capabilities}
        for prop, definition in declared.items():
            if prop not in given and isinstance(definition, dict) and "default" in definition:
                found[prop] = definition["default"]
        for name in reversed(chain):
            for prop, default in NORMATIVE_DEFAULTS.get(name, {}).items():
                if prop not in given:
                    found.setdefault(prop, default)
        return found

    def _attribute(self, name: str, attribute: Any, context: str) -> tuple[str, str] | None:
        facts = self._facts(name)
        if facts is None:
            return None
        chain, body = facts
        if attribute in self.types.attributes(chain) or attribute in self.properties(
                chain, body):
            return None
        return (f'Attribute "{attribute}" was not found in node template "{name}": its type '
                f'{chain[0]} declares no such attribute and the template has no such '
                f'property (referenced from node template "{context}")',
                _HINT_ATTRIBUTE.format(name=attribute, template=name))

    def _attribute_path(self, name: str, args: list[Any], context: str) -> tuple[
            str, str] | None:
        facts = self._facts(name)
        if facts is None:
            return None
        chain, body = facts
        attributes = self.types.attributes(chain)
        if args[1] in attributes:
            declared = mapping(attributes[args[1]]).get("type")
            if declared in _SCALARS:
                return (f'Illegal arguments for function "get_attribute". Unexpected '
                        f'attribute/index value "{args[2]}": attribute "{args[1]}" of node '
                        f'template "{name}" is a {declared}', _HINT_VALUE)
            return None
        found = self._capability(name, chain, body, args[1], context)
        if found is None or len(found) == 2:
            return found
        cap, template, cap_type = found
        if args[2] in cap_type[0]:
            return None
        return (f'Attribute "{args[2]}" was not found in capability "{cap}" of node template '
                f'"{template}" referenced from node template "{context}"',
                f"declare it under `attributes:` of the capability's type, or name an "
                f"attribute it declares ({', '.join(sorted(cap_type[0])) or 'it has none'})")

    def _property_path(self, name: str, args: list[Any], context: str) -> tuple[
            str, str] | None:
        facts = self._facts(name)
        if facts is None:
            return None
        chain, body = facts
        properties = self.properties(chain, body)
        if args[1] in properties:
            return _walk(properties[args[1]], args, 2, context)
        found = self._capability(name, chain, body, args[1], context)
        if found is None or len(found) == 2:
            return found
        cap, template, cap_type = found
        given = mapping(mapping(mapping(mapping(self.templates.get(template)).get(
            "capabilities")).get(cap)).get("properties"))
        value = given.get(args[2], cap_type[1].get(args[2], _UNSET))
        if value is _UNSET or value is None:
            return (f'Property "{args[2]}" was not found in capability "{cap}" of node '
                    f'template "{template}" referenced from node template "{context}"',
                    "give the capability a value for it (`capabilities: {" + f"{cap}: "
                    "{properties: {" + f"{args[2]}: ..." + "}}}`) or name one it has")
        return _walk(value, args, 3, context)

    def _capability(self, name: str, chain: tuple[str, ...], body: Mapping[str, Any],
                    wanted: Any, context: str) -> tuple[
            str, str, tuple[set[str], dict[str, Any]]] | tuple[str, str] | None:
        """(capability, the template holding it, its type's attributes and properties)
        that ``[name, wanted, ...]`` reads; a problem; or None when not judged."""
        template, chain_of = name, chain
        for entry in as_list(body.get("requirements")):
            if wanted in mapping(entry):
                spec = mapping(entry)[wanted]
                target = spec if isinstance(spec, str) else mapping(spec).get("node")
                if not isinstance(target, str) or target not in self.templates:
                    return None
                facts = self._facts(target)
                if facts is None:
                    return None
                template, chain_of = target, facts[0]
                break
        else:
            if wanted in self.types.requirements(chain):
                return None
        capabilities = self.types.capabilities(chain_of)
        if wanted not in capabilities:
            return (f'Requirement/Capability "{wanted}" referenced from node template '
                    f'"{context}" was not found in node template "{template}"',
                    _HINT_CAPABILITY)
        cap_type = self.types.capability(capabilities[wanted])
        if cap_type is None:
            return None
        return str(wanted), template, cap_type


def _walk(value: Any, args: list[Any], index: int, context: str) -> tuple[str, str] | None:
    """tosca-parser's walk of ``args[index:]`` into a property's value."""
    for key in args[index:]:
        if isinstance(value, list):
            try:
                position = int(key)
            except ValueError:
                return None
            if position < -len(value):
                return None
            if position >= len(value):
                return (f"Property '{args[2]}' found in capability '{args[1]}' referenced "
                        f"from node template {context} must have an element with index "
                        f"{position}", _HINT_VALUE)
            value = value[position]
        elif isinstance(value, dict):
            if key not in value:
                return (f"Property '{args[2]}' found in capability '{args[1]}' referenced "
                        f"from node template {context} must have an attribute named {key}",
                        _HINT_VALUE)
            value = value[key]
        else:
            return (f"Property '{args[2]}' found in capability '{args[1]}' referenced from "
                    f"node template {context} must be a dict", _HINT_VALUE)
    return None
