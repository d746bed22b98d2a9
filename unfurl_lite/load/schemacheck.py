"""A yes/no check of a document against our JSON schema, compiled into closures.

jsonschema walks the schema for every value and builds error context as it goes: on a
200-node ensemble validation cost more than parsing. Valid documents are the common
case, so they are answered here, twenty times faster; only a document this check
rejects goes through jsonschema, which explains what is wrong and where. The compiler
knows exactly the keywords our schema uses and raises :class:`KeywordNotCompiled` for any other,
so it can never silently accept what jsonschema would refuse.
"""

from __future__ import annotations

import marshal
import re
from collections.abc import Callable
from pathlib import Path

from unfurl_lite.model.narrow import type_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from unfurl_lite.model.narrow import YAMLValue

#: the ensemble's JSON schema, shipped in the package (read as a file: importing
#: importlib.resources costs more than the read)
SCHEMA = Path(__file__).resolve().parent.parent / "schema" / "ensemble.schema.json"

Check: TypeAlias = "Callable[[Any], bool]"

_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$comment", "$defs",
                          "default", "examples"})


class KeywordNotCompiled(Exception):
    """The schema uses a keyword this compiler does not implement."""


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def compile_schema(root: dict[str, Any]) -> Check:
    """One closure per schema, the object keywords of a schema (``properties``,
    ``additionalProperties``, ``required``, ``minProperties``, ``maxProperties``) joined in
    one pass over the mapping's keys: at N=10,000 the schema is checked some 400,000 times."""
    cells: dict[str, list[Check]] = {}

    def ref(pointer: str) -> Check:
        if not pointer.startswith("#/$defs/"):
            raise KeywordNotCompiled(f"$ref {pointer}")
        name = pointer.removeprefix("#/$defs/")
        if name not in cells:
            cell: list[Check] = [_never]  # filled below; a recursive $ref reads it later
            cells[name] = cell
            cell[0] = build(root["$defs"][name])
        found = cells[name]
        if name in _REMEMBERED:
            return _remembered(lambda v: found[0](v))
        return lambda v: found[0](v)

    def build(schema: Any) -> Check:
        if schema is True:
            return _always
        if schema is False:
            return _never
        keys = {key: value for key, value in schema.items() if key not in _ANNOTATIONS}
        checks: list[Check] = []
        if _OBJECT_KEYWORDS & keys.keys():
            strict = keys.get("type") == "object"  # the type checked in the same call
            if strict:
                del keys["type"]
            checks.append(_object(schema, build, strict))
        checks += [_keyword(key, value, build, ref, root) for key, value in keys.items()
                   if key not in _OBJECT_KEYWORDS]
        checks = [check for check in checks if check is not _always]
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]

        def every(v: Any) -> bool:
            for check in checks:  # noqa: SIM110 (a loop: no generator per call)
                if not check(v):
                    return False
            return True

        return every

    return build(root)


#: definitions whose values repeat across a document's templates (a generated ensemble's
#: 10,000 templates declare the same interfaces): a value equal to one accepted before is
#: accepted without walking it again
_REMEMBERED = frozenset({"interfaces"})
#: how many accepted values each remembers (a process may check many documents)
_REMEMBERED_MOST = 256


def _remembered(check: Check) -> Check:
    """``check``, answering at once for a value whose marshalled bytes are those of a value
    it accepted: marshal keeps the order of keys and tells ``True`` from ``1`` and ``1.0``,
    so equal bytes are the same JSON value, and the check's verdict depends on nothing else.
    A value marshal does not take (a date) is checked each time."""
    accepted: set[bytes] = set()

    def check_remembered(v: Any) -> bool:
        if not v:
            return check(v)
        try:
            key = marshal.dumps(v)
        except ValueError:
            return check(v)
        if key in accepted:
            return True
        if not check(v):
            return False
        if len(accepted) >= _REMEMBERED_MOST:
            accepted.clear()
        accepted.add(key)
        return True

    return check_remembered


_OBJECT_KEYWORDS = frozenset({"properties", "additionalProperties", "required", "minProperties",
                              "maxProperties"})
_UNKNOWN = object()


def _object(schema: dict[str, Any], build: Callable[[Any], Check], strict: bool) -> Check:
    """The object keywords of one schema as one check: each key of the mapping looked up
    once among the declared properties."""
    if "patternProperties" in schema:
        raise KeywordNotCompiled("patternProperties")
    props: dict[str, Check | None] = {}
    for name, sub in schema.get("properties", {}).items():
        check = build(sub)
        props[name] = None if check is _always else check
    extra = build(schema.get("additionalProperties", True))
    required = tuple(schema.get("required", ()))
    least = schema.get("minProperties", 0)
    most = schema.get("maxProperties")

    def check_object(v: YAMLValue) -> bool:
        if not isinstance(v, dict):
            return not strict
        for name, item in v.items():
            check = props.get(name, _UNKNOWN)
            if check is _UNKNOWN:
                if extra is not _always and not extra(item):
                    return False
            elif check is not None and not check(item):  # type: ignore[operator]
                return False
        for name in required:
            if name not in v:
                return False
        return len(v) >= least and (most is None or len(v) <= most)

    return check_object


def _keyword(key: str, value: Any, build: Callable[[Any], Check],
             ref: Callable[[str], Check], root: dict[str, Any]) -> Check:
    """The check of one JSON Schema keyword, compiled once: the subset the ensemble schema
    uses, giving jsonschema's verdict without its cost per document."""
    if key == "type":
        kinds = tuple(_TYPES[t] for t in ([value] if isinstance(value, str) else value))
        if len(kinds) == 1:
            return kinds[0]
        return lambda v: any(kind(v) for kind in kinds)
    if key == "$ref":
        return ref(value)
    if key == "enum":
        return lambda v: any(_same(v, option) for option in value)
    if key == "items":
        each = build(value)
        if each is _always:
            return _always

        def every_item(v: YAMLValue) -> bool:
            if not isinstance(v, list):
                return True
            for item in v:  # noqa: SIM110 (a loop: no generator per call)
                if not each(item):
                    return False
            return True

        return every_item
    if key == "anyOf":
        by_kind = {kind: [build(sub) for sub in value if _may_accept(sub, accepted, root)]
                   for kind, accepted in _KINDS.items()}
        kind_of = _KIND_OF

        def any_option(v: Any) -> bool:
            for option in by_kind[kind_of.get(type_of(v)) or _kind(v)]:  # noqa: SIM110
                if option(v):
                    return True
            return False

        return any_option
    if key == "not":
        negated = build(value)
        return lambda v: not negated(v)
    if key == "pattern":
        regex = re.compile(value)
        return lambda v: not isinstance(v, str) or regex.search(v) is not None
    raise KeywordNotCompiled(key)


#: a value's kind (its Python type) -> the JSON types that may accept it
_KINDS = {"object": {"object"}, "array": {"array"}, "string": {"string"},
          "boolean": {"boolean"}, "null": {"null"}, "int": {"integer", "number"},
          "float": {"integer", "number"}}
_KIND_OF = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
            int: "int", float: "float"}


def _kind(value: Any) -> str:
    """The kind of a value of a subclass of a JSON type (an exact type is found in
    :data:`_KIND_OF`)."""
    for kind, python in (("object", dict), ("array", list), ("string", str),
                         ("boolean", bool), ("int", int), ("float", float)):
        if isinstance(value, python):
            return kind
    return "null"


def _may_accept(schema: YAMLValue, accepted: set[str], root: dict[str, Any]) -> bool:
    """Whether ``schema`` may accept a value of one of the JSON types ``accepted`` (an
    anyOf branch whose ``type`` rules the value out is not tried)."""
    for _ in range(20):  # a chain of $refs to a $ref... ends in a schema or gives up
        if not isinstance(schema, dict) or "$ref" not in schema or "type" in schema:
            break
        pointer = schema["$ref"]
        if not isinstance(pointer, str) or not pointer.startswith("#/$defs/"):
            return True
        schema = root.get("$defs", {}).get(pointer.removeprefix("#/$defs/"), True)
    if not isinstance(schema, dict) or "type" not in schema:
        return schema is not False
    kinds = schema["type"]
    return bool(accepted & ({kinds} if isinstance(kinds, str) else set(kinds)))


def _same(value: YAMLValue, option: YAMLValue) -> bool:
    """JSON equality: true is not 1, 1.0 is 1."""
    if isinstance(value, bool) or isinstance(option, bool):
        return isinstance(value, bool) and isinstance(option, bool) and value == option
    if isinstance(value, list) and isinstance(option, list):
        return len(value) == len(option) and all(map(_same, value, option))
    if isinstance(value, dict) and isinstance(option, dict):
        return value.keys() == option.keys() and all(_same(value[k], option[k]) for k in value)
    numbers = isinstance(value, int | float) and isinstance(option, int | float)
    return (type(value) is type(option) or numbers) and value == option
