"""The Jinja2 filters Unfurl adds to templates (its ``filter_plugins/ref.py``): ``eval``/
``ref``, ``map_value``/``mapValue``, ``sensitive``, ``abspath``, ``get_dir``, ``which``,
and ``to_label`` with its flavours. They are registered in :mod:`.catalog`, with
Ansible's core filters (:mod:`.ansible_filters`); Jinja's built-ins are known, the rest is
refused by ``validate``.

They run inside the template sandbox (``expressions/sandbox.py`` wraps every filter with
its size limits and taint rules, and calls none while compiling); the ones that reach the
project keep to its confinement.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.scope import current_ctx
from unfurl_lite.security.environment import base_environment
from unfurl_lite.security.taint import mark_secret

if TYPE_CHECKING:
    from unfurl_lite.expressions.expr import EvalContext
    from unfurl_lite.model.narrow import YAMLValue


def _ctx() -> EvalContext:
    ctx = current_ctx.get()
    if ctx is None:
        raise ExpressionError("this filter needs an operation's context")
    return ctx


def eval_filter(value: Any, *args: Any, **vars: Any) -> Any:
    """``{{ '::app::port' | eval }}``, ``{{ '$x' | eval(x=3) }}``, ``{{ q | eval(wantList=
    True) }}``: evaluate an expression as ``{eval: ...}`` does (keyword arguments are its
    variables)."""
    # start-up: keeps expressions.resolve (10 modules) off filters's import until eval_filter() runs
    from unfurl_lite.expressions.resolve import Scope, refuse_break, resolve

    if vars.pop("trace", None) == "break":
        refuse_break()
    want_list = vars.pop("wantList", False)
    return resolve(value, Scope(_ctx(), None, vars), "list" if want_list else "one")


def map_value_filter(value: Any, **vars: Any) -> Any:
    """``{{ mapping | map_value }}``: evaluate every expression inside a value. In a
    template, as in Unfurl, an expression in it gives its list of results."""
    # start-up: keeps expressions.resolve off filters's import until map_value_filter() runs
    from unfurl_lite.expressions.resolve import Scope, map_value

    return map_value(value, Scope(_ctx(), None, vars), want_list=True)


def sensitive_filter(value: YAMLValue, *args: Any, **kwargs: Any) -> Any:
    """``{{ value | sensitive }}``: the value is a secret from here on (redacted)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {k: sensitive_filter(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sensitive_filter(v) for v in value]
    return mark_secret(value)


def abspath_filter(path: Any, relativeTo: Any = None, mkdir: bool = False) -> str:
    """``{{ 'files/app.conf' | abspath }}``, ``{{ 'x' | abspath('local') }}``: the
    absolute path in one of ``get_dir``'s folders, as text."""
    # start-up: keeps expressions.files off filters's import until abspath_filter() runs
    from unfurl_lite.expressions.files import absolute_path

    return absolute_path(_ctx(), path, relativeTo, mkdir)


def get_dir_filter(relativeTo: Any, mkdir: bool = False) -> str:
    """``{{ 'artifacts' | get_dir }}``: a named folder of the current instance."""
    # start-up: keeps expressions.files off filters's import until get_dir_filter() runs
    from unfurl_lite.expressions.files import absolute_path

    return absolute_path(_ctx(), "", relativeTo, mkdir)


def which_filter(command: Any) -> str | None:
    """``{{ 'helm' | which }}``: the command's path on the PATH operations get (null when
    none)."""
    path = base_environment(_ctx().env_passthrough).get("PATH", os.defpath)
    return shutil.which(str(command), path=path)


#: the positional parameters after the value Unfurl's label filters take: to_label's
#: ``_wrapper`` and ``eager``, which do nothing when a template renders
_POSITIONAL = {"to_label": ("_wrapper", "eager")}


def _label(flavour: str) -> Any:
    def convert(value: Any, *args: Any, **options: Any) -> Any:
        # start-up: keeps expressions.labels (9 modules) off filters's import until convert() runs
        from unfurl_lite.expressions.labels import label

        names = _POSITIONAL.get(flavour, ())
        if len(args) > len(names):
            raise ExpressionError(
                f"{flavour} takes {len(names) or 'no'} positional argument"
                f"{'' if len(names) == 1 else 's'} after its value, {len(args)} given",
                hint=f"give its options by name: {flavour}(sep='-', max=20)")
        for name, arg in zip(names, args, strict=False):
            if name in options:
                raise ExpressionError(f"{flavour} got {name!r} twice")
            options[name] = arg
        return label(flavour, value, options)

    convert.__name__ = flavour
    return convert


to_label = _label("to_label")
to_dns_label = _label("to_dns_label")
to_kubernetes_label = _label("to_kubernetes_label")
to_googlecloud_label = _label("to_googlecloud_label")
