"""TOSCA's property constraints (``in_range``, ``valid_values``, ``greater_than``, ...),
judged by toscaparser's rules as Unfurl 1.2.0 applies them.

toscaparser compares the value it was given with the constraint's: a number given as text
does not compare with a number (``"8080"`` is out of ``in_range: [1, 65535]``), a list is
in ``valid_values`` when each of its entries is; a scalar-unit compares by its amount in
the unit's base (``10 GB`` with ``1 GB``). The messages are toscaparser's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence, Sized

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

_SCALAR = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]+)\s*$")
#: each scalar-unit type's units, by their multiple of the type's base unit
_UNITS: dict[str, dict[str, float]] = {
    "scalar-unit.size": {"b": 1, "kb": 1e3, "kib": 1024, "mb": 1e6, "mib": 1024 ** 2,
                         "gb": 1e9, "gib": 1024 ** 3, "tb": 1e12, "tib": 1024 ** 4},
    "scalar-unit.time": {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6,
                         "ns": 1e-9},
    "scalar-unit.frequency": {"hz": 1, "khz": 1e3, "mhz": 1e6, "ghz": 1e9},
    "scalar-unit.bitrate": {"bps": 1, "kbps": 1e3, "kibps": 1024, "mbps": 1e6,
                            "mibps": 1024 ** 2, "gbps": 1e9, "gibps": 1024 ** 3,
                            "tbps": 1e12, "tibps": 1024 ** 4},
}


#: toscaparser's reading of a scalar-unit value: an unsigned amount, then its unit
_AS_GIVEN = re.compile(r"^\s*(\d*\.?\d+)\s*(\w+)")
_WHOLE = re.compile(r"^\s*(\d+\.?\d*|\.\d+)\s*([A-Za-z]+)\s*$")
#: the units as toscaparser spells them in its refusal, in its order
_SPELLED = {
    "scalar-unit.size": ("B", "GB", "GiB", "KiB", "MB", "MiB", "TB", "TiB", "kB"),
    "scalar-unit.time": ("d", "h", "m", "ms", "ns", "s", "us"),
    "scalar-unit.frequency": ("GHz", "Hz", "MHz", "kHz"),
    "scalar-unit.bitrate": ("Gbps", "Gibps", "Kbps", "Kibps", "Mbps", "Mibps", "Tbps",
                            "Tibps", "bps"),
}


def scalar_problem(type_name: str, value: Any) -> str | None:
    """Why ``value`` is not a scalar-unit of ``type_name`` as toscaparser reads one (an
    amount, then one of the type's units in any case), in its words; None when it is
    (``-1 GB`` and ``lots`` are not scalar-units, ``1e3 MB``'s unit is ``e3``)."""
    found = _AS_GIVEN.match(value) if isinstance(value, str) else None
    if found is None:
        return f'"{value}" is not a valid scalar-unit.'
    units = _UNITS.get(type_name, {})
    if found.group(2).lower() not in units:
        spelled = list(_SPELLED.get(type_name, ()))
        return f'The unit "{found.group(2)}" is not valid. Valid units are "{spelled}".'
    if _WHOLE.match(value) is None:
        return f'"{value}" is not a valid scalar-unit.'
    return None


def scalar_amount(type_name: str, value: Any) -> Any:
    """A scalar-unit's amount in its type's base unit (``10 GB`` -> 1e10); the value
    itself when it is no scalar-unit of that type."""
    units = _UNITS.get(type_name)
    match = _SCALAR.match(value) if units is not None and isinstance(value, str) else None
    if match is None or units is None:
        return value
    factor = units.get(match.group(2).lower())
    return value if factor is None else float(match.group(1)) * factor


def _compare(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def judge(value: Any, bound: Any) -> bool:
        try:
            return bool(test(value, bound))
        except TypeError:  # toscaparser: values that do not compare fail the constraint
            return False
    return judge


def _in_range(value: YAMLValue, bounds: YAMLValue) -> bool:
    if not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2:
        return True
    low, high = (value[0], value[1]) if isinstance(value, list) and len(value) == 2 \
        else (value, value)
    try:
        if not isinstance(bounds[0], str) and low < bounds[0]:
            return False
        return isinstance(bounds[1], str) or not high > bounds[1]
    except TypeError:
        return False


def _valid_values(value: YAMLValue, allowed: YAMLValue) -> bool:
    if not isinstance(allowed, Sequence) or isinstance(allowed, str):
        return True
    if isinstance(value, list):
        return all(v in allowed for v in value)
    return value in allowed


def _length(test: Callable[[int, int], bool],
            kinds: tuple[type, ...]) -> Callable[[Any, Any], bool]:
    def judge(value: Any, bound: Any) -> bool:
        sized = value if isinstance(value, kinds) else None
        return isinstance(sized, Sized) and isinstance(bound, int) and test(len(sized), bound)
    return judge


def _pattern(value: Any, pattern: Any) -> bool:
    if not isinstance(pattern, str):
        return True
    if not isinstance(value, str):
        return False
    try:
        match = re.match(pattern, value)
    except re.error:
        return True
    return match is not None and match.end() == len(value)


#: each constraint's test (value, the constraint's value) and toscaparser's message
_RULES: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "equal": (_compare(lambda v, b: v == b), 'is not equal to "{c}"'),
    "greater_than": (_compare(lambda v, b: v > b), 'must be greater than "{c}"'),
    "greater_or_equal": (_compare(lambda v, b: v is not None and v >= b),
                         'must be greater than or equal to "{c}"'),
    "less_than": (_compare(lambda v, b: v < b), 'must be less than "{c}"'),
    "less_or_equal": (_compare(lambda v, b: v <= b), 'must be less than or equal to "{c}"'),
    "in_range": (_in_range, 'is out of range "(min:{c0}, max:{c1})"'),
    "valid_values": (_valid_values, 'is not valid. Expected a value from "{allowed}"'),
    "length": (_length(lambda n, b: n == b, (str,)), "must be equal to \"{c}\""),
    "min_length": (_length(lambda n, b: n >= b, (str, dict, list)), 'must be at least "{c}"'),
    "max_length": (_length(lambda n, b: n <= b, (str, dict, list)),
                   'must be no greater than "{c}"'),
    "pattern": (_pattern, 'does not match pattern "{c}"'),
}
_LENGTHS = ("length", "min_length", "max_length")


def constraint_problem(constraint: YAMLValue, value: Any, name: str,
                       type_name: str = "") -> str | None:
    """Why ``value`` (of the property ``name``, of TOSCA type ``type_name``) breaks
    ``constraint`` (a one-key mapping), in toscaparser's words; None when it holds or is
    a constraint this module does not judge (``schema``)."""
    if not isinstance(constraint, Mapping) or len(constraint) != 1:
        return None
    bound: YAMLValue
    ((key, bound),) = constraint.items()
    rule = _RULES.get(str(key))
    if rule is None:
        return None
    test, words = rule
    amount = scalar_amount(type_name, value)
    limit = [scalar_amount(type_name, b) for b in bound] if isinstance(bound, list) \
        else scalar_amount(type_name, bound)
    if test(amount, limit):
        return None
    pairs = bound if isinstance(bound, list) and len(bound) == 2 else (None, None)
    allowed = "[" + ", ".join(str(a) for a in bound) + "]" if isinstance(bound, list) else bound
    detail = words.format(c=bound, c0=pairs[0], c1=pairs[1], allowed=allowed)
    if key in _LENGTHS:
        return f'Length of value "{value}" of property "{name}" {detail}.'
    return f'The value "{value}" of property "{name}" {detail}.'


def constraints_problem(constraints: YAMLValue, value: YAMLValue, name: str, type_name: str = "",
                        each: bool = False) -> str | None:
    """The first of ``constraints`` that ``value`` breaks; with ``each`` (a data type's
    field, as toscaparser judges them) a list's entries one by one."""
    if not isinstance(constraints, list):
        return None
    values = value if each and isinstance(value, list) else [value]
    for constraint in constraints:
        for item in values:
            found = constraint_problem(constraint, item, name, type_name)
            if found is not None:
                return found
    return None


__all__ = ["constraint_problem", "constraints_problem", "scalar_amount"]
