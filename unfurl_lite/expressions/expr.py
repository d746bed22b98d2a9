"""Lazy evaluation of operation inputs: jinja2 templates and TOSCA functions.

Templates render in jinja2's sandbox just before the task runs, so attributes set by
earlier tasks are visible. Values that are secret are wrapped in :class:`Sensitive` and
stay wrapped through rendering, so the records can redact them.
"""

from __future__ import annotations

import contextvars
import functools
import os
import re
import string
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.security import redaction

REDACTED = redaction.REDACTED
MAX_TEMPLATE_RESULT = 1_000_000  # characters or items a template operation may build
MAX_RENDER_BUILT = 20_000_000  # characters and items all the steps of one render may build
MAX_INT_BITS = 100_000  # bits of an integer a template may compute (about 30 000 digits)
RENDER_SECONDS = 10.0  # a task's templates, when its operation has no shorter timeout
CREDENTIAL_STORES = frozenset({  # path components file() never reads
    ".git", ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
    "gcloud", ".git-credentials", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass",
    ".vault-token", ".boto", ".s3cfg", ".terraformrc", "credentials.tfrc.json",
})


class Sensitive(str):
    """A secret string: it renders as itself for the operation and as REDACTED in records."""

    def __repr__(self) -> str:
        return REDACTED

    def __getitem__(self, key: Any) -> Any:
        """A slice (``pw[2:9]``, which jinja does not route through the sandbox) is a
        secret too."""
        return _derived(str.__getitem__(self, key))


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
    declared_env: frozenset[str] = frozenset()  # get_env names the spec declares
    env_passthrough: bool = False  # --env-passthrough: templates may read any variable
    deadline: float | None = None  # time.monotonic() by which rendering must end
    time_limit: float = 10.0  # the seconds that deadline allows, for the message

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


_built: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "unfurl_lite_built", default=None
)


def _too_big(value: Any) -> bool:
    """Whether a value is over the limit for one value, counting it against the render's
    budget: many values each under the limit (``map('center', 999999)`` over a long
    list) must not add up to gigabytes either."""
    if not isinstance(value, str | list | tuple | bytes):
        return False
    built = _built.get()
    if built is not None:
        built[0] += len(value)
        if built[0] > MAX_RENDER_BUILT:
            raise _refuse("template builds too much: more than "
                          f"{MAX_RENDER_BUILT} characters and items in all")
    return len(value) > MAX_TEMPLATE_RESULT


def _derives(value: Any) -> bool:
    """Whether a value handed to a filter, method or operator is (or lists) a secret."""
    if isinstance(value, Sensitive):
        return True
    if isinstance(value, list | tuple):
        return any(isinstance(v, Sensitive) for v in value[:1000])
    return False


def _derived(value: Any) -> Any:
    """A value computed from a secret: strings in it become Tainted and, when long enough
    to search for, known secrets of the render, so the pieces (``pw[2:9]``, ``pw | list |
    join('-')``) are redacted wherever they turn up: records, command output, errors."""
    if isinstance(value, Sensitive):
        return value
    if isinstance(value, str):
        tainted = Tainted(value)
        flag = _tainted.get()
        if flag is not None and not flag:
            flag.append(True)
        if len(value) >= redaction.MIN_SECRET_LENGTH:
            _current_secrets().add(value)
        return tainted
    if isinstance(value, list):
        return [_derived(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_derived(v) for v in value)
    return value


def tainted_copy(value: Any) -> Any:
    """Every scalar of a value built by a render that read a secret, as Tainted text: the
    simple sound rule (a resultTemplate's parsed attributes cannot say which came from
    the secret)."""
    if isinstance(value, Mapping):
        return {k: tainted_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [tainted_copy(v) for v in value]
    if value is None or isinstance(value, Sensitive):
        return value
    return Tainted(str(value))


def _refuse(what: str) -> Any:
    from jinja2.exceptions import SecurityError

    return SecurityError(f"{what} (a template may build values of at most "
                         f"{MAX_TEMPLATE_RESULT} characters, {MAX_RENDER_BUILT} in all, "
                         f"and integers of {MAX_INT_BITS} bits)")


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
_NUMBER = re.compile(r"\d+")


def _printf_size(text: str) -> int:
    """Characters ``text % args`` may produce beyond its own length (widths, precisions)."""
    return sum(int(n) for m in _PRINTF.finditer(text) for n in m.groups() if n and n != "*")


def _format_size(text: str) -> int:
    """The same for ``str.format``: the widths and precisions in its replacement fields."""
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return 0
    return sum(max((int(n) for n in _NUMBER.findall(spec or "")), default=0)
               for _, _, spec, _ in fields)


def _int_bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "**" and isinstance(left, int) and isinstance(right, int):
        if abs(right) > 1000:
            raise _refuse("exponent larger than 1000 in a template")
        if right > 0 and abs(left) > 1 and _int_bits(left) * right > MAX_INT_BITS:
            raise _refuse("exponent too large: the result would be too large")
    elif operator == "*":
        for a, b in ((left, right), (right, left)):
            if (isinstance(a, str | list | tuple) and isinstance(b, int)
                    and len(a) * b > MAX_TEMPLATE_RESULT):
                raise _refuse("template builds a value that is too large")
        if (isinstance(left, int) and isinstance(right, int)
                and _int_bits(left) + _int_bits(right) > MAX_INT_BITS):
            raise _refuse("template builds a number that is too large")
    elif operator == "%" and isinstance(left, str):
        if len(left) + _printf_size(left) > MAX_TEMPLATE_RESULT:
            raise _refuse("template builds a value that is too large")
    elif (isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple)
            and len(left) + len(right) > MAX_TEMPLATE_RESULT):
        raise _refuse("template builds a value that is too large")


def _check_method(obj: Any, owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Size a string method's result before it is built (``'a'.replace('a', 'b' * 10**6)``
    on a long string, ``'{:999999}{:999999}'.format(...)``)."""
    if not isinstance(owner, str):
        return
    name = getattr(obj, "__name__", "")
    size = len(owner)
    if name == "replace" and len(args) >= 2:
        old, new = str(args[0]), str(args[1])
        count = owner.count(old) if old else len(owner) + 1
        size += count * len(new)
    elif name == "expandtabs":
        width = args[0] if args else kwargs.get("tabsize", 8)
        size += owner.count("\t") * (width if isinstance(width, int) else 8)
    elif name in ("format", "format_map"):
        size += _format_size(owner) + sum(len(a) for a in args if isinstance(a, str))
    elif name == "join" and args and hasattr(args[0], "__len__"):
        size = len(owner) * len(args[0])
    if size > MAX_TEMPLATE_RESULT:
        raise _refuse("template builds a value that is too large")


def _filter_size(name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """Characters a string-building filter will produce, estimated before it runs."""
    if not args:
        return 0
    value, rest = args[0], args[1:]

    def arg(index: int, key: str, default: Any) -> Any:
        return rest[index] if len(rest) > index else kwargs.get(key, default)

    def number(value: Any) -> int:
        if isinstance(value, str):
            return len(value)
        return value if isinstance(value, int) else 0

    text = value if isinstance(value, str) else ""
    if name == "indent":
        return len(text) + (text.count("\n") + 1) * number(arg(0, "width", 4))
    if name == "center":
        return len(text) + number(arg(0, "width", 80))
    if name == "replace":
        old, new = str(arg(0, "old", "")), str(arg(1, "new", ""))
        return len(text) + (text.count(old) if old else len(text) + 1) * len(new)
    if name == "wordwrap":
        width = max(1, number(arg(0, "width", 79)))
        wrap = str(arg(2, "wrapstring", None) or "\n")
        return len(text) + (len(text) // width + 1) * len(wrap)
    if name == "format":
        return len(text) + _printf_size(text)
    if name == "join" and hasattr(value, "__len__"):
        return len(str(arg(0, "d", ""))) * len(value)
    return 0


def _guarded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that refuses to build a huge value and taints what it derives from a
    secret (jinja calls filters directly, not through the sandbox's ``call``)."""
    from jinja2.utils import _PassArg

    skip = 0 if _PassArg.from_obj(function) is None else 1

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        values = list(args)
        for index in range(skip, len(values)):
            item = values[index]
            if isinstance(item, Iterator):  # see whether a generator yields secrets
                values[index] = list(_bounded_items(item))
            elif isinstance(item, int) and not isinstance(item, bool) and (
                    item > MAX_TEMPLATE_RESULT):
                raise _refuse(f"{name}: a number argument that is too large")
        if _filter_size(name, tuple(values[skip:]), kwargs) > MAX_TEMPLATE_RESULT:
            raise _refuse(f"{name}: the result would be too large")
        result = function(*values, **kwargs)
        if any(_derives(v) for v in (*values[skip:], *kwargs.values())):
            result = _derived(list(_bounded_items(result)) if isinstance(
                result, Iterator) else result)
        if _too_big(result):
            raise _refuse(f"{name}: the result is too large")
        return result

    return guarded


def _bounded_items(items: Iterator[Any]) -> Iterator[Any]:
    for count, item in enumerate(items):
        if count >= MAX_TEMPLATE_RESULT:
            raise _refuse("template builds a list that is too large")
        yield item


def _bounded_concat(pieces: Any) -> str:
    """The template's output, refused as soon as it grows past the limit (a loop that
    prints a large value many times), before the pieces are joined."""
    out: list[str] = []
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > MAX_TEMPLATE_RESULT:
            raise _refuse("template output too large")
        out.append(piece)
    return "".join(out)


class RenderTimeout(ExpressionError):
    """Rendering ran past the task's deadline."""


def _tracer(deadline: float, limit: float) -> Callable[..., Any]:
    """A trace function watching only the template's own code: each line it runs checks
    the deadline, so a loop that would run for hours stops (C-level work cannot be
    interrupted this way; the size limits keep each such step short)."""

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and time.monotonic() > deadline:
            raise RenderTimeout(
                f"rendering took longer than {limit:g} s (the operation's timeout, or "
                f"{RENDER_SECONDS:g} s without one)",
                hint="simplify the template, or raise the operation's timeout",
            )
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == "<template>" else None

    return trace


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

        intercepted_binops = frozenset(["*", "**", "%", "+"])
        concat = staticmethod(_bounded_concat)

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            raise SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed"
            )

        def getattr(self, obj: Any, attribute: str) -> Any:
            return _note(super().getattr(obj, attribute))

        def getitem(self, obj: Any, argument: Any) -> Any:
            result = super().getitem(obj, argument)
            if isinstance(obj, Sensitive):
                result = _derived(result)
            return _note(result)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            result = super().call_binop(context, operator, left, right)
            _too_big(result)
            if _derives(left) or _derives(right):
                result = _derived(result)
            return _note(result)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, int) and a > MAX_TEMPLATE_RESULT
                   for a in (*args, *kwargs.values())):
                raise SecurityError("template call with a number argument that is too large")
            owner = getattr(__obj, "__self__", None)
            _check_method(__obj, owner, args, kwargs)
            if owner is not None:
                _note(owner)
            for arg in (*args, *kwargs.values()):
                _note(arg)
            result = super().call(__context, __obj, *args, **kwargs)
            if _too_big(result):
                raise SecurityError("template builds a value that is too large")
            if _derives(owner) or any(_derives(a) for a in (*args, *kwargs.values())):
                result = _derived(result)
            return _note(result)

    env = Sandbox(autoescape=False, keep_trailing_newline=False)
    env.globals.clear()  # no range, lipsum, cycler, joiner, namespace from jinja's defaults
    env.globals["range"] = _bounded_range
    env.globals["get_env"] = _get_env_global
    env.globals["file"] = _file_global
    env.filters["file"] = _file_global
    from unfurl_lite.expressions.filters import unfurl_filters

    env.filters.update(unfurl_filters())  # Unfurl's own (eval, map_value, sensitive...)
    for name, function in list(env.filters.items()):
        env.filters[name] = _guarded_filter(name, function)
    return env


def env_allowed(name: str, ctx: EvalContext | None) -> bool:
    """What ``get_env`` in a template may read: what an operation would get (the
    allow-list; everything with ``--env-passthrough``) plus what the spec declares with
    ``{eval: {get_env: NAME}}``."""
    from unfurl_lite.run.operations.shell import PROJECT_VARIABLES, allowed

    if ctx is None:
        return allowed(name) or name in PROJECT_VARIABLES
    return (ctx.env_passthrough or allowed(name) or name in PROJECT_VARIABLES
            or name in ctx.declared_env)


def _get_env_global(name: str, default: Any = None) -> Any:
    """``{{ get_env('TOKEN') }}``: the value is a secret, as with ``{eval: {get_env: }}``."""
    if not env_allowed(str(name), _current_ctx.get()):
        raise ExpressionError(
            f"get_env({str(name)!r}): {name} is not passed to operations (not in the "
            "allow-list) and the ensemble does not declare it",
            hint=f"declare it in the spec, e.g. an input with default "
            f"{{eval: {{get_env: {name}}}}}, or run with --env-passthrough",
        )
    value = os.environ.get(str(name), default)
    return None if value is None else mark_secret(value)


def mark_secret(value: Any) -> Sensitive:
    """The value as a secret of the render under way: redacted wherever it is written, and
    the render counts as one that read a secret (its errors are withheld)."""
    flag = _tainted.get()
    if flag is not None and not flag:
        flag.append(True)
    secret = Sensitive(str(value))
    _current_secrets().add(str(secret))
    return secret


def _file_global(name: str) -> str:
    """``{{ file('config/app.ini') }}``: a file's text, only from inside the project."""
    from unfurl_lite.security.paths import confine

    ctx = _current_ctx.get()
    if ctx is None or ctx.project_root is None:
        raise ExpressionError("file(): no project directory to read from")
    path = confine(str(name), ctx.project_root, ctx.allow_outside_paths, what="file()")
    store = next((part for part in path.parts if part in CREDENTIAL_STORES), None)
    if store is not None:
        raise ExpressionError(
            f"file(): refusing to read {str(name)!r}: it is in a credential store ({store})",
            hint="git's own files, SSH keys and credential files are never readable from "
            "a template; pass a secret with {eval: {get_env: NAME}} instead",
        )
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


@functools.lru_cache(maxsize=1024)
def _compiled(text: str) -> Any:
    """Templates are compiled once per process: the same inputs render for every
    instance of a node template, and compiling costs more than rendering."""
    return environment().from_string(text)


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def render_template(text: str, ctx: EvalContext) -> Any:
    """Render in the sandbox; the result is Tainted when the template read any secret.

    Any failure is an ExpressionError (the task's failure); when the template read a
    secret, the underlying error's text is withheld, since it may quote a value derived
    from the secret. Rendering stops at ``ctx.deadline`` (RENDER_SECONDS from now without
    one)."""
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    from unfurl_lite.security.paths import PathError

    flag: list[bool] = []
    flag_token = _tainted.set(flag)
    ctx_token = _current_ctx.set(ctx)
    built_token = _built.set([0])
    deadline = ctx.deadline if ctx.deadline is not None else time.monotonic() + RENDER_SECONDS
    limit = RENDER_SECONDS if ctx.deadline is None else ctx.time_limit
    previous_trace = sys.gettrace()
    try:
        template = _compiled(text)
        sys.settrace(_tracer(deadline, limit))
        result = template.render(ctx.variables())
    except SecurityError as exc:
        raise ExpressionError(
            f"template not allowed by the sandbox: {_safe(exc, ctx)}"
        ) from None
    except PathError as exc:
        raise ExpressionError(exc.message, hint=exc.hint) from None
    except ExpressionError as exc:
        raise ExpressionError(_safe(exc.message, ctx), hint=exc.hint) from None
    except (TemplateError, Exception) as exc:
        where = _safe(text, ctx)
        if flag:
            raise ExpressionError(
                f"template error in {where!r}: {type(exc).__name__} (details withheld: "
                "the template read a secret)"
            ) from None
        raise ExpressionError(
            f"template error in {where!r}: {type(exc).__name__}: {_safe(exc, ctx)}"
        ) from None
    finally:
        sys.settrace(previous_trace)
        _built.reset(built_token)
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
    # TOSCA's/Unfurl's bare form of {eval: {get_env: NAME}}: the same secret value
    "get_env": lambda arg, ctx, depth: _eval({"get_env": arg}, ctx, depth),
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
