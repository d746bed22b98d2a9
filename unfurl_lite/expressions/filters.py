"""The Jinja2 filters Unfurl adds to templates (its ``filter_plugins/ref.py``), for the
ensembles that use them: ``eval``/``ref``, ``map_value``/``mapValue``, ``sensitive`` and
``abspath``. They are registered in :mod:`.catalog`, which says what every other filter
name is (Jinja's built-ins are known; the rest is refused by ``validate``).

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


def _ctx() -> EvalContext:
    ctx = current_ctx.get()
    if ctx is None:
        raise ExpressionError("this filter needs an operation's context")
    return ctx


def eval_filter(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``{{ {'get_input': 'x'} | eval }}`` / ``{{ 'a {{ b }}' | eval }}``: evaluate an
    expression (TOSCA functions, ``eval:`` expressions, templates)."""
    from unfurl_lite.expressions import catalog

    ctx = _ctx()
    if isinstance(value, str):  # a query ('::node::attribute') as {eval: ...} reads it
        return ctx.eval_expression(value)
    if isinstance(value, Mapping) and ("eval" in value or "ref" in value or (
            len(value) == 1 and next(iter(value)) in catalog.top_level_functions())):
        return ctx.evaluate(dict(value))
    if isinstance(value, Mapping):
        return ctx.eval_expression(dict(value))
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
