"""A value checked against the TOSCA type its property or attribute declares.

Unfurl 1.2.0 validates each value a task sets on an instance against the definition of
that name (the attribute's, else the property's): a value the type refuses fails the
task, with toscaparser's words (``"blue-3" is not a map.``), though the value is kept.
These are toscaparser's rules: numbers and booleans may be given as text, a list or map
is checked entry by entry against its ``entry_schema``; ``any``, data types and types
this module does not know accept every value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from functools import partial

from unfurl_lite.model.constraints import constraints_problem, scalar_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?(\.[0-9A-Za-z_]+)?(-\d+)?$")
_SCALAR_TYPES = ("scalar-unit.size", "scalar-unit.time", "scalar-unit.frequency",
                 "scalar-unit.bitrate")


def _is_int(value: Any) -> bool:
    try:
        int(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _is_float(value: Any) -> bool:
    if isinstance(value, int | float):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or (
        isinstance(value, str) and value.lower() in ("true", "false"))


def _is_timestamp(value: Any) -> bool:
    if isinstance(value, date | datetime):
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _is_range(value: YAMLValue) -> bool:
    if not isinstance(value, list) or len(value) != 2:
        return False
    bounds = [v for v in value if v != "UNBOUNDED"]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in bounds):
        return False
    return len(bounds) < 2 or bounds[0] <= bounds[1]


def _is_scalar(type_name: str, value: Any) -> bool:
    return scalar_problem(type_name, value) is None


#: each type's test and toscaparser's word for what the value is not
_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "integer": (_is_int, "an integer"),
    "float": (_is_float, "a float"),
    "number": (_is_float, "a numeric"),
    "boolean": (_is_bool, "a boolean"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "map": (lambda v: isinstance(v, Mapping), "a map"),
    "timestamp": (_is_timestamp, "a valid timestamp"),
    "range": (_is_range, "a valid range"),
    "version": (lambda v: bool(_VERSION.match(str(v))), "a valid version"),
    **{name: (partial(_is_scalar, name), "a valid scalar-unit") for name in _SCALAR_TYPES},
}


def _short_name(type_name: str) -> str:
    """``tosca.datatypes.xxx``-free spelling: ``tosca:string`` and ``string`` alike."""
    for prefix in ("tosca:", "tosca.datatypes."):
        if type_name.startswith(prefix):
            return type_name[len(prefix):]
    return type_name


#: TOSCA's and Unfurl's data types whose fields are known here (the others accept any value)
NORMATIVE_DATA_TYPES: dict[str, dict[str, Any]] = {
    "tosca.datatypes.Root": {},
    "tosca.datatypes.Credential": {"derived_from": "tosca.datatypes.Root", "properties": {
        "protocol": {"type": "string", "required": False},
        "token_type": {"type": "string", "default": "password"},
        "token": {"type": "string"},
        "keys": {"type": "map", "required": False, "entry_schema": {"type": "string"}},
        "user": {"type": "string", "required": False}}},
    "tosca.datatypes.network.PortDef": {"derived_from": "integer",
                                        "constraints": [{"in_range": [1, 65535]}]},
    "unfurl.datatypes.EnvVar": {"derived_from": "tosca.datatypes.Root", "type": "string"},
    "unfurl.datatypes.EnvironmentVariables": {"derived_from": "tosca.datatypes.Root",
                                              "metadata": {"additionalProperties": True}},
}
_MAX_DEPTH = 32  # data types nested in data types: a cycle stops here


def _convert(type_name: str, value: Any) -> Any:
    """The value as toscaparser hands it to a property's constraints: text that is a
    number, as that number."""
    try:
        if type_name == "integer" and not isinstance(value, int):
            return int(value)
        if type_name in ("float", "number") and not isinstance(value, int | float):
            return float(value)
    except (TypeError, ValueError, OverflowError):
        pass
    return value


class DataTypes:
    """The data types a document declares (``data_types:``, and those of ``types:``) with
    TOSCA's and Unfurl's own: each one's fields (its ancestors' first), the simple type it
    refines, its constraints."""

    def __init__(self, declared: Mapping[str, Any] | None = None) -> None:
        self.declared = {**NORMATIVE_DATA_TYPES, **dict(declared or {})}

    def chain(self, name: str) -> list[Mapping[str, Any]]:
        """The type's definition and its ancestors', the root's first."""
        found: list[Mapping[str, Any]] = []
        current: Any = name
        while isinstance(current, str) and current in self.declared and len(found) < _MAX_DEPTH:
            body: YAMLValue = self.declared[current]
            if not isinstance(body, Mapping) or any(b is body for b in found):
                break
            found.append(body)
            current = body.get("derived_from")
        return list(reversed(found))

    def value_type(self, name: str) -> str | None:
        """The simple type a data type refines (``derived_from: string``, or Unfurl's
        ``type: string``), None for a data type with fields."""
        current: Any = name
        for _ in range(_MAX_DEPTH):
            if not isinstance(current, str):
                return None
            short = _short_name(current)
            if short in _CHECKS:
                return short
            body: YAMLValue = self.declared.get(current)
            if not isinstance(body, Mapping):
                return None
            if isinstance(body.get("type"), str):
                return _short_name(body["type"])
            current = body.get("derived_from")
        return None

    def fields(self, name: str) -> dict[str, YAMLValue]:
        out: dict[str, YAMLValue] = {}
        for body in self.chain(name):
            out.update(body.get("properties") or {})
        return out

    def is_open(self, name: str) -> bool:
        return any(body["metadata"].get("additionalProperties")
                   for body in self.chain(name) if isinstance(body.get("metadata"), Mapping))

    def knows(self, name: str) -> bool:
        return name in self.declared and name not in _OPAQUE


#: normative data types whose values toscaparser reads its own way: accepted as given
_OPAQUE = frozenset({"tosca.datatypes.network.PortSpec", "tosca:PortSpec"})
_NO_TYPES = DataTypes()


def is_expression(value: YAMLValue, functions: frozenset[str]) -> bool:
    """A value computed when read (a function's one-key mapping, a Jinja2 template):
    judged once evaluated, not as written."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    return isinstance(value, Mapping) and any(str(k) in functions for k in value)


def type_problem(definition: YAMLValue, value: YAMLValue, data_types: DataTypes | None = None,
                 name: str = "", functions: frozenset[str] = frozenset(),
                 _field: bool = False, _depth: int = 0) -> str | None:
    """Why ``value`` does not fit ``definition`` (a property or attribute definition
    named ``name``), in toscaparser's words: its type (a simple type, a list or map entry
    by entry, a data type field by field), then its constraints; None when it fits (a
    null, or an expression among ``functions``, is judged elsewhere)."""
    if value is None or not isinstance(definition, Mapping) or _depth > _MAX_DEPTH \
            or is_expression(value, functions):
        return None
    types = data_types or _NO_TYPES
    type_name = definition.get("type")
    if not isinstance(type_name, str):
        return None
    short = _short_name(type_name)
    simple = short if short in _CHECKS else types.value_type(type_name)
    if simple is not None:
        check = _CHECKS[simple]
        if not check[0](value):
            return scalar_problem(simple, value) if simple in _SCALAR_TYPES \
                else f'"{value}" is not {check[1]}.'
        found = _entries_problem(definition, value, simple, types, functions, _depth)
        if found is None and simple != short:  # a data type refining a simple type
            found = _datatype_constraints(types, type_name, value, name)
    elif types.knows(type_name):
        found = _fields_problem(types, type_name, value, functions, _depth)
    else:
        return None
    if found is not None:
        return found
    checked = value if _field else _convert(simple or "", value)
    return constraints_problem(definition.get("constraints"), checked, name,
                               simple or short, each=_field)


def _entries_problem(definition: Mapping[str, Any], value: YAMLValue, simple: str, types: DataTypes,
                     functions: frozenset[str], depth: int) -> str | None:
    entries: Sequence[Any] = ()
    if isinstance(value, list) and simple == "list":
        entries = value
    elif isinstance(value, Mapping) and simple == "map":
        entries = list(value.values())
    schema: YAMLValue = definition.get("entry_schema")
    if isinstance(schema, str):
        schema = {"type": schema}
    for entry in entries if isinstance(schema, Mapping) else ():
        found = type_problem(schema, entry, types, "None", functions, True, depth + 1)
        if found is not None:
            return found
    return None


def _datatype_constraints(types: DataTypes, type_name: str, value: Any, name: str) -> str | None:
    chain = types.chain(type_name)
    constraints = chain[-1].get("constraints") if chain else None
    return constraints_problem(constraints, value, name or "", types.value_type(type_name) or "")


def _fields_problem(types: DataTypes, type_name: str, value: YAMLValue, functions: frozenset[str],
                    depth: int) -> str | None:
    if not isinstance(value, Mapping):
        return f'{value} must be of type "{type_name}".'  # toscaparser's TypeMismatchError
    fields = types.fields(type_name)
    if not types.is_open(type_name):
        for key in value:
            if key not in fields:
                return (f'Data value of type "{type_name}" contains unknown field "{key}". '
                        "Refer to the definition to verify valid values.")
    missing = [k for k, d in fields.items() if isinstance(d, Mapping) and k not in value
               and d.get("default") is None and d.get("required", True) is not False]
    if missing:
        return f'Data value of type "{type_name}" is missing required field "{missing}".'
    for key, item in value.items():
        found = type_problem(fields.get(key), item, types, str(key), functions, True, depth + 1)
        if found is not None:
            return found
    return None


def with_defaults(definition: YAMLValue, value: YAMLValue, data_types: DataTypes | None) -> Any:
    """``value`` with the defaults of its data type's fields it leaves out (toscaparser
    fills them in when it validates the value), nested data types too; the value itself
    when there is nothing to add."""
    types = data_types or _NO_TYPES
    if not isinstance(definition, Mapping) or not isinstance(value, Mapping):
        return value
    type_name = definition.get("type")
    if not isinstance(type_name, str) or not types.knows(type_name) \
            or types.value_type(type_name) is not None:
        return value
    fields = types.fields(type_name)
    out = dict(value)
    for key, field_def in fields.items():
        if not isinstance(field_def, Mapping):
            continue
        if key not in out and field_def.get("default") is not None:
            out[key] = field_def["default"]
        elif key in out:
            out[key] = with_defaults(field_def, out[key], types)
    return out if out != value else value


__all__ = ["DataTypes", "is_expression", "type_problem", "with_defaults"]
