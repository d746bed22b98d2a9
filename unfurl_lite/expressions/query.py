"""Unfurl's query expressions, parsed: ``::app::port``, ``.parents``, ``::*::[.type=App]``,
``$var::key``, ``port?``.

A query is a path of segments separated by ``::``. A segment is a key (an attribute, a
mapping key, a list index, or one of the keys starting with ``.`` that every instance
has), optionally with a test (``key=value``, ``key!=value``), a modifier (``!key``
negates a predicate, ``key?`` keeps only the first match) and predicates in brackets
(``key[.name=app]``), each itself a path evaluated from the segment's value.

The grammar is Unfurl 1.2.0's, quirks included (text after ``]`` that does not start
with ``::`` lends its test and modifier to the segment before it, and its key is
dropped), so a query means here what it means there. A query is parsed once per
process (:func:`parse_query` is cached): the same inputs evaluate for every task.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from unfurl_lite.errors import ExpressionError

Key = str | int


@dataclass(frozen=True)
class Segment:
    """One step of a query path: the key, its test, modifier and predicates."""

    key: Key
    test: tuple[str, str] | None = None  # ("=" or "!=", the text compared with)
    modifier: str = ""  # "!" (a negated predicate) or "?" (the first match only)
    predicates: tuple[tuple[Segment, ...], ...] = ()


_EMPTY = Segment("")


@dataclass(frozen=True)
class Query:
    """A parsed query: where it starts and the segments that follow."""

    text: str
    segments: tuple[Segment, ...]

    @property
    def absolute(self) -> bool:
        """``::name...``: starts from every instance, by name. A first segment that is
        the index ``0`` (``0::app``) starts there too: Unfurl tests the first key for
        emptiness, and ``0`` is as empty as ``""``."""
        first = self.segments[0]
        return _empty(first.key) and not first.predicates

    @property
    def variable(self) -> str | None:
        """``$name...``: starts from a variable's value."""
        key = self.segments[0].key
        return key[1:] if isinstance(key, str) and key.startswith("$") else None

    def searches_ancestors(self) -> bool:
        """A relative name (``port``, ``[.name=x]``) is looked up on the instance, then
        on each instance it is hosted on, the first found (Unfurl's implicit
        ``.ancestors``); inside ``foreach`` it is looked up on the item only."""
        first = self.segments[0]
        if isinstance(first.key, int) and first.key:
            raise ExpressionError(
                f"query {self.text!r} cannot start with a list index",
                hint="start it with '::name', '.' or '$variable'")
        if isinstance(first.key, str) and first.key and first.key[0] in ".$":
            return False
        return bool(first.key or first.predicates)


def _empty(key: Key) -> bool:
    return key == "" or (isinstance(key, int) and key == 0)


def _key(text: str) -> Key:
    try:
        return int(text)
    except ValueError:
        return text


def _segment(text: str) -> Segment:
    if not text:
        return _EMPTY
    modifier = ""
    if text[0] == "!":
        text, modifier = text[1:], "!"
    elif text[-1] == "?":
        text, modifier = text[:-1], "?"
    parts = re.split(r"(=|!=)", text, maxsplit=1)
    if len(parts) == 3:
        return Segment(_key(parts[0]), (parts[1], parts[2]), modifier)
    return Segment(_key(text), None, modifier)


def _path(text: str, start: Segment | None) -> list[Segment]:
    names = text.split("::")
    segments = [_segment(name.strip()) for name in names]
    if start is None:
        return segments
    if names[0]:  # `...]?` or `...]=x`: its test and modifier are the segment's before
        first = segments[0]
        segments[0] = Segment(start.key, first.test or start.test,
                              first.modifier or start.modifier, start.predicates)
        return segments
    return [start, *segments]


_BRACKET = re.compile(r"[\[\]]")


def _step(text: str, start: Segment | None = None) -> tuple[list[Segment], str]:
    """A path up to the first bracket and the predicates that follow it; and the rest."""
    found = _BRACKET.search(text)
    if found is None:
        return _path(text, start), ""
    segments = _path(text[: found.start()], start)
    bracket, rest = found.group(), text[found.end():]
    predicates: list[tuple[Segment, ...]] = []
    while bracket == "[":
        inner, rest = _step(rest)
        predicates.append(tuple(inner))
        # `[a][b]`: the rest starts with `[`, parsed (as Unfurl does) as a step of no key
        # holding `[b]`, the key's second predicate: it passes when an item of the value
        # (each item of a list, lists flattened) passes `b`
        bracket = rest[:1]
    last = segments[-1]
    segments[-1] = Segment(last.key, last.test, last.modifier, tuple(predicates))
    return segments, rest


#: the most brackets a query may open: a predicate inside a predicate, and each predicate
#: after a step's first, parses (and evaluates) one level deeper, and Python's recursion
#: limit is a few thousand levels
MAX_QUERY_BRACKETS = 100


@functools.lru_cache(maxsize=4096)
def parse_query(text: str) -> Query:
    """Parse once; an empty query is an error, as in Unfurl."""
    if text.count("[") > MAX_QUERY_BRACKETS:
        raise ExpressionError(
            f"more than {MAX_QUERY_BRACKETS} predicates ('[...]') in one query",
            hint="split the query: read part of it into a property, and query that")
    segments: list[Segment] = []
    rest = text
    last: Segment | None = None
    while rest:
        steps, rest = _step(rest, last)
        last = steps.pop() if steps else None
        segments.extend(steps)
    if last is not None:
        segments.append(last)
    if not segments:
        raise ExpressionError("empty query expression",
                              hint="write a path such as '::node::attribute'")
    return Query(text, tuple(segments))


def is_query(text: str) -> bool:
    """Whether a string given to ``eval`` is read as a query (anything but a template)."""
    return "{{" not in text and "{%" not in text
