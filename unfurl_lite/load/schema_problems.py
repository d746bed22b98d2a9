"""The schema layer of validation: the JSON Schema says what shape each section has.

A fast compiled check (:mod:`~unfurl_lite.load.schemacheck`) answers "valid?"; only a
document it refuses pays for jsonschema, whose errors are turned into located problems
that say what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache

from unfurl_lite.errors import Problem
from unfurl_lite.load import schemacheck, yamlio
from unfurl_lite.load.problems import did_you_mean, mapping, problem_at
from unfurl_lite.model.narrow import is_list, is_map, type_of

TYPE_CHECKING = False
if TYPE_CHECKING:  # jsonschema is imported only to explain a document the quick check refused
    from typing import Any

    import jsonschema
    from jsonschema.exceptions import ValidationError

@cache
def _schema() -> dict[str, Any]:
    text = schemacheck.SCHEMA.read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # start-up: keeps jsonschema, attr, attrs (64 modules) off `plan`

    return jsonschema.Draft202012Validator(_schema())


@cache
def _quick_check() -> schemacheck.Check:
    try:
        return schemacheck.compile_schema(_schema())
    except schemacheck.KeywordNotCompiled:
        return lambda doc: False  # jsonschema decides everything


def schema_problems(doc: Any, file: str) -> Iterator[Problem]:
    plain: Any = doc if type_of(doc) is dict else yamlio.to_plain(doc)
    if _quick_check()(plain):
        return
    seen: set[tuple[str | None, str]] = set()
    for error in _validator().iter_errors(plain):
        for problem in (p for leaf in _leaves(error) for p in _explain(doc, file, leaf)):
            if (problem.path, problem.message) not in seen:
                seen.add((problem.path, problem.message))
                yield problem


def _leaves(error: ValidationError) -> list[ValidationError]:
    """For anyOf/oneOf, the errors of the branch that fits best, not "no branch fit".

    Branches whose type does not even match the value are ignored: a mapping with a typo
    should hear about the typo, not that it is not a string. All errors of the chosen
    branch are kept, so two bad operations in one interface are both reported.
    """
    if not error.context:
        return [error]
    depth = len(error.absolute_path)
    relevant = [
        e for e in error.context if not (e.validator == "type" and len(e.absolute_path) == depth)
    ]
    if not relevant:
        return [error]
    from jsonschema.exceptions import relevance  # start-up: keeps jsonschema off `plan`

    branch = max(relevant, key=relevance).relative_schema_path[0]
    chosen = [e for e in relevant if e.relative_schema_path[0] == branch]
    return [leaf for e in chosen for leaf in _leaves(e)]


def _explain(doc: Any, file: str, error: ValidationError) -> Iterator[Problem]:
    path = list(error.absolute_path)
    schema: Any = error.schema
    if error.validator == "additionalProperties" and is_map(error.instance):
        allowed = schema.get("properties", {})
        for key in error.instance:
            if key not in allowed:
                hint = did_you_mean(key, allowed) or f"allowed keys: {', '.join(allowed)}"
                yield problem_at(doc, [*path, key], file, f"unknown key {key!r}", hint)
        return
    yield problem_at(doc, path, file, _message(error), _hint(error))


def _message(error: ValidationError) -> str:
    value: Any = error.instance
    expected: Any = error.validator_value
    if error.validator == "type":
        expected = " or ".join(expected) if is_list(expected) else expected
        return f"expected {_article(expected)}, got {_kind(value)} {_short(value)}"
    if error.validator == "required":
        missing = [k for k in expected if k not in mapping(value)]
        return f"missing required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if error.validator == "enum":
        return f"{_short(value)} is not one of {', '.join(map(str, expected))}"
    if error.validator == "pattern":
        return f"{_short(value)} does not look like a changeId"
    if error.validator in ("minProperties", "maxProperties"):
        return "a requirement must be a mapping with exactly one key (its name)"
    if error.validator in ("anyOf", "oneOf") and error.context:
        types: list[Any] = [e.validator_value for e in error.context if e.validator == "type"]
        names = [t for group in types for t in (group if is_list(group) else [group])]
        if names:
            wanted = " or ".join(dict.fromkeys(map(str, names)))
            return f"expected {_article(wanted)}, got {_kind(value)} {_short(value)}"
    return error.message


def _hint(error: ValidationError) -> str | None:
    if error.validator == "required" and list(error.absolute_path)[-1:] == ["implementation"]:
        return "write `implementation: {className: Shell}` or a shell command string"
    if error.validator == "enum":
        choices: Any = error.validator_value
        return did_you_mean(str(error.instance), choices)
    if error.validator in ("minProperties", "maxProperties"):
        return "write `- host: server` or `- host: {node: server, relationship: ...}`"
    if error.validator == "pattern":
        return "changeIds are 'A' followed by 11 letters or digits"
    return None


def _article(name: str) -> str:
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def _kind(value: Any) -> str:
    names = {dict: "mapping", list: "list", str: "string", bool: "boolean", type(None): "null",
             int: "integer", float: "number"}
    kind = type_of(value)
    return names.get(kind, kind.__name__)


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, dict | list) else ""
    return text if len(text) <= 40 else text[:37] + "..."
