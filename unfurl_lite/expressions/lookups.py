"""Ansible lookup plugins, as Unfurl's templates and ``{eval: {lookup: ...}}`` use them:
``file`` (a project file), ``unfurl`` (queries), and the pure ones (``items``, ``list``,
``dict``, ``indexed_items``, ``sequence``...); ``env`` is the sandbox's (``get_env``'s
rules). The catalog (:mod:`.catalog`) says which plugin is which, and why the others
(commands, URLs, files written) are refused.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions import catalog

if TYPE_CHECKING:
    from unfurl_lite.expressions.resolve import Scope
    from unfurl_lite.model.narrow import YAMLValue

#: plugins that fail whenever the ``lookup`` eval function runs them in Unfurl 1.2.0 (it
#: hands them their terms as a tuple, and they test for a list): refused by name
EVAL_FORM_FAILS = {"dict": "with_dict expects a dict",
                   "indexed_items": "with_indexed_items expects a list",
                   "subelements": "subelements lookup expects a list of two or three items"}


def eval_form_refusal(plugin: str) -> tuple[str, str] | None:
    """(message, hint) when the eval function cannot run ``plugin`` as Unfurl cannot."""
    reason = EVAL_FORM_FAILS.get(plugin.removeprefix("ansible.builtin."))
    if reason is None:
        return None
    return (f"lookup: the {plugin!r} plugin is not supported from the `lookup` eval "
            f"function (Unfurl 1.2.0 always fails there: {reason})",
            f"use the template form: \"{{{{ lookup('{plugin}', ...) }}}}\"")


def run_lookup(plugin: str, terms: list[Any], options: Mapping[str, Any],
               scope: Scope) -> list[Any]:
    """``{eval: {lookup: {PLUGIN: TERMS, OPTION: VALUE}}}``: the catalog's plugin, in this
    scope; ``env`` reads what the spec names, as ``get_env`` does."""
    # start-up: keeps expressions.scope (3 modules) off lookups's import until run_lookup() runs
    from unfurl_lite.expressions.scope import current_ctx

    if plugin.removeprefix("ansible.builtin.") == "env":
        # start-up: keeps expressions.expr (12 modules) off lookups's import until run_lookup() runs
        from unfurl_lite.expressions.expr import environment_value

        default = options.get("default", "")
        found = [environment_value(str(term), scope.ctx) for term in terms]
        return [default if value is None else value for value in found]
    function = catalog.implementation("lookup", plugin)
    if function is None:
        message, hint = catalog.refusal("lookup", plugin)
        raise ExpressionError(message, hint=hint)
    token = current_ctx.set(scope.ctx)
    try:
        return list(function(*terms, **options))
    finally:
        current_ctx.reset(token)


def _context() -> Any:
    # start-up: keeps expressions.scope (3 modules) off lookups's import until _context() runs
    from unfurl_lite.expressions.scope import current_ctx

    ctx = current_ctx.get()
    if ctx is None:
        raise ExpressionError("this lookup needs an operation's context")
    return ctx


def file_lookup(*terms: Any, **options: Any) -> list[str]:
    """``lookup('file', PATH)``: a project file's text (right-stripped, as Ansible's)."""
    ctx = _context()
    return [_file(ctx, str(term), options) for term in terms]


def unfurl_lookup(*terms: Any, **options: Any) -> list[Any]:
    """``lookup('unfurl', QUERY)``: each query's value (Unfurl's lookup plugin)."""
    # start-up: keeps expressions.resolve off lookups's import until unfurl_lookup() runs
    from unfurl_lite.expressions.resolve import Scope as _Scope
    from unfurl_lite.expressions.resolve import resolve

    scope = _Scope(_context(), None, {})
    return [resolve(str(term), scope) for term in terms]


def _file(ctx: Any, name: str, options: Mapping[str, Any]) -> str:
    # start-up: keeps expressions.files (11 modules) off lookups's import until _file() runs
    from unfurl_lite.expressions import files

    path = files.confined(name, files.project_dir(ctx), ctx, "lookup('file')")
    text = files.read_text(ctx, path, name)
    if options.get("rstrip", True):
        text = text.rstrip()
    if options.get("lstrip", False):
        text = text.lstrip()
    return text


def _flat(terms: list[Any]) -> list[Any]:
    found: list[Any] = []
    term: YAMLValue
    for term in terms:
        found.extend(term if isinstance(term, list) else [term])
    return found


def _pure_plugin(name: str) -> Any:
    def plugin(*terms: Any, **options: Any) -> list[Any]:
        return _pure(name, list(terms), options)

    plugin.__name__ = name
    return plugin


def _pure(plugin: str, terms: list[Any], options: Mapping[str, Any]) -> list[Any]:

    if plugin == "items":
        return _flat(terms)
    if plugin == "list":
        return list(terms)
    if plugin == "indexed_items":
        return [[i, v] for i, v in enumerate(_flat(terms))]
    if plugin == "dict":
        found: list[Any] = []
        term: YAMLValue
        for term in terms:
            if not isinstance(term, Mapping):
                raise ExpressionError("lookup('dict') expects a mapping")
            found.extend({"key": k, "value": v} for k, v in term.items())
        return found
    if plugin == "together":
        return [list(t) for t in itertools.zip_longest(*terms)]
    if plugin == "nested":
        return [list(t) for t in itertools.product(*terms)]
    if plugin == "sequence":
        return [v for term in terms for v in _sequence(str(term), options)]
    return _subelements(terms)


def _sequence(term: str, options: Mapping[str, Any]) -> list[str]:
    settings: dict[str, Any] = {"start": 1, "end": None, "count": None, "stride": 1,
                                "format": "%d"}
    shortcut = re.fullmatch(r"(?:(-?\d+)-)?(-?\d+)(?:/(-?\d+))?(?::(.+))?", term.strip())
    if shortcut:
        start, end, stride, fmt = shortcut.groups()
        settings.update(start=int(start or 1), end=int(end))
        if stride:
            settings["stride"] = int(stride)
        if fmt:
            settings["format"] = fmt
    else:
        for part in term.split():
            key, _, value = part.partition("=")
            settings[key] = value if key == "format" else int(value, 0)
    settings.update(options)
    start, stride = int(settings["start"]), int(settings["stride"])
    if settings["count"] is not None:
        end = start + (int(settings["count"]) - 1) * stride
    elif settings["end"] is not None:
        end = int(settings["end"])
    else:
        raise ExpressionError("lookup('sequence'): give an end or a count")
    if stride == 0 or abs(end - start) // abs(stride) > 100000:
        raise ExpressionError("lookup('sequence'): at most 100000 items")
    step = stride if end >= start else -abs(stride)
    return [str(settings["format"]) % i for i in range(start, end + (1 if step > 0 else -1), step)]


def _subelements(terms: list[Any]) -> list[Any]:
    """Ansible's ``subelements``: each item with each element of its list under a (dotted)
    key; the item is given without that key, as Ansible gives it. A mapping's values are
    the items; an item marked ``skipped`` is left out; ``{skip_missing: true}`` as a third
    term leaves out an item without the key instead of failing."""
    if not 2 <= len(terms) <= 3 or not isinstance(terms[0], list | Mapping) or \
            not isinstance(terms[1], str):
        raise ExpressionError("lookup('subelements') expects a list (or a mapping), a key, "
                              "and optionally {skip_missing: true}")
    flags = terms[2] if len(terms) == 3 else {}
    if not isinstance(flags, Mapping) or set(flags) - {"skip_missing"}:
        raise ExpressionError("lookup('subelements'): the third term takes only skip_missing")
    given: YAMLValue = terms[0]
    items: list[Any]
    if isinstance(given, Mapping):
        if given.get("skipped", False) is not False:
            return []
        items = list(given.values())
    else:
        items = list(given) if isinstance(given, list) else []
    keys = terms[1].split(".")
    found: list[Any] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ExpressionError(f"lookup('subelements') expects a mapping, got {item!r}")
        if item.get("skipped", False) is not False:
            continue
        rest, elements = _without_subelements(item, keys, bool(flags.get("skip_missing")))
        found.extend([rest, element] for element in elements)
    return found


def _without_subelements(item: Mapping[str, Any], keys: list[str],
                         skip_missing: bool) -> tuple[Any, list[Any]]:
    copy: dict[str, Any] = dict(item)
    holder = copy
    for depth, key in enumerate(keys):
        if key not in holder:
            if skip_missing:
                return copy, []
            raise ExpressionError(f"lookup('subelements'): could not find {key!r} key in "
                                  f"iterated item {dict(holder)!r}")
        value = holder[key]
        if depth < len(keys) - 1:
            if not isinstance(value, Mapping):
                if skip_missing:
                    return copy, []
                raise ExpressionError(f"lookup('subelements'): the key {key} should point "
                                      f"to a mapping, got {value!r}")
            holder[key] = holder = dict(value)
        elif not isinstance(value, list):
            raise ExpressionError(f"lookup('subelements'): the key {key} should point to a "
                                  f"list, got {value!r}")
        else:
            del holder[key]
            return copy, value
    return copy, []


#: Ansible's lookup plugins that compute from their terms only
PURE = {name: _pure_plugin(name) for name in (
    "items", "indexed_items", "list", "nested", "together", "sequence", "subelements", "dict")}
