"""Lazy evaluation of operation inputs: jinja2 templates and TOSCA functions.

Templates render in jinja2's sandbox just before the task runs, so attributes set by
earlier tasks are visible. Values that are secret are wrapped in :class:`Sensitive` and
stay wrapped through rendering, so the records can redact them.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unfurl_lite import redaction
from unfurl_lite.errors import UnfurlLiteError

REDACTED = redaction.REDACTED
MAX_TEMPLATE_RESULT = 1_000_000  # characters or items a template operation may build


class Sensitive(str):
    """A secret string: it renders as itself for the operation and as REDACTED in records."""

    def __repr__(self) -> str:
        return REDACTED


class Tainted(Sensitive):
    """Text a template built from a secret (``echo {{ password }}``): not itself a secret,
    so records keep its shape with each secret in it replaced."""


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
    project_root: Path | None = None  # where `file` may read; None: no file reads
    allow_outside_paths: bool = False

    def variables(self) -> dict[str, Any]:
        names = {
            "SELF": self.self_view,
            "HOST": self.host,
            "SOURCE": self.source,
            "TARGET": self.target,
            "inputs": self.operation_inputs,
            "TOPOLOGY": {"inputs": LazyInputs(self)},
        }
        names.update(self.extra)
        return names


_tainted: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "unfurl_lite_tainted", default=None
)


def _has_secret(value: Any, budget: int = 1000) -> bool:
    """Whether a value read by a template holds a secret (bounded, for huge attributes)."""
    stack = [value]
    while stack and budget > 0:
        budget -= 1
        item = stack.pop()
        if isinstance(item, LazyInputs | LazyValues):
            continue  # its values are noted one by one as they are read
        if isinstance(item, Sensitive):
            return True
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _note(value: Any) -> Any:
    flag = _tainted.get()
    if flag is not None and not flag and _has_secret(value):
        flag.append(True)
    return value


def _too_big(value: Any) -> bool:
    return isinstance(value, str | list | tuple | bytes) and len(value) > MAX_TEMPLATE_RESULT


class LazyInputs(Mapping[str, Any]):
    """``TOPOLOGY.inputs`` for templates: an input given as an expression (``{eval:
    {get_env: PW}}``) is evaluated when read, so its secret stays wrapped."""

    def __init__(self, ctx: EvalContext) -> None:
        self._ctx = ctx
        self._cache: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._cache:
            self._cache[key] = _get_input(key, self._ctx, 1)
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ctx.inputs)

    def __len__(self) -> int:
        return len(self._ctx.inputs)



class LazyValues(Mapping[str, Any]):
    """Values that may be expressions (a node's properties, an operation's inputs), each
    evaluated when first read, as Unfurl does: ``{{ SELF.port }}``, ``{{ inputs.url }}`` and
    ``get_property`` see the value, never the ``{eval: ...}`` text, and a value nobody reads
    is never evaluated (so it cannot fail). ``evaluator(key, raw)`` gives the value; a value
    that needs itself (``a: "{{ inputs.b }}"``, ``b: "{{ inputs.a }}"``) is an error."""

    def __init__(self, raw: Mapping[str, Any],
                 evaluator: Callable[[str, Any], Any]) -> None:
        self._raw = raw
        self._evaluator = evaluator
        self._cache: dict[str, Any] = {}
        self._busy: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self._cache:
            return self._cache[key]
        raw = self._raw[key]
        if key in self._busy:
            raise ExpressionError(f"{key!r} refers to itself (a circular reference)")
        self._busy.add(key)
        try:
            value = self._evaluator(key, raw)
        finally:
            self._busy.discard(key)
        self._cache[key] = value
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __repr__(self) -> str:  # `{{ SELF.properties }}` shows the values, as a dict would
        return repr(dict(self))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        from jinja2.exceptions import SecurityError

        raise SecurityError("values read by a template cannot be changed")

    update = pop = popitem = setdefault = clear = _read_only  # as the sandbox says of a dict


def _environment() -> Any:
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Sandbox(ImmutableSandboxedEnvironment):
        """Jinja's immutable sandbox, made loud and taint-aware.

        Unsafe attributes raise at once instead of rendering as empty; every value read
        is checked for secrets so a rendered template that used one is wrapped too; and
        ``*``/``**`` and calls cannot build huge values.
        """

        intercepted_binops = frozenset(["*", "**"])

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            raise SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed"
            )

        def getattr(self, obj: Any, attribute: str) -> Any:
            return _note(super().getattr(obj, attribute))

        def getitem(self, obj: Any, argument: Any) -> Any:
            return _note(super().getitem(obj, argument))

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and isinstance(right, int) and abs(right) > 1000:
                raise SecurityError("exponent larger than 1000 in a template")
            if operator == "*":
                for a, b in ((left, right), (right, left)):
                    sized = isinstance(a, str | list | tuple) and isinstance(b, int)
                    if sized and len(a) * b > MAX_TEMPLATE_RESULT:
                        raise SecurityError("template builds a value that is too large")
            return _note(super().call_binop(context, operator, left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, int) and a > MAX_TEMPLATE_RESULT for a in args):
                raise SecurityError("template call with a number argument that is too large")
            owner = getattr(__obj, "__self__", None)
            if owner is not None:
                _note(owner)
            for arg in (*args, *kwargs.values()):
                _note(arg)
            result = super().call(__context, __obj, *args, **kwargs)
            if _too_big(result):
                raise SecurityError("template builds a value that is too large")
            return _note(result)

    env = Sandbox(autoescape=False, keep_trailing_newline=False)
    env.globals.clear()  # no range, lipsum, cycler, joiner, namespace from jinja's defaults
    env.globals["range"] = _bounded_range
    env.globals["get_env"] = _get_env_global
    env.globals["file"] = _file_global
    env.filters["file"] = _file_global
    return env


def _get_env_global(name: str, default: Any = None) -> Any:
    """``{{ get_env('TOKEN') }}``: the value is a secret, as with ``{eval: {get_env: }}``."""
    value = os.environ.get(str(name), default)
    if value is None:
        return None
    flag = _tainted.get()
    if flag is not None and not flag:
        flag.append(True)
    secret = Sensitive(str(value))
    _current_secrets().add(str(secret))
    return secret


def _file_global(name: str) -> str:
    """``{{ file('config/app.ini') }}``: a file's text, only from inside the project."""
    from unfurl_lite.paths import confine

    ctx = _current_ctx.get()
    if ctx is None or ctx.project_root is None:
        raise ExpressionError("file(): no project directory to read from")
    path = confine(str(name), ctx.project_root, ctx.allow_outside_paths, what="file()")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExpressionError(f"file(): cannot read {name!r}: {exc.strerror}") from None
    if len(data) > MAX_TEMPLATE_RESULT:
        raise ExpressionError(f"file(): {name!r} is larger than {MAX_TEMPLATE_RESULT} bytes")
    return data.decode("utf-8", errors="replace")


_current_ctx: contextvars.ContextVar[EvalContext | None] = contextvars.ContextVar(
    "unfurl_lite_ctx", default=None
)


def _current_secrets() -> set[str]:
    ctx = _current_ctx.get()
    return ctx.secrets if ctx is not None else set()


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
    """Render in the sandbox; the result is Tainted when the template read any secret."""
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    from unfurl_lite.paths import PathError

    flag: list[bool] = []
    flag_token = _tainted.set(flag)
    ctx_token = _current_ctx.set(ctx)
    try:
        template = environment().from_string(text)
        result = template.render(ctx.variables())
    except SecurityError as exc:
        raise ExpressionError(
            f"template not allowed by the sandbox: {_safe(exc, ctx)}"
        ) from None
    except PathError as exc:
        raise ExpressionError(exc.message, hint=exc.hint) from None
    except ExpressionError as exc:
        raise ExpressionError(_safe(exc.message, ctx), hint=exc.hint) from None
    except (TemplateError, TypeError, ValueError, AttributeError, KeyError, ArithmeticError,
            RecursionError, MemoryError, OverflowError) as exc:
        where = _safe(text, ctx)
        raise ExpressionError(f"template error in {where!r}: {_safe(exc, ctx)}") from None
    finally:
        _tainted.reset(flag_token)
        _current_ctx.reset(ctx_token)
    if len(result) > MAX_TEMPLATE_RESULT:
        raise ExpressionError(f"template result is longer than {MAX_TEMPLATE_RESULT} characters")
    if flag or any(f in result for f in redaction.secret_forms(ctx.secrets)):
        return Tainted(result)
    return result


def _safe(text: Any, ctx: EvalContext) -> str:
    """An error message may quote the value that failed (``int('s3cret')``)."""
    return redaction.redact_text(str(text), ctx.secrets)


def evaluate(value: Any, ctx: EvalContext, depth: int = 0) -> Any:
    """Evaluate templates and TOSCA functions anywhere inside an input value."""
    if depth > 50:
        raise ExpressionError("expression nested too deeply (more than 50 levels)")
    if isinstance(value, Sensitive):
        if not isinstance(value, Tainted):
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
        return _mark(evaluate(ctx.inputs[name], ctx, depth), ctx)
    if "file" in arg:
        token = _current_ctx.set(ctx)
        try:
            return _file_global(evaluate(arg["file"], ctx, depth))
        except UnfurlLiteError as exc:
            raise ExpressionError(exc.message, hint=exc.hint) from None
        finally:
            _current_ctx.reset(token)
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
    """Every secret inside a value (Tainted text is built from secrets, not one itself)."""
    if isinstance(value, Tainted):
        return
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
    return redaction.redact(value, secrets)


def redact_text(text: str, secrets: set[str] | frozenset[str]) -> str:
    return redaction.redact_text(text, secrets)
