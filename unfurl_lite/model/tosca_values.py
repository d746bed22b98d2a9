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
from typing import Any

_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?(\.[0-9A-Za-z_]+)?(-\d+)?$")
_SCALAR = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*[A-Za-z]+\s*$")
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


def _is_range(value: Any) -> bool:
    if not isinstance(value, list) or len(value) != 2:
        return False
    bounds = [v for v in value if v != "UNBOUNDED"]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in bounds):
        return False
    return len(bounds) < 2 or bounds[0] <= bounds[1]


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
    **{name: (lambda v: isinstance(v, str) and bool(_SCALAR.match(v)), f"a valid {name}")
       for name in _SCALAR_TYPES},
}


def _short_name(type_name: str) -> str:
    """``tosca.datatypes.xxx``-free spelling: ``tosca:string`` and ``string`` alike."""
    for prefix in ("tosca:", "tosca.datatypes."):
        if type_name.startswith(prefix):
            return type_name[len(prefix):]
    return type_name


def type_problem(definition: Any, value: Any) -> str | None:
    """Why ``value`` does not fit ``definition`` (a property or attribute definition),
    in toscaparser's words; None when it does (a null is judged elsewhere)."""
    if value is None or not isinstance(definition, Mapping):
        return None
    type_name = definition.get("type")
    if not isinstance(type_name, str):
        return None
    check = _CHECKS.get(_short_name(type_name))
    if check is None:
        return None
    test, word = check
    if not test(value):
        return f'"{value}" is not {word}.'
    entries: Sequence[Any] = ()
    if isinstance(value, list) and _short_name(type_name) == "list":
        entries = value
    elif isinstance(value, Mapping) and _short_name(type_name) == "map":
        entries = list(value.values())
    schema = definition.get("entry_schema")
    if isinstance(schema, str):
        schema = {"type": schema}
    for entry in entries if isinstance(schema, Mapping) else ():
        found = type_problem(schema, entry)
        if found is not None:
            return found
    return None


__all__ = ["type_problem"]
