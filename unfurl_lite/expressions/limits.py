"""The sandbox's limits: what a template may build and for how long.

A template is user input that runs in the job's process, so every step that can build a
large value (an operator, a method, a filter, the output itself) is sized before or as it
runs, the whole render has a budget, and a trace function stops a render at its deadline.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from unfurl_lite.errors import ExpressionError, RenderCancelled, RenderTimeout
from unfurl_lite.security import taint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

MAX_TEMPLATE_RESULT = 1_000_000  # characters or items a template operation may build
MAX_RENDER_BUILT = 20_000_000  # characters and items all the steps of one render may build
MAX_INT_BITS = 100_000  # bits of an integer a template may compute (about 30 000 digits)
RENDER_SECONDS = 2.0  # a task's templates, when its operation has no shorter timeout
JOB_RENDER_SECONDS = 2.0  # every template a job (or a command) renders, in all...
RENDER_ALLOWANCE = 0.005  # ...plus this for each render, so a large job's budget scales


#: characters and items the render under way has built so far
built: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "unfurl_lite_built", default=None
)


def too_big(value: YAMLValue | bytes) -> bool:
    """Whether a value is over the limit for one value, counting it against the render's
    budget: many values each under the limit (``map('center', 999999)`` over a long
    list) must not add up to gigabytes either."""
    if not isinstance(value, str | list | tuple | bytes):
        return False
    so_far = built.get()
    if so_far is not None:
        so_far[0] += len(value)
        if so_far[0] > MAX_RENDER_BUILT:
            raise _refuse("template builds too much: more than "
                          f"{MAX_RENDER_BUILT} characters and items in all")
    return len(value) > MAX_TEMPLATE_RESULT


def _refuse(what: str) -> Any:
    # start-up: keeps jinja2, markupsafe (30 modules) off `plan`, `validate` until _refuse() runs
    from jinja2.exceptions import SecurityError

    return SecurityError(f"{what} (a template may build values of at most "
                         f"{MAX_TEMPLATE_RESULT} characters, {MAX_RENDER_BUILT} in all, "
                         f"and integers of {MAX_INT_BITS} bits)")


_PRINTF = re.compile(r"%(\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?([a-zA-Z%])")
_NUMBER = re.compile(r"\d+")


def _printf_size(text: str, args: YAMLValue = ()) -> int:
    """Characters ``text % args`` may produce beyond its own length: its widths and
    precisions, a ``*`` one taken from ``args`` as ``%`` takes it (``'%*d' % (10**9, 1)``)."""
    values = list(args) if isinstance(args, tuple | list) else [args]
    total, index = 0, 0
    for match in _PRINTF.finditer(text):
        key, width, precision, kind = match.groups()
        if kind == "%" and not (width or precision):
            continue
        for number in (width, precision):
            if number == "*":
                given = values[index] if index < len(values) else 0
                index += 1
                total += abs(given) if isinstance(given, int) else 0
            elif number:
                total += int(number)
        if key is None:
            index += 1
    return total


def _format_size(text: str) -> int:
    """The same for ``str.format``: the widths and precisions in its replacement fields."""
    import string  # start-up: only for templates that call format: not on every command's imports

    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return 0
    return sum(max((int(n) for n in _NUMBER.findall(spec or "")), default=0)
               for _, _, spec, _ in fields)


#: a format spec's width and precision (``>999999999``, ``.5f``): Python's mini-language
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(\d*)[,_]?(?:\.(\d+))?[a-zA-Z%]?")


def bounded_formatter(environment: Any) -> Any:
    """The formatter ``str.format`` and ``str.format_map`` get in the sandbox: each
    field's width and precision (nested ones, ``'{:>{}}'.format(1, 10**9)``, resolved)
    is checked before the field is built, and so is the running total."""
    # start-up: keeps jinja2, markupsafe (31 modules) off `plan` until bounded_formatter() runs
    from jinja2.sandbox import SandboxedFormatter

    class BoundedFormatter(SandboxedFormatter):
        built = 0

        def vformat(self, *args: Any, **kwargs: Any) -> Any:
            self.built = 0  # counted per call
            return super().vformat(*args, **kwargs)

        def format_field(self, value: Any, format_spec: str) -> Any:
            spec = _SPEC.fullmatch(format_spec)
            numbers = [int(n) for n in (spec.groups() if spec else ()) if n]
            if any(n > MAX_TEMPLATE_RESULT for n in numbers):
                raise _refuse(f"a format width or precision of {max(numbers)} is too large")
            text = super().format_field(value, format_spec)
            self.built += len(text)
            if self.built > MAX_TEMPLATE_RESULT:
                raise _refuse("template builds a value that is too large")
            return text

    return BoundedFormatter(environment)


def _int_bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def check_binop(operator: str, left: YAMLValue, right: YAMLValue) -> None:
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
        if len(left) + _printf_size(left, right) > MAX_TEMPLATE_RESULT:
            raise _refuse("template builds a value that is too large")
    elif (isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple)
            and len(left) + len(right) > MAX_TEMPLATE_RESULT):
        raise _refuse("template builds a value that is too large")


def check_method(obj: Any, owner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
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
        return len(text) + _printf_size(text, kwargs or tuple(rest))
    if name == "join" and hasattr(value, "__len__"):
        return len(str(arg(0, "d", ""))) * len(value)
    return 0


def _pass_first(passes: Any, context: Any) -> tuple[Any, ...]:
    """What jinja would hand a filter or test first, from the render's context."""
    from jinja2.utils import _PassArg  # start-up: keeps jinja2, markupsafe (30 modules) off `plan`

    if passes is _PassArg.context:
        return (context,)
    if passes is _PassArg.eval_context:
        return (context.eval_ctx,)
    if passes is _PassArg.environment:
        return (context.environment,)
    return ()


def runtime_only(function: Callable[..., Any]) -> Callable[..., Any]:
    """A test (or filter) jinja may only call while rendering: jinja otherwise calls one
    whose arguments are constants while it compiles, and keeps the result in the compiled
    template (``{{ {'get_input': 'pw'} | eval }}`` would keep the secret, in clear, for
    every later render, and ``'conf' | file`` the file as it was)."""
    # start-up: keeps jinja2, markupsafe (30 modules) off `plan` until runtime_only() runs
    from jinja2.utils import _PassArg, pass_context

    passes = _PassArg.from_obj(function)

    @functools.wraps(function)
    def at_render(context: Any, *args: Any, **kwargs: Any) -> Any:
        return function(*_pass_first(passes, context), *args, **kwargs)

    return pass_context(at_render)


def guarded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that refuses to build a huge value and taints what it derives from a
    secret (jinja calls filters directly, not through the sandbox's ``call``); called
    only while rendering (see :func:`runtime_only`)."""
    # start-up: keeps jinja2, markupsafe (30 modules) off `plan` until guarded_filter() runs
    from jinja2.utils import _PassArg, pass_context

    passes = _PassArg.from_obj(function)

    @functools.wraps(function)
    def guarded(context: Any, *args: Any, **kwargs: Any) -> Any:
        values: list[YAMLValue | Iterator[Any]] = list(args)
        for index, item in enumerate(values):
            if isinstance(item, Iterator):  # see whether a generator yields secrets
                values[index] = list(_bounded_items(item))
            elif isinstance(item, int) and not isinstance(item, bool) and (
                    item > MAX_TEMPLATE_RESULT) and index > 0:  # the piped value is no size
                raise _refuse(f"{name}: a number argument that is too large")
        if _filter_size(name, tuple(values), kwargs) > MAX_TEMPLATE_RESULT:
            raise _refuse(f"{name}: the result would be too large")
        result = function(*_pass_first(passes, context), *values, **kwargs)
        if any(taint.derives(v) for v in (*values, *kwargs.values())):
            result = taint.derived(list(_bounded_items(result)) if isinstance(
                result, Iterator) else result)
        if too_big(result):
            raise _refuse(f"{name}: the result is too large")
        return result

    return pass_context(guarded)


def _bounded_items(items: Iterator[Any]) -> Iterator[Any]:
    for count, item in enumerate(items):
        if count >= MAX_TEMPLATE_RESULT:
            raise _refuse("template builds a list that is too large")
        yield item


def bounded_concat(pieces: Any) -> str:
    """The template's output, refused as soon as it grows past the limit (a loop that
    prints a large value many times), before the pieces are joined."""
    out: list[str] = []
    total = 0
    for piece in pieces:
        if not isinstance(piece, str):  # a value (the sandbox renders natively): its text
            piece = str(piece)
        total += len(piece)
        if total > MAX_TEMPLATE_RESULT:
            raise _refuse("template output too large")
        out.append(piece)
    return "".join(out)


@dataclass
class RenderBudget:
    """The seconds a job (or a command such as ``plan``) may spend rendering templates in
    all: one hostile template after another cannot add up to minutes."""

    left: float = JOB_RENDER_SECONDS
    depth: int = 0  # renders under way, nested ones included (only the outer one is charged)


#: the budget of the job or command under way (None: each render is limited on its own)
budget: contextvars.ContextVar[RenderBudget | None] = contextvars.ContextVar(
    "unfurl_lite_render_budget", default=None
)


@contextlib.contextmanager
def render_budget(seconds: float = JOB_RENDER_SECONDS) -> Iterator[RenderBudget]:
    """A budget for the renders of a job or a command; nested scopes share the outer one."""
    outer = budget.get()
    if outer is not None:
        yield outer
        return
    token = budget.set(RenderBudget(seconds))
    try:
        yield budget.get() or RenderBudget(seconds)
    finally:
        budget.reset(token)


def budgeted(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a use case: a job, a plan, a status report) renders within one
    :class:`RenderBudget`."""

    @functools.wraps(function)
    def within(*args: Any, **kwargs: Any) -> Any:
        with render_budget():
            return function(*args, **kwargs)

    return within


def task_deadline(timeout: float | None, began: float) -> tuple[float | None, float]:
    """A task's render limits, as (deadline, seconds): an operation's ``timeout`` is wall
    time from ``began``; without one, no deadline and RENDER_SECONDS of CPU time."""
    if timeout:
        return began + timeout, timeout
    return None, RENDER_SECONDS


@contextlib.contextmanager
def render_limits(deadline: float | None, limit: float,
                  cancel: Any = None) -> Iterator[None]:
    """While a template renders: stop it at its deadline (an operation's timeout, wall
    time), after ``limit`` seconds of the rendering thread's CPU without one, when the
    job's render budget (CPU too) is spent, or as soon as the job is cancelled
    (``cancel``: an Event), whichever comes first.

    The limits without a timeout count CPU, not wall time: they are there to stop a
    template that computes for hours, and on a loaded machine (CI, a busy host) an ordinary
    template waiting for a core, or importing its filters, crossed 2 s of wall time."""

    now, cpu = time.monotonic(), time.thread_time()
    spend = budget.get()
    outer = spend is not None and spend.depth == 0
    cpu_end = cpu + limit if deadline is None else None
    why = f"rendering took longer than {limit:g} s (the operation's timeout)" \
        if deadline is not None else \
        f"rendering took longer than {limit:g} s of CPU time (the limit for a task's " \
        "templates without an operation timeout)"
    cpu_why = why
    if spend is not None:
        if outer:
            spend.left += RENDER_ALLOWANCE
        if spend.left <= 0:
            raise RenderTimeout(_SPENT, hint=_HINT)
        if cpu_end is None or cpu + spend.left < cpu_end:
            cpu_end, cpu_why = cpu + spend.left, _SPENT
        spend.depth += 1
    previous = sys.gettrace()
    sys.settrace(tracer(Limits(deadline, why, cpu_end, cpu_why, now, cpu), cancel))
    try:
        yield
    finally:
        sys.settrace(previous)
        if spend is not None:
            spend.depth -= 1
            if outer:
                spend.left -= time.thread_time() - cpu


_SPENT = (f"the job's templates took longer than its render budget ({JOB_RENDER_SECONDS:g} s "
          f"of CPU time in all, and {RENDER_ALLOWANCE * 1000:g} ms more for each template)")
_HINT = "simplify the template, or raise the operation's timeout"


@dataclass(frozen=True)
class Limits:
    """When a render must stop: a wall-time deadline (None: none) and a CPU-time one."""

    deadline: float | None
    why: str
    cpu_end: float | None
    cpu_why: str
    began: float  # time.monotonic() at the start
    cpu_began: float  # time.thread_time() at the start

    def check(self, now: float) -> None:
        if self.deadline is not None and now > self.deadline:
            raise RenderTimeout(self.why, hint=_HINT)
        # a thread's CPU time never runs ahead of the wall clock: read it (a system call)
        # only once as much wall time has passed as the CPU limit allows
        if self.cpu_end is not None and now - self.began > self.cpu_end - self.cpu_began \
                and time.thread_time() > self.cpu_end:
            raise RenderTimeout(self.cpu_why, hint=_HINT)


def tracer(limits: Limits, cancel: Any = None) -> Callable[..., Any]:
    """A trace function watching only the template's own code: each line it runs checks
    the limits and the job's cancel event, so a loop that would run for hours stops
    (C-level work cannot be interrupted this way; the size limits keep each such step
    short)."""

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            limits.check(time.monotonic())
            if cancel is not None and cancel.is_set():
                raise RenderCancelled("the job was cancelled while a template rendered")
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == "<template>" else None

    return trace


def bounded_range(*args: int) -> range:
    result = range(*args)
    if len(result) > 100_000:
        raise ExpressionError("range() in a template is limited to 100000 items")
    return result
