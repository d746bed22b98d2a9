"""A yes/no check of a document against our JSON schema, compiled into closures.

jsonschema walks the schema for every value and builds error context as it goes: on a
200-node ensemble validation cost more than parsing. Valid documents are the common
case, so they are answered here, twenty times faster; only a document this check
rejects goes through jsonschema, which explains what is wrong and where. The compiler
knows exactly the keywords our schema uses and raises :class:`KeywordNotCompiled` for any other,
so it can never silently accept what jsonschema would refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the ensemble's JSON schema, shipped in the package (read as a file: importing
#: importlib.resources costs more than the read)
SCHEMA = Path(__file__).resolve().parent.parent / "schema" / "ensemble.schema.json"

Check = Callable[[Any], bool]

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


def compile_schema(root: dict[str, Any]) -> Check:
    compiled: dict[str, Check] = {}

    def ref(pointer: str) -> Check:
        if not pointer.startswith("#/$defs/"):
            raise KeywordNotCompiled(f"$ref {pointer}")
        name = pointer.removeprefix("#/$defs/")
        if name not in compiled:
            compiled[name] = lambda v: compiled[name](v)  # recursion placeholder
            compiled[name] = build(root["$defs"][name])
        return lambda v: compiled[name](v)

    def build(schema: Any) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        checks = [_keyword(key, value, schema, build, ref) for key, value in schema.items()
                  if key not in _ANNOTATIONS]
        return lambda v: all(check(v) for check in checks)

    return build(root)


def _keyword(key: str, value: Any, schema: dict[str, Any], build: Callable[[Any], Check],
             ref: Callable[[str], Check]) -> Check:
    """The check of one JSON Schema keyword, compiled once: the subset the ensemble schema
    uses, giving jsonschema's verdict without its cost per document."""
    if key == "type":
        kinds = [_TYPES[t] for t in ([value] if isinstance(value, str) else value)]
        return lambda v: any(kind(v) for kind in kinds)
    if key == "$ref":
        return ref(value)
    if key == "enum":
        return lambda v: any(_same(v, option) for option in value)
    if key == "required":
        return lambda v: not isinstance(v, dict) or all(name in v for name in value)
    if key == "properties":
        props = {name: build(sub) for name, sub in value.items()}
        return lambda v: not isinstance(v, dict) or all(
            check(v[name]) for name, check in props.items() if name in v)
    if key == "additionalProperties":
        known = frozenset(schema.get("properties", {}))
        if "patternProperties" in schema:
            raise KeywordNotCompiled("patternProperties")
        extra = build(value)
        return lambda v: not isinstance(v, dict) or all(
            extra(item) for name, item in v.items() if name not in known)
    if key == "items":
        each = build(value)
        return lambda v: not isinstance(v, list) or all(each(item) for item in v)
    if key == "anyOf":
        options = [build(sub) for sub in value]
        return lambda v: any(option(v) for option in options)
    if key == "not":
        negated = build(value)
        return lambda v: not negated(v)
    if key == "pattern":
        regex = re.compile(value)
        return lambda v: not isinstance(v, str) or regex.search(v) is not None
    if key == "minProperties":
        return lambda v: not isinstance(v, dict) or len(v) >= value
    if key == "maxProperties":
        return lambda v: not isinstance(v, dict) or len(v) <= value
    raise KeywordNotCompiled(key)


def _same(value: Any, option: Any) -> bool:
    """JSON equality: true is not 1, 1.0 is 1."""
    if isinstance(value, bool) or isinstance(option, bool):
        return isinstance(value, bool) and isinstance(option, bool) and value == option
    if isinstance(value, list) and isinstance(option, list):
        return len(value) == len(option) and all(map(_same, value, option))
    if isinstance(value, dict) and isinstance(option, dict):
        return value.keys() == option.keys() and all(_same(value[k], option[k]) for k in value)
    numbers = isinstance(value, int | float) and isinstance(option, int | float)
    return (type(value) is type(option) or numbers) and value == option
