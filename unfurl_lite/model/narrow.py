"""Parsed YAML, narrowed for the type checker: ``is_map`` and ``is_list`` are
``isinstance`` checks that also say what a mapping or sequence read from YAML holds (string
keys, any YAML values), where a bare ``isinstance`` on untyped data leaves its keys and
values unknown to the checker (and every name read from it after). Used where parsed data
is walked outside the hottest loops (a call costs a little more than ``isinstance``).

``new_dict``, ``new_list`` and ``new_set`` are the builtins themselves, typed for a
dataclass field's ``default_factory`` (a bare ``dict`` factory leaves the field's keys and
values unknown to the checker): no cost at run time.

``YAMLValue`` is what a walker over parsed YAML (or JSON, or a rendered value) meets, its
containers' contents left open: a walker's value declared one is narrowed by a bare
``isinstance`` to a mapping or sequence whose contents the checker knows (``Any``), at no
cost; on a value declared ``Any`` or ``object`` the same ``isinstance`` leaves them unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime
    from typing import Any, TypeAlias, TypeGuard
    from typing import cast as cast  # typing's, as the type checker knows them
    from typing import overload as overload
else:  # at run time: what typing's do, without importing typing (some 60 classes)

    def cast(type_: object, value: object) -> object:
        """``typing.cast``: the value itself."""
        return value

    def overload(function: object) -> object:
        """``typing.overload``: the function itself (the last definition replaces it)."""
        return function


#: a mapping read from YAML whose keys a user chooses and whose values are any YAML
YAMLMap: TypeAlias = "dict[str, Any]"
#: a YAML sequence of any YAML
YAMLList: TypeAlias = "list[Any]"
#: a scalar parsed YAML holds (a timestamp is a date or a datetime)
YAMLScalar: TypeAlias = "str | int | float | bool | datetime.date | None"
#: any value of parsed YAML, JSON or a rendered template, one level deep (see the docstring)
YAMLValue: TypeAlias = "Mapping[str, Any] | list[Any] | tuple[Any, ...] | YAMLScalar"
#: a YAML mapping or sequence, as a walker's stack holds it
YAMLContainer: TypeAlias = "dict[str, Any] | list[Any]"

#: ``field(default_factory=new_dict)``: ``dict``, typed for the field the annotation declares
new_dict: Callable[[], dict[Any, Any]] = dict
new_list: Callable[[], list[Any]] = list
new_set: Callable[[], set[Any]] = set
#: ``type(value)`` (the builtin itself): a value's class, known to the checker on ``Any``
type_of: Callable[[object], type[Any]] = type


def is_map(value: object) -> TypeGuard[YAMLMap]:
    """``isinstance(value, dict)``, for a YAML mapping."""
    return isinstance(value, dict)


def is_list(value: object) -> TypeGuard[YAMLList]:
    """``isinstance(value, list)``, for a YAML sequence."""
    return isinstance(value, list)


def is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``: any mapping (a lazy one too), for reading."""
    return isinstance(value, Mapping)
