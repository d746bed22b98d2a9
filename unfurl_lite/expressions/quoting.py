"""What ``q`` quotes: text kept as written, which Unfurl renders once more where it reads a
quoted value as a plain value rather than as lazily evaluated data.

Unfurl 1.2.0 evaluates the data it holds lazily, once (its ``ResultsMap``), and marks what a
template rendered as unsafe (never rendered again); what ``q`` returns is neither, so it
is evaluated again in two places:

- the last key of a query (``$e::k`` of ``{k: {q: "{{ x }}"}}``, ``::app::p`` of a property
  ``{q: ...}``): Unfurl maps the value a query's last key selected, so quoted templates
  in it render (and a quoted expression fails);
- a template reading a variable whose value is an expression (``vars: {e: {q: "{{ x }}"}}``
  read as ``{{ e }}``): Ansible templates a variable's value when it is read.

A quoted value nested in data (``{{ e.k }}`` of ``{k: {q: ...}}``, ``$e`` alone) stays as
written. The mark lives only while an expression is evaluated: what ``resolve`` gives is
plain text.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Quoted(str):
    """Text ``q`` kept as written."""

    __slots__ = ()
    debug_name = "str"  # (what `type_debug` says, as of Unfurl's value)


class QuotedMap(dict[str, "Any"]):
    """A mapping ``q`` kept as written (its texts are Quoted)."""

    debug_name = "dict"


class QuotedList(list["Any"]):
    """A list ``q`` kept as written (its texts are Quoted)."""

    debug_name = "list"


#: how many values ``q`` quoted in this context: an evaluation that quoted none gives its
#: value as it is, without a walk
_made: contextvars.ContextVar[int] = contextvars.ContextVar("unfurl_lite_quoted", default=0)


def quotes_made() -> int:
    return _made.get()


def plain_since(made: int, value: Any) -> Any:
    """``value`` with its quoted text plain, when a ``q`` ran since ``quotes_made()`` was
    ``made``."""
    return value if _made.get() == made else unquoted(value)


def quote_all(value: Any) -> Any:
    """``value`` with each text in it marked as quoted."""
    _made.set(_made.get() + 1)
    return _marked(value)


def _marked(value: Any) -> Any:
    if type(value) is str:
        return Quoted(value)
    if isinstance(value, dict):
        return QuotedMap({k: _marked(v) for k, v in value.items()})
    if isinstance(value, list):
        return QuotedList([_marked(v) for v in value])
    return value


def is_quoted(value: Any) -> bool:
    """Whether ``value`` is itself what a ``q`` gave (not data holding it)."""
    return isinstance(value, Quoted | QuotedMap | QuotedList)


def unquoted(value: Any) -> Any:
    """``value`` with its quoted text plain (the value itself when it holds none)."""
    if isinstance(value, Quoted):
        return str(value)
    if isinstance(value, dict) and holds_quoted(value):
        return {k: unquoted(v) for k, v in value.items()}
    if isinstance(value, list) and holds_quoted(value):
        return [unquoted(v) for v in value]
    return value


def holds_quoted(value: Any) -> bool:
    if is_quoted(value):
        return True
    if isinstance(value, dict):
        return any(holds_quoted(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_quoted(v) for v in value)
    return False


def evaluated_again(value: Any, render: Callable[[str], Any],
                    evaluate: Callable[[Any], Any], is_ref: Callable[[Any], bool],
                    is_template: Callable[[Any], bool]) -> Any:
    """What ``q`` gave, read as a plain value: its templates rendered (``render``) and the
    expressions in its data evaluated (``evaluate``); anything else as it is."""
    if isinstance(value, Quoted):
        return render(value) if is_template(value) else str(value)
    if isinstance(value, QuotedMap):
        if is_ref(value):
            return evaluate(value)
        return {k: evaluated_again(v, render, evaluate, is_ref, is_template)
                for k, v in value.items()}
    if isinstance(value, QuotedList):
        return [evaluated_again(v, render, evaluate, is_ref, is_template) for v in value]
    return value
