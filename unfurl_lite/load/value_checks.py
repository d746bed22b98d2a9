"""The values a document gives against the types that declare them, as toscaparser
checks them when Unfurl 1.2.0 loads a service template: a node template's property
values (their type, a data type's fields, list and map entries, constraints such as
``in_range`` and ``valid_values``) and the topology's inputs. A value Unfurl would refuse
("The value "64" of property "cpus" is out of range "(min:1, max:16)".") is refused at
``validate``; a value computed when read (a function, a template) is judged when a task
sets it (run/results.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from unfurl_lite.errors import Problem
from unfurl_lite.expressions import catalog
from unfurl_lite.load.builder import SENSITIVE_TYPES
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.load.type_tables import Types
from unfurl_lite.model.lineage import NORMATIVE_PROPERTIES, lineage, normative_name
from unfurl_lite.model.normative import DEFINED_TYPE_NAMES, NORMATIVE_PROPERTY_TYPES
from unfurl_lite.model.tosca_values import DataTypes, is_expression, type_problem

_HINT = "give a value its declared type and constraints accept (the type's definition says which)"


@cache
def _functions() -> frozenset[str]:
    """Every name that makes a one-key mapping an expression: TOSCA's functions, Unfurl's
    ``eval``/``ref``/``q`` and its expression functions."""
    return frozenset({*catalog.FUNCTIONS, "eval", "ref", "q", "get_input", "get_property",
                      "get_attribute", "concat", "join", "token", "get_nodes_of_type",
                      "get_operation_output", "get_artifact", "get_env", "has_env"})


def value_problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each template property and topology input whose value its definition refuses."""
    service = get_section(doc, SERVICE)
    node_types = mapping(service.get("node_types"))
    declared = {**{k: v for k, v in mapping(service.get("types")).items()
                   if k not in node_types}, **mapping(service.get("data_types"))}
    inputs_defs = get_section(doc, (*TOPOLOGY, "inputs"))
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    if not declared and not _has_typed(node_types) and not _has_typed(
            {"inputs": {"properties": inputs_defs}}) and not _assigns_capabilities(
            templates) and not typed_normative(
            {*(mapping(b).get("type") for b in templates.values()),
             *(p for b in node_types.values() for p in _parents(b))}):
        return  # no definition here says what a value must be
    data_types = DataTypes(declared)
    functions = _functions()
    for name, body in templates.items():
        body = mapping(body)
        definitions = _property_definitions(body.get("type"), node_types)
        for key, value in mapping(body.get("properties")).items():
            definition = definitions.get(key)
            found, hint = _value_problem(definition, value, data_types, str(key), functions)
            if found is not None:
                yield problem_at(doc, (*TOPOLOGY, "node_templates", name, "properties", key),
                                 file, f'{found} in node template "{name}"', hint)
    yield from _capability_problems(doc, file, templates, data_types, functions)
    inputs = mapping(mapping(doc.get("spec")).get("inputs"))
    for key, definition in inputs_defs.items():
        value = inputs.get(key, mapping(definition).get("default"))
        found, hint = _value_problem(definition, value, data_types, str(key), functions)
        if found is not None:
            yield problem_at(doc, (*TOPOLOGY, "inputs", key), file,
                             f'{found} (topology input "{key}")', hint)


def output_problems(doc: Any, file: str) -> Iterator[Problem]:
    """The topology's outputs as toscaparser judges them at load: each must give a
    ``value``, and a static value must be of the output's ``type``
    (tests/data/unfurl120/55-outputs)."""
    service = get_section(doc, SERVICE)
    data_types = DataTypes({**{k: v for k, v in mapping(service.get("types")).items()
                               if k not in mapping(service.get("node_types"))},
                            **mapping(service.get("data_types"))})
    for key, definition in get_section(doc, (*TOPOLOGY, "outputs")).items():
        if not isinstance(definition, dict) or "value" not in definition:
            yield problem_at(doc, (*TOPOLOGY, "outputs", key), file,
                             f'Output "{key}" is missing required field "value".',
                             f"give it a value (`{key}: {{value: ...}}`): an expression such "
                             "as `{get_attribute: [NODE, ATTRIBUTE]}` or `{eval: ...}`")
            continue
        if "type" not in definition:
            continue
        found = type_problem(definition, _as_given(definition, definition["value"]),
                             data_types, str(key), _functions())
        if found is not None:
            yield problem_at(doc, (*TOPOLOGY, "outputs", key, "value"), file,
                             f'{found} (topology output "{key}")', _HINT)


def _assigns_capabilities(templates: dict[str, Any]) -> bool:
    return any(mapping(body).get("capabilities") for body in templates.values())


def _capability_problems(doc: Any, file: str, templates: dict[str, Any],
                         data_types: DataTypes, functions: frozenset[str]) -> Iterator[Problem]:
    """Each property value a template's capability assignment gives that its capability
    type's definition refuses ('The value "0" of property "num_cpus" must be greater than or
    equal to "1".'), as toscaparser judges it (tests/data/unfurl120/58-capability-values);
    a capability its type does not have is capability_assignments'."""
    if not _assigns_capabilities(templates):
        return
    types = Types(doc)
    for name, body in templates.items():
        assigned = mapping(mapping(body).get("capabilities"))
        chain = types.chain(mapping(body).get("type")) if assigned else None
        if chain is None:
            continue
        declared = types.capabilities(chain)
        for capability, assignment in assigned.items():
            definitions = types.capability_definitions(declared.get(capability))
            for key, value in mapping(mapping(assignment).get("properties")).items():
                found, hint = _value_problem(definitions.get(key), value, data_types, str(key),
                                             functions)
                if found is not None:
                    yield problem_at(doc, (*TOPOLOGY, "node_templates", name, "capabilities",
                                           capability, "properties", key),
                                     file, f'{found} in node template "{name}"', hint)


def _value_problem(definition: Any, value: Any, data_types: DataTypes, key: str,
                   functions: frozenset[str]) -> tuple[str | None, str]:
    found = type_problem(definition, _as_given(definition, value), data_types, key, functions)
    if found is not None:
        return found, _HINT
    return _undefined_entry_type(definition, value, data_types, functions), (
        "define it under spec.service_template.data_types, or name a type Unfurl 1.2.0 "
        "defines (string, integer, tosca.datatypes.Credential, ...)")


def _undefined_entry_type(definition: Any, value: Any, data_types: DataTypes,
                          functions: frozenset[str]) -> str | None:
    """toscaparser looks a list's or map's entry type up once a value is given (an empty
    one too; an expression is judged when read): one nothing defines refuses the document,
    where without a value it is never looked up (tests/data/unfurl120/57-entry-schema-types)."""
    schema = mapping(definition).get("entry_schema")
    name = schema if isinstance(schema, str) else mapping(schema).get("type")
    if not isinstance(name, str) or not isinstance(value, list | dict) \
            or is_expression(value, functions) or _known_data_type(name, data_types):
        return None
    return f'No definition for type "{name}" found.'


def _known_data_type(name: str, data_types: DataTypes) -> bool:
    defined = DEFINED_TYPE_NAMES["data"]
    return (name in data_types.declared or name in defined or name in SENSITIVE_TYPES
            or name.startswith("cloudify.")
            or (name.startswith("tosca:") and name[len("tosca:"):] in defined))


def _parents(body: Any) -> tuple[str, ...]:
    derived_from = mapping(body).get("derived_from")
    if isinstance(derived_from, str):
        return (derived_from,)
    return tuple(p for p in derived_from if isinstance(p, str)) if isinstance(
        derived_from, list) else ()


def _as_given(definition: Any, value: Any) -> Any:
    """toscaparser reads a number or a boolean given for a ``string`` property as text."""
    if mapping(definition).get("type") in ("string", "tosca:string") \
            and isinstance(value, int | float | bool):
        return str(value)
    return value


def _has_typed(node_types: dict[str, Any]) -> bool:
    """Whether a property definition gives a type or constraints (a simple type too: a
    value that is not an integer for an ``integer`` is refused, as toscaparser refuses it;
    tests/data/unfurl120/54-simple-value-types)."""
    return any("type" in mapping(d) or "constraints" in mapping(d) or "entry_schema" in mapping(d)
               for body in node_types.values()
               for d in mapping(mapping(body).get("properties")).values())


def _property_definitions(type_name: Any, node_types: dict[str, Any]) -> dict[str, Any]:
    """The property definitions a template of ``type_name`` has, its type's last; a
    normative ancestor's typed ones too (a Database's ``port`` is an integer)."""
    out: dict[str, Any] = {}
    for name in reversed(lineage(type_name, node_types)):
        if name in node_types:
            out.update(mapping(mapping(node_types.get(name)).get("properties")))
            continue
        line: list[str] = []
        normative: str | None = normative_name(name)
        while normative is not None and normative not in line:
            line.append(normative)
            normative = NORMATIVE_PROPERTIES.get(normative, (None,))[0]
        for ancestor in reversed(line):
            out.update(NORMATIVE_PROPERTY_TYPES.get(ancestor, {}))
    return out


def typed_normative(names: Iterable[Any]) -> bool:
    """Whether one of ``names`` (template or parent types) is, or derives from, a normative
    type whose properties are typed: what makes a document's values worth judging."""
    for name in names:
        current: str | None = normative_name(name) if isinstance(name, str) else None
        while current is not None:
            if current in NORMATIVE_PROPERTY_TYPES:
                return True
            current = NORMATIVE_PROPERTIES.get(current, (None,))[0]
    return False


__all__ = ["output_problems", "value_problems"]
