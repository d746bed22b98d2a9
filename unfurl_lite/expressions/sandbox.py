"""Rendering a Jinja2 template in the sandbox, taint-aware: a render that reads a secret
gives Tainted text, and its errors withhold what they would quote.

Templates render just before the task runs, so attributes set by earlier tasks are
visible. Only the globals and filters here exist: ``range`` bounded, ``get_env`` within
the allow-list, ``file`` inside the project, and Unfurl's own filters.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

from unfurl_lite.errors import ExpressionError, PathError, RenderCancelled, RenderTimeout
from unfurl_lite.expressions import catalog, limits
from unfurl_lite.expressions.attributes import mapping_attribute
from unfurl_lite.expressions.lazy import LazyInputs, LazyValues
from unfurl_lite.expressions.limits import (
    MAX_TEMPLATE_RESULT,
    RENDER_SECONDS,
    bounded_concat,
    bounded_formatter,
    check_binop,
    check_method,
    guarded_filter,
    runtime_only,
    too_big,
)
from unfurl_lite.expressions.native import (
    STRING_FILTERS,
    NativeJinjaText,
    finalize,
    native_concat,
    native_output,
    native_value,
    text_filter,
)
from unfurl_lite.expressions.scope import current_ctx
from unfurl_lite.security import redaction, taint
from unfurl_lite.security.environment import PROJECT_VARIABLES, allowed
from unfurl_lite.security.paths import PROTECTED, confine, read_regular_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.expressions.expr import EvalContext
    from unfurl_lite.model.narrow import YAMLValue

CREDENTIAL_STORES = PROTECTED  # path components file() never reads


def _secrets_read(value: Any, budget: int = 1000) -> bool | tuple[str, ...]:
    """Whether a value read by a template holds a secret (bounded, for huge attributes):
    True for one, the variables' names when it holds environment values only, or False."""
    stack: list[YAMLValue] = [value]
    variables: list[str] = []
    while stack and budget > 0:
        budget -= 1
        item = stack.pop()
        if isinstance(item, LazyInputs | LazyValues):
            continue  # its values are noted one by one as they are read
        if isinstance(item, taint.Sensitive):
            if not taint.from_environment(item):
                return True
            variables.extend(taint.env_variables(item) or ("",))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return tuple(variables) if variables else False


def _note(value: Any) -> Any:
    if taint.unmarked_render():
        found = _secrets_read(value)
        if found is True:
            taint.note_secret_read()
        elif found:
            taint.note_secret_read(found)
    return value


def _derive(result: Any, *values: Any) -> Any:
    """``result``, computed from ``values``: tainted when one of them is a secret (and kept
    an environment value when those are its only secrets)."""
    if not any(taint.derives(v) for v in values):
        return result
    return taint.derived(result, taint.sources(*values))


def _environment() -> Any:
    """The one Jinja2 environment templates render in, made on first use (jinja2 is not
    imported at start-up): Jinja's immutable sandbox made loud about unsafe access, taint-
    aware and bounded."""
    # start-up: keeps jinja2, markupsafe (31 modules) off `deploy` until _environment() runs
    from jinja2.exceptions import SecurityError
    from jinja2.nativetypes import NativeCodeGenerator
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Sandbox(ImmutableSandboxedEnvironment):
        """Jinja's immutable sandbox, made loud and taint-aware.

        Unsafe attributes raise at once instead of rendering as empty; every value read
        is checked for secrets so a rendered template that used one is wrapped too; and
        ``*``/``**`` and calls cannot build huge values.
        """

        code_generator_class = NativeCodeGenerator  # outputs are values; concat makes text
        intercepted_binops = frozenset(["*", "**", "%", "+"])
        concat = staticmethod(native_concat)  # blocks Jinja joins: Ansible's native concat

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            raise SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed"
            )

        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, Mapping) and not attribute.startswith("_"):
                return _note(mapping_attribute(self, obj, attribute, super().getattr))
            return _note(super().getattr(obj, attribute))

        def wrap_str_format(self, value: Any) -> Any:
            """``'...'.format`` and ``.format_map``, through a formatter that sizes each
            field before building it (jinja's own would build any width it is given)."""
            if getattr(value, "__name__", None) not in ("format", "format_map") or \
                    not isinstance(getattr(value, "__self__", None), str):
                return None
            text: str = value.__self__
            formatter = bounded_formatter(self)
            mapping = value.__name__ == "format_map"

            def bounded(*args: Any, **kwargs: Any) -> str:
                if mapping:
                    if kwargs or len(args) != 1:
                        raise TypeError("format_map() takes exactly one argument")
                    return type(text)(formatter.vformat(str(text), (), args[0]))
                return type(text)(formatter.vformat(str(text), args, kwargs))

            return bounded

        def getitem(self, obj: Any, argument: Any) -> Any:
            result = super().getitem(obj, argument)
            if isinstance(obj, taint.Sensitive):
                result = _derive(result, obj)
            return _note(result)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            check_binop(operator, left, right)
            result = super().call_binop(context, operator, left, right)
            too_big(result)
            return _note(_derive(result, left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, int) and a > MAX_TEMPLATE_RESULT
                   for a in (*args, *kwargs.values())):
                raise SecurityError("template call with a number argument that is too large")
            owner = getattr(__obj, "__self__", None)
            check_method(__obj, owner, args, kwargs)
            if owner is not None:
                _note(owner)
            for arg in (*args, *kwargs.values()):
                _note(arg)
            result = super().call(__context, __obj, *args, **kwargs)
            if too_big(result):
                raise SecurityError("template builds a value that is too large")
            return _note(_derive(result, owner, *args, *kwargs.values()))

    # start-up: keeps expressions.names (4 modules) off sandbox's import until _environment() runs
    from unfurl_lite.expressions.names import strict_undefined

    env = Sandbox(autoescape=False, keep_trailing_newline=False, undefined=strict_undefined(),
                  finalize=finalize)
    env.globals.clear()  # no range, lipsum, cycler, joiner, namespace from jinja's defaults
    env.globals.update(catalog.implemented("global"))
    env.filters.update(catalog.implemented("filter"))  # Unfurl's own (eval, map_value...)
    env.tests.update(catalog.implemented("test"))
    for name, function in list(env.filters.items()):
        if name in STRING_FILTERS:
            function = text_filter(function)
        env.filters[name] = guarded_filter(name, function)
    for name, test in list(env.tests.items()):
        env.tests[name] = runtime_only(test)  # type: ignore[arg-type]
    return env


def env_allowed(name: str, ctx: EvalContext | None) -> bool:
    """What ``get_env`` in a template may read: what an operation would get (the
    allow-list; everything with ``--env-passthrough``) plus what the spec declares with
    ``{eval: {get_env: NAME}}``."""
    if ctx is None:
        return allowed(name) or name in PROJECT_VARIABLES
    return (ctx.env_passthrough or allowed(name) or name in PROJECT_VARIABLES
            or name in ctx.declared_env)


def get_env_global(name: str, default: Any = None) -> Any:
    """``{{ get_env('TOKEN') }}``: the value is a secret, as with ``{eval: {get_env: }}``."""
    if not env_allowed(str(name), current_ctx.get()):
        raise ExpressionError(
            f"get_env({str(name)!r}): {name} is not passed to operations (not in the "
            "allow-list) and the ensemble does not declare it",
            hint=f"declare it in the spec, e.g. an input with default "
            f"{{eval: {{get_env: {name}}}}}, or run with --env-passthrough",
        )
    value = os.environ.get(str(name), default)
    return None if value is None else taint.mark_secret(value, str(name))


def lookup_global(plugin: str, *terms: Any, wantlist: bool = False, **options: Any) -> Any:
    """Ansible's ``lookup('env', 'NAME', ...)``, which Unfurl's templates use: the plugin
    of the catalog (``env`` reads a variable as ``get_env`` does); its values joined by
    commas when they are text, as Ansible's ``lookup`` gives them, or the list with
    ``wantlist=True``."""
    values = query_global(plugin, *terms, **options)
    if wantlist:
        return values
    if values and all(isinstance(v, str) for v in values):
        joined = ",".join(values)
        return taint.derived(joined, taint.sources(*values)) if taint.derives(values) else joined
    return values[0] if len(values) == 1 else values


def query_global(plugin: str, *terms: Any, **options: Any) -> list[Any]:
    """Ansible's ``query('env', 'NAME', ...)`` (also ``q``): the plugin's values as a list."""
    function = catalog.implementation("lookup", str(plugin))
    if function is None:
        message, hint = catalog.refusal("lookup", str(plugin))
        raise ExpressionError(f"lookup({str(plugin)!r}): {message}", hint=hint)
    return list(function(*terms, **options))


def env_lookup(*names: Any, default: Any = "", **options: Any) -> list[Any]:
    """The ``env`` lookup plugin: each variable under ``get_env``'s rules (a secret taking
    part in change detection); a missing one is ``default`` ('')."""
    return [get_env_global(str(name), default) for name in names]


def file_global(name: str) -> str:
    """``{{ file('config/app.ini') }}``: a file's text, only from inside the project."""

    ctx = current_ctx.get()
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
        data = read_regular_file(path, MAX_TEMPLATE_RESULT, f"file({str(name)!r})")
    except PathError as exc:
        raise ExpressionError(exc.message, hint=exc.hint) from None
    return data.decode("utf-8", errors="replace")


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
    env, body = with_overrides(text)
    return env.from_string(escape_backslashes(body, env))


#: what a template's ``#jinja2:`` first line may set (Ansible's overrides): Jinja2's syntax
JINJA2_OVERRIDES = frozenset({
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix",
    "line_comment_prefix", "trim_blocks", "lstrip_blocks", "newline_sequence",
    "keep_trailing_newline"})


def with_overrides(text: str) -> tuple[Any, str]:
    """The environment a template renders in, and its text: a first line
    ``#jinja2: variable_start_string: '<%', trim_blocks: False`` sets Jinja2's syntax for
    the rest, as Ansible reads it (each value a Python literal)."""
    if not text.startswith("#jinja2:"):
        return environment(), text
    import ast  # start-up: keeps ast off a job that renders nothing (`deploy`)

    line, _, body = text.partition("\n")
    settings: dict[str, Any] = {}
    for pair in line[len("#jinja2:"):].split(","):
        key, colon, value = pair.partition(":")
        key = key.strip()
        if not colon or key not in JINJA2_OVERRIDES:
            raise ExpressionError(
                f"template: the override {pair.strip()!r} of its #jinja2: line is not "
                "supported", hint="set " + ", ".join(sorted(JINJA2_OVERRIDES)) +
                " as `key: 'value'`, separated by commas")
        try:
            settings[key] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ExpressionError(f"template: the override {pair.strip()!r} of its #jinja2: "
                                  "line is not a literal", hint="quote text: key: '<%'") from None
    return _overlay(tuple(sorted(settings.items()))), body


@functools.lru_cache(maxsize=64)
def _overlay(settings: tuple[tuple[str, Any], ...]) -> Any:
    return environment().overlay(**dict(settings))


def escape_backslashes(text: str, env: Any = None) -> str:
    """Ansible's rule for a backslash in a string inside ``{{ }}``: it is doubled, so
    ``regex_replace('\\d', ...)`` written once in YAML means the regex ``\\d`` (YAML and
    jinja would each read it otherwise)."""
    env = env or environment()
    if "\\" not in text or env.variable_start_string not in text:
        return text
    out: list[Any] = []
    inside = False
    for _, kind, value in env.lex(env.preprocess(text)):
        if kind == "variable_begin":
            inside = True
        elif kind == "variable_end":
            inside = False
        elif inside and kind == "string":
            value = value.replace("\\", "\\\\")
        out.append(value)
    return "".join(out)


def render_template(text: str, ctx: EvalContext, native: bool = False) -> Any:
    """Render in the sandbox; the result is Tainted when the template read any secret.
    With ``native``, a template whose whole output is one value that is not text gives
    that value (Ansible's native types: ``{{ '::app' | eval }}`` is the instance).

    Any failure is an ExpressionError (the task's failure); when the template read a
    secret, the underlying error's text is withheld, since it may quote a value derived
    from the secret. Rendering stops at ``ctx.deadline`` (RENDER_SECONDS from now without
    one)."""
    # start-up: keeps jinja2, markupsafe (30 modules) off `deploy` until render_template() runs
    from jinja2 import TemplateAssertionError, TemplateError, UndefinedError
    from jinja2.exceptions import SecurityError

    with taint.render_scope(ctx.secrets) as flag:
        ctx_token = current_ctx.set(ctx)
        built_token = limits.built.set([0])
        limit = RENDER_SECONDS if ctx.deadline is None else ctx.time_limit
        try:
            template = _compiled(text)
            with limits.render_limits(ctx.deadline, limit, ctx.cancel):
                pieces = template.root_render_func(template.new_context(ctx.variables()))
                result = native_output(pieces) if native else bounded_concat(pieces)
        except SecurityError as exc:
            raise ExpressionError(
                f"template not allowed by the sandbox: {_safe(exc, ctx)}"
            ) from None
        except PathError as exc:
            raise ExpressionError(exc.message, hint=exc.hint) from None
        except (RenderTimeout, RenderCancelled):
            raise  # their messages quote nothing; the scheduler tells them apart
        except ExpressionError as exc:
            raise ExpressionError(_safe(exc.message, ctx), hint=exc.hint) from None
        except UndefinedError as exc:  # it names names, never values: always said
            raise ExpressionError(
                f"template error in {_safe(text, ctx)!r}: {_safe(exc, ctx)}",
                hint="check the spelling, or test it first: "
                "{% if NAME is defined %} or {{ NAME | default('') }}") from None
        except TemplateAssertionError as exc:
            raise _unknown_name(exc, text, ctx) from None
        except (TemplateError, Exception) as exc:  # any filter on any value: the render fails
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
            limits.built.reset(built_token)
            current_ctx.reset(ctx_token)
    if not isinstance(result, str):
        return taint.tainted_copy(result) if flag else result
    if len(result) > MAX_TEMPLATE_RESULT:
        raise ExpressionError(f"template result is longer than {MAX_TEMPLATE_RESULT} characters")
    variables = taint.env_only(flag)
    if variables is not None:
        return taint.env_tainted(result, variables)
    if flag or any(f in result for f in redaction.secret_forms(ctx.secrets)):
        return taint.Tainted(result)
    return result


def render_native(text: str, ctx: EvalContext) -> Any:
    """Render as Unfurl does, with Ansible's native types: the template is stripped, and
    what it renders is read as a Python literal when it is one (``"{{ stdout | trim }}"``
    of ``42`` is the integer 42, ``"{{ [1, 2] }}"`` a list), else it stays text. A quoted
    literal keeps its quotes, a template whose one output is a string filter's stays text,
    and text built from a secret stays tainted text (it is redacted, never parsed)."""
    rendered = render_template(text.strip(), ctx, native=True)
    if isinstance(rendered, NativeJinjaText):
        return str(rendered)
    if not isinstance(rendered, str) or isinstance(rendered, taint.Sensitive):
        return rendered
    return native_value(rendered)


_NO_SUCH = re.compile(r"No (filter|test) named '([^']*)'")


def _unknown_name(exc: Exception, text: str, ctx: EvalContext) -> ExpressionError:
    """A filter or test this tool does not have, in the catalog's words."""
    found = _NO_SUCH.search(str(exc))
    where = _safe(text, ctx)
    if found is None:
        return ExpressionError(f"template error in {where!r}: {_safe(exc, ctx)}")
    kind: catalog.Kind = "filter" if found.group(1) == "filter" else "test"
    names = environment().filters if kind == "filter" else environment().tests
    message, hint = catalog.refusal(kind, found.group(2), frozenset(names))
    return ExpressionError(f"template error in {where!r}: {message}", hint=hint)


def _safe(text: Any, ctx: EvalContext) -> str:
    """An error message may quote the value that failed (``int('s3cret')``)."""
    return redaction.redact_text(str(text), ctx.secrets)

