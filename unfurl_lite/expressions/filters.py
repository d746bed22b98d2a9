"""The Jinja2 filters Unfurl adds to templates (its ``filter_plugins/ref.py``), for the
ensembles that use them: ``eval``/``ref``, ``map_value``/``mapValue``, ``sensitive`` and
``abspath``. Any other filter that is not one of Jinja's built-ins is refused by
``validate`` (see :func:`unknown_filters`), never left to fail a task at run time.

They run inside the template sandbox (``expressions/sandbox.py`` wraps every filter with its size
limits and taint rules): ``eval`` evaluates only the expressions the rest of the tool
evaluates, and ``abspath`` only computes a path inside the project.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import Any

#: Unfurl 1.2.0's filters that are not here; validate names them as not supported
UNSUPPORTED = frozenset({"to_label", "to_dns_label", "to_kubernetes_label",
                         "to_googlecloud_label", "get_dir", "which"})


def _ctx() -> Any:
    from unfurl_lite.errors import ExpressionError
    from unfurl_lite.expressions.sandbox import current_ctx

    ctx = current_ctx.get()
    if ctx is None:
        raise ExpressionError("this filter needs an operation's context")
    return ctx


def eval_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ {'get_input': 'x'} | eval }}`` / ``{{ 'a {{ b }}' | eval }}``: evaluate an
    expression (TOSCA functions, ``eval:`` expressions, templates)."""
    from unfurl_lite.expressions.expr import FUNCTIONS, evaluate

    ctx = _ctx()
    if isinstance(value, str):  # a query ('::node::attribute') as {eval: ...} reads it
        return FUNCTIONS["eval"](value, ctx, 0)
    if isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in FUNCTIONS:
        return evaluate(dict(value), ctx)
    if isinstance(value, Mapping) and "eval" not in value:
        return FUNCTIONS["eval"](dict(value), ctx, 0)
    return evaluate(value, ctx)


def map_value_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ mapping | map_value }}``: evaluate every expression inside a value."""
    from unfurl_lite.expressions.expr import evaluate

    return evaluate(value, _ctx())


def sensitive_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ value | sensitive }}``: the value is a secret from here on (redacted)."""
    from unfurl_lite.security.taint import mark_secret

    return None if value is None else mark_secret(value)


def abspath_filter(path: Any, relativeTo: Any = None, mkdir: bool = False) -> str:
    """``{{ 'files/app.conf' | abspath }}``: the absolute path, relative to the project
    (Unfurl's default base); other bases and ``mkdir`` are refused."""
    from unfurl_lite.errors import ExpressionError

    if relativeTo not in (None, "", "src", "project") or mkdir:
        raise ExpressionError(
            f"abspath: relativeTo={relativeTo!r} / mkdir are not supported here",
            hint="paths are relative to the project directory",
        )
    ctx = _ctx()
    base = str(ctx.project_root) if ctx.project_root is not None else os.getcwd()
    return os.path.normpath(os.path.join(base, str(path)))


def unfurl_filters() -> dict[str, Any]:
    return {
        "eval": eval_filter,
        "ref": eval_filter,
        "map_value": map_value_filter,
        "mapValue": map_value_filter,
        "sensitive": sensitive_filter,
        "abspath": abspath_filter,
    }


@functools.lru_cache(maxsize=4096)
def _filters_in(text: str) -> tuple[str, ...]:
    from jinja2 import nodes

    from unfurl_lite.expressions.sandbox import environment

    try:
        tree = environment().parse(text)
    except Exception:  # a syntax error is reported when the template renders
        return ()
    return tuple(node.name for node in tree.find_all(nodes.Filter))


@functools.lru_cache(maxsize=4096)
def _lookups_in(text: str) -> tuple[str, ...]:
    from jinja2 import nodes

    from unfurl_lite.expressions.sandbox import environment

    try:
        tree = environment().parse(text)
    except Exception:
        return ()
    found = []
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name in ("lookup", "query"):
            first = call.args[0] if call.args else None
            found.append(str(first.value) if isinstance(first, nodes.Const) else "?")
    return tuple(found)


def unsupported_lookups(text: str) -> Iterator[str]:
    """Ansible lookup plugins a template calls that are not here (all but ``env``)."""
    if "lookup" not in text and "query" not in text:
        return
    for plugin in _lookups_in(text):
        if plugin != "env":
            yield plugin


def unknown_filters(text: str) -> Iterator[str]:
    """The filters a template uses that this tool does not have."""
    if "|" not in text or ("{{" not in text and "{%" not in text):
        return
    known = _known()
    for name in _filters_in(text):
        if name not in known:
            yield name


@functools.lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    from unfurl_lite.expressions.sandbox import environment

    return frozenset(environment().filters)
