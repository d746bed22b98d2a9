"""A requirement's ``node_filter``, as tosca-parser judges a candidate template when it
matches a requirement for Unfurl 1.2.0: each ``properties`` condition (a value the
property must equal, or one constraint clause: ``in_range``, ``valid_values``,
``greater_than``...) must hold of the template's property, each ``capabilities`` entry's
conditions of that capability's properties; a property the candidate does not have fails
its condition; a condition that is an expression (``eval``, ``q``) is not judged; and a
filter with neither section matches nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from unfurl_lite.model.constraints import constraint_problem, scalar_amount
from unfurl_lite.model.narrow import is_list, is_map

_SCALAR_TYPES = ("scalar-unit.size", "scalar-unit.time", "scalar-unit.frequency",
                 "scalar-unit.bitrate")


def matches(node_filter: Any, properties: Mapping[str, Any],
            capability_properties: Callable[[str], Mapping[str, Any] | None]) -> bool:
    """Whether a candidate passes ``node_filter``: ``properties`` are its own (defaults
    included), ``capability_properties(name)`` those of its capability of that name (None
    when it has none)."""
    if not is_map(node_filter):
        return True
    cap_matched = False
    capabilities = node_filter.get("capabilities")
    if capabilities:
        for entry in capabilities if is_list(capabilities) else ():
            if not is_map(entry) or len(entry) != 1:
                return False
            ((name, body),) = entry.items()
            found = capability_properties(str(name))
            if found is None or not _holds(body, found):
                return False
        cap_matched = True
    if "properties" in node_filter:
        return _holds(node_filter, properties)
    return cap_matched


def _holds(node_filter: Any, properties: Mapping[str, Any]) -> bool:
    conditions = node_filter.get("properties") if is_map(node_filter) else None
    for condition in conditions if is_list(conditions) else ():
        if not is_map(condition) or not condition:
            continue
        key, wanted = next(iter(condition.items()))
        if key not in properties:
            return False
        value = properties[key]
        if is_map(wanted):
            if "eval" in wanted or "q" in wanted:
                continue
            if any(constraint_problem({op: bound}, value, str(key), _scalar_type(value, bound))
                   for op, bound in wanted.items()):
                return False
        elif value != wanted:
            return False
    return True


def _scalar_type(value: Any, bound: Any) -> str:
    """The scalar-unit type both sides of a comparison are written in (``4 GB`` against
    ``[2 GB, 20 GB]``), or "" when they are not scalar-units of one type."""
    for type_name in _SCALAR_TYPES:
        bounds = bound if isinstance(bound, list) else [bound]
        if all(scalar_amount(type_name, item) != item for item in (value, *bounds)):
            return type_name
    return ""
