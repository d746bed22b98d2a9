"""A parsed query walked over values (Unfurl's ``recursive_eval``): its segments, keys,
predicates ``[...]`` and tests ``key=value``, from the instances, a variable or the current
value. The expression a walk reaches is evaluated by the scope it walks in."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from unfurl_lite.errors import ExpressionError, UndefinedVariable
from unfurl_lite.expressions.entities import Entity, UnfurlEnum
from unfurl_lite.expressions.keys import read_key
from unfurl_lite.expressions.query import Key, Query, Segment
from unfurl_lite.expressions.quoting import is_quoted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from unfurl_lite.expressions.resolve import Scope
    from unfurl_lite.model.narrow import YAMLValue


class External:
    """A value with keys a ``select`` can read (``file``'s ``contents``, ``path``);
    itself, its ``get()``."""

    def get(self) -> Any:
        raise NotImplementedError

    def resolve_key(self, key: Any) -> Any:
        raise KeyError(key)

    def record_form(self) -> Any:
        return self.get()


#: what an expression and its results are: YAML, and the entities and externals queries
#: reach (declared so, a bare ``isinstance`` tells the checker what a mapping holds)
Value: TypeAlias = "YAMLValue | Entity | External"



def query_results(query: Query, scope: Scope) -> list[Any]:
    segments = query.segments
    if query.absolute:
        start: Any = scope.ctx.world().all()
        segments = segments[1:]
        if not segments:  # `0` alone: Unfurl's IndexError
            raise ExpressionError(f"query {query.text!r} names nothing to read",
                                  hint="a query that starts with the index 0 starts at "
                                  "every instance, as '::' does: write '::name' after it")
    elif query.variable is not None:
        start = scope.var(query.variable)
        if len(segments) == 1:
            return [start]
        segments = (dataclasses.replace(segments[0], key=""), *segments[1:])
    else:
        start = scope.current
        if not scope.foreach and query.searches_ancestors():
            segments = (Segment(".ancestors"),
                        dataclasses.replace(segments[0], modifier="?"), *segments[1:])
    return list(_walk([start], segments, scope))


def _singular(value: Any, segment: Segment) -> bool:
    if segment.key == "*":
        return False
    return not isinstance(value, list) or isinstance(segment.key, int)


def _items(value: Value) -> Iterable[Any]:
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, list):
        return value
    return ()


def _walk(values: Iterable[Any], segments: tuple[Segment, ...], scope: Scope) -> Iterator[Any]:
    first = segments[0]
    first_match = first.modifier == "?"
    value: Value
    for value in values:
        if _singular(value, first):
            rest = segments[1:]
            found: Iterable[Any] = _apply(value, first, scope, not rest)
        else:
            if first.key == "*":
                if not isinstance(value, Mapping):
                    continue
                rest = segments[1:]
            else:
                rest = segments  # a list: each item, the same segment
            found = _items(value)
        if rest:
            any_found = False
            for result in _walk(found, rest, scope):
                any_found = True
                yield result
            if any_found and first_match:
                return
        else:
            for result in found:
                yield result
                if first_match:
                    return


_MISSING = object()


def _apply(value: Any, segment: Segment, scope: Scope, last: bool = False) -> list[Any]:
    """The segment applied to one value: [] or [what it selects] (what the query's
    ``last`` key selects evaluated again when quoted, as Unfurl maps it)."""
    if segment.key != "":
        value = _project(value, segment.key, scope)
        if value is _MISSING:
            return []
        if is_quoted(value):
            if scope.is_ref(value):  # (Unfurl 1.2.0 fails reading it: wherever the key is)
                raise ExpressionError(
                    f"the query's key {segment.key!r} selected a quoted expression, which "
                    "Unfurl 1.2.0 cannot evaluate there",
                    hint="evaluate it with `eval:` instead of quoting it with `q:`")
            if last:
                value = scope.evaluated_again(value)
        elif last and isinstance(value, list | Mapping) and _holds_ref(value, scope):
            scope.settled[id(value)] = value
    for predicate in segment.predicates:
        if _singular(value, predicate[0]):
            candidates = [value]
        elif isinstance(value, list):
            candidates = value
        else:  # `[*...]` of what is not a list: Unfurl's "Wrong shape" TypeError
            raise ExpressionError(
                f"the predicate [{predicate[0].key}...] reads the items of a list, and the "
                f"value of {segment.key or 'the query'!r} is a {_kind(value)}",
                hint="a predicate starting with '*' applies to a list's items; read a "
                "mapping's values with '::*' instead")
        # walked to the end, as Unfurl lists a predicate's results before it tests them:
        # a later candidate's error is an error, though an earlier one matched
        matched = bool(list(_walk(candidates, predicate, scope)))
        if predicate[0].modifier == "!":
            if matched:
                return []
        elif not matched:
            return []
    if segment.test is not None and not _test(value, segment.test, scope,
                                              _computed(segment.key) and not last):
        return []
    return [value]


def _holds_ref(value: Any, scope: Scope) -> bool:
    """Whether data a query read holds an expression (what `q` kept, in a list or
    mapping): a loop over its containers."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, Mapping):
            if current is not value and scope.is_ref(current):
                return True
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return False


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, Entity):
        return "instance"
    return type(value).__name__


def _computed(key: Key) -> bool:
    """A ``.key`` (``.parents``, ``.targets``...) gives a plain list or mapping, which a
    test reads text as (Unfurl's ``list(text)``, ``dict(text)``) where another key follows
    it; any other list or mapping, and a ``.key``'s at the end of its path, is Unfurl's
    lazy ``ResultsList``/``ResultsMap``, which cannot be made from text: never equal."""
    return isinstance(key, str) and key.startswith(".")


def _project(value: Value, key: Any, scope: Scope) -> Any:
    try:
        if isinstance(key, str) and key.startswith("$"):
            key = scope.var(key[1:])
        if isinstance(value, Entity):
            scope.last = value
            if isinstance(key, str) and key.startswith("."):
                found = read_key(value, key)
            else:
                found = value.attribute(key)
        elif isinstance(value, External):
            found = value.resolve_key(key)
        elif isinstance(value, str | list | tuple | Mapping):
            container: Any = value  # the wrong kind of key is a miss (TypeError below)
            found = container[key]
        else:
            return _MISSING
        if scope.is_ref(found) and not is_quoted(found):  # (quoted: it is data)
            results = scope.results_where_walked(found)
            if not results:
                return _MISSING
            found = results[0] if len(results) == 1 else results
        return found
    except (KeyError, IndexError, TypeError, ValueError, UndefinedVariable):
        return _MISSING


def _test(value: Any, test: tuple[str, str], scope: Scope, plain: bool = False) -> bool:
    op, text = test
    try:
        compare = (scope.var(text[1:]) if text.startswith("$")
                   else _coerce(value, text, plain))
    except Exception:  # a value that cannot be compared (any type): it is not equal
        return op == "!="
    equal = value == compare
    return equal if op == "=" else not equal


def _coerce(value: Any, text: str, plain: bool = False) -> Any:
    """``key=text``: the text read as the value's type (Unfurl's ``type(value)(text)``:
    ``bool('false')`` is true, a number must parse; a list or mapping only when
    ``plain``, see :func:`_computed`)."""
    if isinstance(value, list | Mapping) and not plain:
        raise TypeError("a property's list or mapping is not compared with text")
    if isinstance(value, UnfurlEnum):  # (Status("1"): no member has the value "1")
        raise TypeError("an enum is not compared with text")
    if isinstance(value, Mapping):
        if text:  # (dict(text): each character is no (key, value) pair)
            raise ValueError("a mapping is not made from text")
        return {}
    if isinstance(value, bool):
        return bool(text)
    if isinstance(value, int):
        return int(text)
    if isinstance(value, float):
        return float(text)
    if isinstance(value, str):
        return text
    if isinstance(value, list):
        return list(text)
    raise TypeError(f"cannot compare {type(value).__name__} with text")
