"""Lazy evaluation of operation inputs: TOSCA's functions and Unfurl's ``eval:``
expressions, with Jinja2 templates rendered in the sandbox (:mod:`.sandbox`).

Values that are secret are wrapped (:class:`~unfurl_lite.security.taint.Sensitive`) and
stay wrapped through evaluation, so the records can redact them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unfurl_lite.errors import ExpressionError, UnfurlLiteError
from unfurl_lite.expressions import catalog
from unfurl_lite.expressions.lazy import Labelled, LazyInputs
from unfurl_lite.expressions.names import did_you_mean
from unfurl_lite.expressions.sandbox import file_global, is_template, render_native
from unfurl_lite.expressions.scope import current_ctx
from unfurl_lite.security import taint
from unfurl_lite.security.taint import Sensitive, Tainted


@dataclass
class EvalContext:
    """What an expression can see: SELF, HOST, SOURCE/TARGET, the topology's inputs."""

    self_view: Mapping[str, Any]
    inputs: Mapping[str, Any]
    host: Mapping[str, Any] | None = None
    source: Mapping[str, Any] | None = None
    target: Mapping[str, Any] | None = None
    operation_inputs: Mapping[str, Any] = field(default_factory=dict)
    lookup_node: Callable[[str], Mapping[str, Any] | None] = lambda name: None
    extra: Mapping[str, Any] = field(default_factory=dict)
    secrets: set[str] = field(default_factory=set)  # every sensitive value seen
    project_root: Path | None = None  # where `file` may read; None: no file reads
    allow_outside_paths: bool = False
    declared_env: frozenset[str] = frozenset()  # get_env names the spec declares
    env_passthrough: bool = False  # --env-passthrough: templates may read any variable
    deadline: float | None = None  # time.monotonic() by which rendering must end
    time_limit: float = 10.0  # the seconds that deadline allows, for the message
    template_reads: int = 0  # > 0 while a template reads TOPOLOGY.inputs

    def variables(self) -> dict[str, Any]:
        names = {
            "SELF": self.self_view,
            "HOST": self.host,
            "SOURCE": self.source,
            "TARGET": self.target,
            "inputs": self.operation_inputs,
            "TOPOLOGY": Labelled({"inputs": LazyInputs(self.inputs, self._read_input)},
                                 "TOPOLOGY"),
        }
        names.update(self.extra)
        return names

    def evaluate(self, value: Any) -> Any:
        """Evaluate ``value`` here: how Unfurl's filters (``eval``, ``map_value``), which
        sit below this module, reach the evaluator."""
        return evaluate(value, self)

    def eval_expression(self, arg: Any) -> Any:
        """``{eval: arg}`` here: how the ``eval`` filter reaches the evaluator."""
        return eval_expression(arg, self, 0)

    def _read_input(self, name: str) -> Any:
        self.template_reads += 1  # Unfurl digests `{{ TOPOLOGY.inputs.x }}` as no read
        try:
            return get_input(name, self, 1)
        finally:
            self.template_reads -= 1


def evaluate(value: Any, ctx: EvalContext, depth: int = 0) -> Any:
    """Evaluate templates and TOSCA functions anywhere inside an input value."""
    if depth > 50:
        raise ExpressionError("expression nested too deeply (more than 50 levels)")
    if isinstance(value, Sensitive):
        if not isinstance(value, Tainted):
            ctx.secrets.add(str(value))
        return value
    if is_template(value):
        return render_native(value, ctx)
    if isinstance(value, Mapping):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key in ("eval", "ref"):
                return eval_expression(arg, ctx, depth + 1)
            if key in catalog.top_level_functions():
                function = catalog.implementation("function", key)
                if function is None:
                    raise _refused("function", key)
                return function(arg, ctx, depth + 1)
        elif ("eval" in value or "ref" in value) and all(
                k in ("eval", "ref") or k in catalog.QUERY_KEYS for k in value):
            return _expression(value, ctx, depth + 1)
        return {k: evaluate(v, ctx, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [evaluate(v, ctx, depth + 1) for v in value]
    return value


def _mark(value: Any, ctx: EvalContext, variable: str | None = None) -> Sensitive:
    text = "" if value is None else str(value)
    wrapped = Sensitive(text) if variable is None else taint.env_secret(text, variable)
    ctx.secrets.add(str(wrapped))
    return wrapped


def _built(text: str, parts: list[Any], ctx: EvalContext) -> Any:
    """Text built from parts: a secret when one part is; built from environment values
    only, it stays one (it takes part in change detection, as in Unfurl)."""
    if not any(isinstance(p, Sensitive) for p in parts):
        return text
    variables = taint.sources(*parts)
    if variables is not None:
        return taint.env_tainted(text, variables)
    return _mark(text, ctx)


def _no_input(function: str, name: Any, ctx: EvalContext) -> str:
    close = did_you_mean(str(name), ctx.inputs)
    return f"{function}: no input named {name!r}" + (f"; {close}" if close else "")


def get_input(arg: Any, ctx: EvalContext, depth: int) -> Any:
    name = evaluate(arg, ctx, depth)
    if name not in ctx.inputs:
        raise ExpressionError(_no_input("get_input", name, ctx))
    value = ctx.inputs[name]
    if isinstance(value, Sensitive) and not isinstance(value, Tainted):
        ctx.secrets.add(str(value))
    return evaluate(value, ctx, depth)


def _entity(ref: str, ctx: EvalContext) -> Mapping[str, Any]:
    entity: Mapping[str, Any] | None
    if ref == "SELF":
        entity = ctx.self_view
    elif ref == "HOST":
        entity = ctx.host
    elif ref == "SOURCE":
        entity = ctx.source
    elif ref == "TARGET":
        entity = ctx.target
    else:
        entity = ctx.lookup_node(ref)
    if entity is None:
        raise ExpressionError(f"no node {ref!r} to read from")
    return entity


def _walk(entity: Mapping[str, Any], section: str, path: list[Any], fn: str) -> Any:
    value: Any = entity.get(section, {})
    for key in path:
        if (isinstance(value, Mapping) and key in value) or (
            isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value)
        ):
            value = value[key]
        else:
            raise ExpressionError(f"{fn}: {entity.get('name')} has no {section[:-1]} {key!r}")
    return value


def get_property(arg: Any, ctx: EvalContext, depth: int) -> Any:
    ref, *path = evaluate(arg, ctx, depth)
    return _walk(_entity(ref, ctx), "properties", path, "get_property")


def get_attribute(arg: Any, ctx: EvalContext, depth: int) -> Any:
    ref, *path = evaluate(arg, ctx, depth)
    entity = _entity(ref, ctx)
    try:
        return _walk(entity, "attributes", path, "get_attribute")
    except ExpressionError:
        return _walk(entity, "properties", path, "get_attribute")


def concat(arg: Any, ctx: EvalContext, depth: int) -> Any:
    parts = [evaluate(v, ctx, depth) for v in arg]
    return _built("".join("" if p is None else str(p) for p in parts), parts, ctx)


def join(arg: Any, ctx: EvalContext, depth: int) -> Any:
    items, *rest = arg
    sep = rest[0] if rest else ""
    values = [evaluate(v, ctx, depth) for v in evaluate(items, ctx, depth)]
    return _built(str(sep).join(str(v) for v in values), values, ctx)


_QUERY = re.compile(r"::[\w-]+(?:::[\w-]+)+")


def supported_query(text: str) -> bool:
    """Whether ``{eval: text}`` is a value here: a template or plain text, or a query
    expression of the one form evaluated here."""
    if is_template(text) or not text.startswith(("::", ".")):
        return True
    return _QUERY.fullmatch(text) is not None


def _query(text: str, ctx: EvalContext) -> Any:
    """Unfurl's query expression in its simplest form, ``::node::attribute(::key)*``: the
    node's attribute (else property), null when it has none, as Unfurl gives. Other forms
    (``.``-relative paths, filters, ``*``) are refused by name."""
    if not _QUERY.fullmatch(text):
        raise ExpressionError(
            f"Unfurl's query expression {text!r} is not supported here; only "
            "'::node::attribute' is",
            hint="use {get_attribute: [node, attribute]} or {get_property: [...]}",
        )
    name, *path = text[2:].split("::")
    entity = ctx.lookup_node(name)
    if entity is None:
        return None
    value: Any = None
    for section in ("attributes", "properties"):
        found: Any = entity.get(section, {})
        for key in path:
            found = found.get(key) if isinstance(found, Mapping) else None
        if found is not None:
            value = found
            break
    return evaluate(value, ctx) if isinstance(value, Mapping | list) else value


def eval_expression(arg: Any, ctx: EvalContext, depth: int) -> Any:
    """``{eval: ...}``: a query (``'::node::attribute'``), a template, or a mapping naming
    one function of the catalog (:mod:`.catalog`) with its options."""
    if isinstance(arg, str) and arg.startswith(("::", ".::", ".")) and not is_template(arg):
        return _query(arg, ctx)
    if not isinstance(arg, Mapping):
        return evaluate(arg, ctx, depth)
    for key in arg:
        known = catalog.entry("function", str(key))
        if known is None:
            continue
        function = catalog.implementation("function", str(key))
        if function is None:
            raise _refused("function", str(key))
        options = {k: v for k, v in arg.items() if k != key and k in known.options}
        return function(arg[key], ctx, depth, **options)
    raise _refused("function", str(next(iter(arg), "")))


def _refused(kind: catalog.Kind, name: str) -> ExpressionError:
    message, hint = catalog.refusal(kind, name)
    return ExpressionError(message, hint=hint)


def _expression(value: Mapping[str, Any], ctx: EvalContext, depth: int) -> Any:
    """An expression mapping with keys beside ``eval``/``ref`` (``vars``, ``foreach``...)."""
    for key in value:
        if key not in ("eval", "ref") and catalog.implementation("query_key", key) is None:
            raise _refused("query_key", key)
    raise _refused("query_key", next(k for k in value if k not in ("eval", "ref")))


def get_env(arg: Any, ctx: EvalContext, depth: int) -> Any:
    """``{eval: {get_env: NAME}}`` (or ``[NAME, default]``): a secret value."""
    name = evaluate(arg, ctx, depth)
    if isinstance(name, list):
        name, default = [*name, None][:2]
    else:
        default = None
    value = os.environ.get(str(name), default)
    return None if value is None else _mark(value, ctx, str(name))


def sensitive(arg: Any, ctx: EvalContext, depth: int) -> Any:
    return _mark(evaluate(arg, ctx, depth), ctx)


def secret(arg: Any, ctx: EvalContext, depth: int) -> Any:
    name = evaluate(arg, ctx, depth)
    if name not in ctx.inputs:
        raise ExpressionError(_no_input("secret", name, ctx))
    return _mark(evaluate(ctx.inputs[name], ctx, depth), ctx)


def file(arg: Any, ctx: EvalContext, depth: int, encoding: Any = None) -> Any:
    token = current_ctx.set(ctx)
    try:
        return file_global(evaluate(arg, ctx, depth))
    except UnfurlLiteError as exc:
        raise ExpressionError(exc.message, hint=exc.hint) from None
    finally:
        current_ctx.reset(token)


def template(arg: Any, ctx: EvalContext, depth: int) -> Any:
    return evaluate(arg, ctx, depth)
