"""Lazy evaluation of operation inputs: jinja2 templates and TOSCA functions.

Templates render in jinja2's sandbox just before the task runs, so attributes set by
earlier tasks are visible. Values that are secret are wrapped in :class:`Sensitive` and
stay wrapped through rendering, so the records can redact them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from unfurl_lite.errors import UnfurlLiteError

REDACTED = "<<REDACTED>>"


class Sensitive(str):
    """A secret string: it renders as itself for the operation and as REDACTED in records."""

    def __repr__(self) -> str:
        return REDACTED


class ExpressionError(UnfurlLiteError):
    """An input could not be evaluated (bad template, unknown input, missing attribute)."""


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

    def variables(self) -> dict[str, Any]:
        names = {
            "SELF": self.self_view,
            "HOST": self.host,
            "SOURCE": self.source,
            "TARGET": self.target,
            "inputs": self.operation_inputs,
            "TOPOLOGY": {"inputs": self.inputs},
        }
        names.update(self.extra)
        return names


def _environment() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(autoescape=False, keep_trailing_newline=False)
    env.globals.clear()  # no range, lipsum, cycler, joiner, namespace from jinja's defaults
    env.globals["range"] = _bounded_range
    return env


def _bounded_range(*args: int) -> range:
    result = range(*args)
    if len(result) > 100_000:
        raise ExpressionError("range() in a template is limited to 100000 items")
    return result


_ENV: Any = None


def environment() -> Any:
    global _ENV
    if _ENV is None:
        _ENV = _environment()
    return _ENV


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def render_template(text: str, ctx: EvalContext) -> Any:
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    try:
        template = environment().from_string(text)
        result = template.render(ctx.variables())
    except SecurityError as exc:
        raise ExpressionError(f"template not allowed by the sandbox: {exc}") from None
    except TemplateError as exc:
        raise ExpressionError(f"template error in {text!r}: {exc}") from None
    except (TypeError, ValueError, AttributeError, KeyError, ArithmeticError) as exc:
        raise ExpressionError(f"template error in {text!r}: {exc}") from None
    if any(secret and secret in result for secret in ctx.secrets):
        return Sensitive(result)
    return result


def evaluate(value: Any, ctx: EvalContext, depth: int = 0) -> Any:
    """Evaluate templates and TOSCA functions anywhere inside an input value."""
    if depth > 50:
        raise ExpressionError("expression nested too deeply (more than 50 levels)")
    if isinstance(value, Sensitive):
        ctx.secrets.add(str(value))
        return value
    if is_template(value):
        return render_template(value, ctx)
    if isinstance(value, Mapping):
        if len(value) == 1:
            ((key, arg),) = value.items()
            function = FUNCTIONS.get(str(key))
            if function is not None:
                return function(arg, ctx, depth + 1)
        return {k: evaluate(v, ctx, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [evaluate(v, ctx, depth + 1) for v in value]
    return value


def _mark(value: Any, ctx: EvalContext) -> Sensitive:
    wrapped = Sensitive("" if value is None else str(value))
    ctx.secrets.add(str(wrapped))
    return wrapped


def _get_input(arg: Any, ctx: EvalContext, depth: int) -> Any:
    name = evaluate(arg, ctx, depth)
    if name not in ctx.inputs:
        raise ExpressionError(f"get_input: no input named {name!r}")
    value = ctx.inputs[name]
    if isinstance(value, Sensitive):
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


def _get_property(arg: Any, ctx: EvalContext, depth: int) -> Any:
    ref, *path = evaluate(arg, ctx, depth)
    return _walk(_entity(ref, ctx), "properties", path, "get_property")


def _get_attribute(arg: Any, ctx: EvalContext, depth: int) -> Any:
    ref, *path = evaluate(arg, ctx, depth)
    entity = _entity(ref, ctx)
    try:
        return _walk(entity, "attributes", path, "get_attribute")
    except ExpressionError:
        return _walk(entity, "properties", path, "get_attribute")


def _concat(arg: Any, ctx: EvalContext, depth: int) -> Any:
    parts = [evaluate(v, ctx, depth) for v in arg]
    text = "".join("" if p is None else str(p) for p in parts)
    if any(isinstance(p, Sensitive) for p in parts):
        return _mark(text, ctx)
    return text


def _join(arg: Any, ctx: EvalContext, depth: int) -> Any:
    items, *rest = arg
    sep = rest[0] if rest else ""
    values = [evaluate(v, ctx, depth) for v in evaluate(items, ctx, depth)]
    text = str(sep).join(str(v) for v in values)
    return _mark(text, ctx) if any(isinstance(v, Sensitive) for v in values) else text


def _eval(arg: Any, ctx: EvalContext, depth: int) -> Any:
    if not isinstance(arg, Mapping):
        return evaluate(arg, ctx, depth)
    if "get_env" in arg:
        name = evaluate(arg["get_env"], ctx, depth)
        if isinstance(name, list):
            name, default = [*name, None][:2]
        else:
            default = None
        value = os.environ.get(str(name), default)
        return None if value is None else _mark(value, ctx)
    if "sensitive" in arg:
        return _mark(evaluate(arg["sensitive"], ctx, depth), ctx)
    if "secret" in arg:
        name = evaluate(arg["secret"], ctx, depth)
        if name not in ctx.inputs:
            raise ExpressionError(f"secret: no input named {name!r}")
        return _mark(ctx.inputs[name], ctx)
    if "get_input" in arg:
        return _get_input(arg["get_input"], ctx, depth)
    if "template" in arg:
        return evaluate(arg["template"], ctx, depth)
    raise ExpressionError(f"unsupported eval expression: {sorted(arg)}")


FUNCTIONS: dict[str, Callable[[Any, EvalContext, int], Any]] = {
    "get_input": _get_input,
    "get_property": _get_property,
    "get_attribute": _get_attribute,
    "concat": _concat,
    "join": _join,
    "eval": _eval,
}


def secrets_in(value: Any) -> Iterator[str]:
    """Every Sensitive string inside a value."""
    if isinstance(value, Sensitive):
        yield str(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from secrets_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from secrets_in(v)


def redact(value: Any, secrets: set[str] | frozenset[str] = frozenset()) -> Any:
    """A copy safe to write: Sensitive values and any known secret text replaced."""
    if isinstance(value, Sensitive):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, secrets) for v in value]
    return value


def redact_text(text: str, secrets: set[str] | frozenset[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3 and secret in text:
            text = text.replace(secret, REDACTED)
    return text
