"""Ansible's native types: how the pieces a template (or one of its blocks) outputs become
one value, and the text that must stay text.

Unfurl renders with Ansible's native environment, whose ``concat`` is used for the whole
template and for every block Jinja2 joins on its own (``{% filter %}``, ``{% set %}``
blocks, macros, ``{% call %}``): a block that outputs ``[1, 2]`` gives a list to its filter.
Ansible's string filters (``string``, ``to_json``, ``to_yaml``...) mark their result as
text (``NativeJinjaText``) so that no concat reads it as a literal.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, MappingView

from unfurl_lite.expressions.lazy import LazyInputs, LazyValues
from unfurl_lite.expressions.limits import MAX_TEMPLATE_RESULT, bounded_concat
from unfurl_lite.expressions.quoting import Quoted
from unfurl_lite.model.narrow import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

#: filters whose result stays text (Ansible's ``STRING_TYPE_FILTERS``): asking for a string
#: is how a template keeps ``"42"`` from becoming the number 42
STRING_FILTERS = frozenset({"string", "to_json", "to_nice_json", "to_yaml", "to_nice_yaml",
                            "ppretty", "json"})


class NativeJinjaText(str):
    """Text a string filter made: no concat reads it as a literal. Its name is Ansible's,
    which ``type_debug`` shows; it lives only while a template renders (what a render
    gives is plain ``str``)."""

    __slots__ = ()


def text_filter(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a string filter) with its text result marked as NativeJinjaText."""

    @functools.wraps(function)
    def marked(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        return NativeJinjaText(result) if type(result) is str else result

    return marked


_END = object()  # the end of a template's output pieces


def native_concat(pieces: Iterable[Any]) -> Any:
    """Ansible's ``ansible_native_concat``, bounded: nothing is null, one piece that is not
    text is itself, a string filter's text stays text, and any other text is read as a
    Python literal when it is one (a quoted literal keeps its quotes)."""
    iterator = iter(pieces)
    first: Any = next(iterator, _END)
    if first is _END:
        return None
    second: Any = next(iterator, _END)
    if second is _END:
        if isinstance(first, NativeJinjaText) or not isinstance(first, str):
            return first
        return native_value(first)
    return native_value(bounded_concat(itertools.chain([first, second], iterator)))


def native_output(pieces: Iterator[Any]) -> Any:
    """The one value a whole template output (not text), else the output's text; null
    when it output nothing. Its literals are read by :func:`native_value` afterwards."""
    iterator = iter(pieces)
    first: Any = next(iterator, _END)
    if first is _END:
        return None
    second: Any = next(iterator, _END)  # a piece may itself be None: `x {{ none }} y` is "x None y"
    if second is _END and callable(getattr(first, "digest_form", None)):
        return first  # (a temporary file's path keeps what it is digested as)
    if second is _END and isinstance(first, NativeJinjaText):
        return first
    if second is _END and not isinstance(first, str):
        from jinja2 import Undefined  # start-up: keeps jinja2, markupsafe (30 modules) off `deploy`

        return str(first) if isinstance(first, Undefined) else plain_value(first)
    return bounded_concat(itertools.chain([first] if second is _END else [first, second],
                                          iterator))


def plain_value(value: YAMLValue | Iterator[Any]) -> Any:
    """A template's value with the read-only views it read as plain mappings, and the
    text string filters made or ``q`` quoted as plain text."""
    if isinstance(value, NativeJinjaText | Quoted):
        return str(value)
    if isinstance(value, LazyInputs | LazyValues):
        return {k: plain_value(value[k]) for k in value}
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    if isinstance(value, Iterator) and not isinstance(value, str):
        return [plain_value(v) for v in itertools.islice(value, MAX_TEMPLATE_RESULT)]
    return value


def finalize(value: Any) -> Any:
    """Each ``{{ }}``'s value as Ansible's native environment finalizes it: an iterator,
    a mapping's view or a range unrolled into a list, and a missing name anywhere inside
    a list or mapping fails (``{{ [nosuch] }}``, ``map(attribute='x')`` of an item without
    it), as the name alone does."""
    if isinstance(value, str):
        return value
    if isinstance(value, Iterator | MappingView | range):
        items = cast("Iterable[Any]", value)  # (each of them iterates)
        value = list(itertools.islice(items, MAX_TEMPLATE_RESULT))
    _fail_on_missing(value)
    return value


def _fail_on_missing(value: Any) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _fail_on_missing(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _fail_on_missing(item)
    else:
        fail = getattr(type(value), "_fail_with_undefined_error", None)
        if fail is not None:
            fail(value)


def native_value(rendered: str) -> Any:
    """Ansible's ``ansible_native_concat`` applied to a rendered text."""
    if not rendered:
        return rendered
    import ast  # start-up: keeps ast off a job that renders nothing (`deploy`)

    try:
        value = ast.literal_eval(ast.parse(rendered, mode="eval"))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return rendered
    if isinstance(value, str):  # a quoted literal keeps its quotes (Ansible's rule)
        return rendered[0] + value + rendered[0]
    return value
