"""The Jinja2 filters Unfurl adds to templates (its ``filter_plugins/ref.py``), for the
ensembles that use them: ``eval``/``ref``, ``map_value``/``mapValue``, ``sensitive`` and
``abspath``. Any other filter that is not one of Jinja's built-ins is refused by
``validate`` (see :mod:`~unfurl_lite.expressions.template_names`), never left to fail a task
at run time.

They run inside the template sandbox (``expressions/sandbox.py`` wraps every filter with its size
limits and taint rules): ``eval`` evaluates only the expressions the rest of the tool
evaluates, and ``abspath`` only computes a path inside the project.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.scope import current_ctx

if TYPE_CHECKING:
    from unfurl_lite.expressions.expr import EvalContext

#: Unfurl 1.2.0's filters that are not here; validate names them as not supported
UNSUPPORTED = frozenset({"to_label", "to_dns_label", "to_kubernetes_label",
                         "to_googlecloud_label", "get_dir", "which"})


def _ctx() -> EvalContext:
    ctx = current_ctx.get()
    if ctx is None:
        raise ExpressionError("this filter needs an operation's context")
    return ctx


def eval_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ {'get_input': 'x'} | eval }}`` / ``{{ 'a {{ b }}' | eval }}``: evaluate an
    expression (TOSCA functions, ``eval:`` expressions, templates)."""
    ctx = _ctx()
    if isinstance(value, str):  # a query ('::node::attribute') as {eval: ...} reads it
        return ctx.call("eval", value)
    if isinstance(value, Mapping) and len(value) == 1 and ctx.is_function(next(iter(value))):
        return ctx.evaluate(dict(value))
    if isinstance(value, Mapping) and "eval" not in value:
        return ctx.call("eval", dict(value))
    return ctx.evaluate(value)


def map_value_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ mapping | map_value }}``: evaluate every expression inside a value."""
    return _ctx().evaluate(value)


def sensitive_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ value | sensitive }}``: the value is a secret from here on (redacted)."""
    from unfurl_lite.security.taint import mark_secret

    return None if value is None else mark_secret(value)


def abspath_filter(path: Any, relativeTo: Any = None, mkdir: bool = False) -> str:
    """``{{ 'files/app.conf' | abspath }}``: the absolute path, relative to the project
    (Unfurl's default base); other bases and ``mkdir`` are refused."""
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
