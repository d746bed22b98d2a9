"""Evaluating Unfurl's expressions: queries walked over the instances, ``{eval: ...}``
with ``vars``, ``foreach``/``select``, ``strict``, and the expression functions.

Unfurl's rules are kept exactly, since documents rely on them:

- a query gives a list of results; ``{eval: ...}`` is one value when there is one result,
  null when none, the list when several (``wantList`` asks for the list);
- a function's list value is several results (``{if: .., then: [a]}`` is ``a``);
- a relative name (``port``) is looked up on the instance and then on each instance it is
  hosted on; predicates ``[...]`` on a ``*`` segment are ignored;
- a value that is itself an expression is evaluated when the walk reaches it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from unfurl_lite.errors import ExpressionError, UndefinedVariable
from unfurl_lite.expressions import catalog
from unfurl_lite.expressions.analysis import is_template
from unfurl_lite.expressions.query import parse_query
from unfurl_lite.expressions.quoting import (
    evaluated_again,
    is_quoted,
    plain_since,
    quotes_made,
)
from unfurl_lite.expressions.walk import External, Value, query_results

if TYPE_CHECKING:
    from unfurl_lite.expressions.expr import EvalContext

#: keys a ``{eval: ...}``/``{ref: ...}`` mapping may have beside it
REF_KEYS = frozenset({"vars", "trace", "foreach", "select", "strict"})
_BUILT_IN_VARS = {"true": True, "false": False, "null": None}


class _Signal:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"${self.name}"


BREAK = _Signal("break")
CONTINUE = _Signal("continue")


def top_level_functions() -> frozenset[str]:
    return catalog.top_level_functions()


def is_ref(value: Value) -> bool:
    """Whether a mapping is an expression Unfurl evaluates where it stands: ``{eval: ...}``
    or ``{ref: ...}`` with only ``vars``/``foreach``/``select``/``strict``/``trace`` beside
    it, or one of the functions that need no ``eval`` (``get_input``, ``concat``...)."""
    if not isinstance(value, Mapping) or not value:
        return False
    if "eval" in value or "ref" in value:
        return sum(1 for k in REF_KEYS if k in value) + 1 == len(value)
    return len(value) == 1 and next(iter(value)) in top_level_functions()


# --- the scope of one evaluation ---------------------------------------------------------


_UNSET: Any = object()


class Scope:
    """Unfurl's RefContext: the current resource, the variables, the evaluation context.
    The current resource defaults to the context's instance (built on first use)."""

    __slots__ = ("_current", "busy", "ctx", "foreach", "kw", "last", "resolved", "settled",
                 "vars")

    def __init__(self, ctx: EvalContext, current: Any, vars: Mapping[str, Any],
                 foreach: bool = False) -> None:
        self.ctx = ctx
        self._current = _UNSET if current is None else current
        self.vars: dict[str, Any] = dict(vars)
        self.resolved: dict[str, Any] = {}
        self.busy: set[str] = set()
        self.foreach = foreach
        self.kw: Mapping[str, Any] = {}
        self.last = self._current
        #: lists and mappings a query read from data that hold an expression (what `q`
        #: kept), by id: final, as Unfurl's ResultsList/ResultsMap, which a function's
        #: result does not map again (shared by the scope's copies)
        self.settled: dict[int, Any] = {}

    @property
    def current(self) -> Any:
        if self._current is _UNSET:
            self._current = self.ctx.current_entity()
            if self.last is _UNSET:
                self.last = self._current
        return self._current

    @current.setter
    def current(self, value: Any) -> None:
        self._current = value

    def copy(self, vars: Mapping[str, Any] | None = None, current: Any = _UNSET,
             foreach: bool | None = None) -> Scope:
        scope = Scope(self.ctx, None, {**self.vars, **(vars or {})},
                      self.foreach if foreach is None else foreach)
        scope._current = self._current if current is _UNSET else current
        scope.resolved = {k: v for k, v in self.resolved.items() if k not in (vars or {})}
        scope.busy = set(self.busy)
        scope.last = self.last if current is _UNSET else current
        scope.settled = self.settled
        return scope

    def var(self, name: str) -> Any:
        if name in self.resolved:
            return self.resolved[name]
        if name in self.vars:
            if name in self.busy:
                raise ExpressionError(f"query variable ${name} refers to itself")
            self.busy.add(name)
            try:
                raw = self.vars[name]
                value = self.current if raw is _UNSET else _lazy_value(raw, self)
            finally:
                self.busy.discard(name)
        elif name in _BUILT_IN_VARS:
            value = _BUILT_IN_VARS[name]
        else:
            variables = self.ctx.variables()
            if name not in variables:
                raise UndefinedVariable(f"query variable ${name} is not defined",
                                      hint="define it with `vars:` beside the `eval:`")
            value = variables[name]
        self.resolved[name] = value
        return value

    is_ref = staticmethod(is_ref)

    def results_where_walked(self, expr: Value) -> list[Any]:
        """An expression a query reached, evaluated at the last instance it walked."""
        return ref_results(expr, self.copy(
            current=self.last if self.last is not _UNSET else self.current))

    def evaluated_again(self, value: Any) -> Any:
        """Quoted text in ``value`` rendered here, quoted expressions in its data evaluated."""
        # start-up: keeps expressions.sandbox (13 modules) off resolve's import until a q is read
        from unfurl_lite.expressions.sandbox import render_native

        return evaluated_again(value, lambda text: render_native(text, self.render_context()),
                               lambda expr: _resolved(expr, self), is_ref, is_template)

    def render_context(self) -> EvalContext:
        """The evaluation context a template here renders in: its variables include this
        scope's (those that evaluate; one being evaluated now is left out)."""
        if not self.vars:
            return self.ctx
        found: dict[str, Any] = {}
        for name, raw in self.vars.items():
            if name in self.busy or isinstance(raw, _Signal) or name == "start":
                continue
            try:
                found[name] = self.var(name)
                if is_ref(raw) and is_quoted(found[name]):  # Ansible templates it when read
                    self.busy.add(name)
                    try:
                        found[name] = self.evaluated_again(found[name])
                    finally:
                        self.busy.discard(name)
            except (ExpressionError, RecursionError):
                continue
        return dataclasses.replace(self.ctx, extra={**self.ctx.extra, **found})


def _lazy_value(value: Any, scope: Scope) -> Any:
    """A variable's or walked value's own expressions, evaluated (Unfurl's lazy
    ``Results._map_value``): an expression with several results is their list."""
    if isinstance(value, _Signal):
        return value
    if is_ref(value):
        results = ref_results(value, scope)
        if "foreach" in value or len(results) > 1:
            return results
        return results[0] if results else None
    return _mapped(value, scope)


# --- evaluating values ------------------------------------------------------------------


def map_value(value: Value, scope: Scope, want_list: bool = False) -> Any:
    """A value with every expression in it evaluated (Unfurl's ``map_value``); what ``q``
    quoted in it is plain text (the mark is for the evaluation only: quoting.py)."""
    made = quotes_made()
    return plain_since(made, _mapped(value, scope, want_list))


def resolve(expr: Any, scope: Scope, want: str = "one") -> Any:
    """Unfurl's ``Ref.resolve``: ``want`` is "one" (a value, a list when several, null
    when none), "list" (the values) or "results" (the list, foreach or not)."""
    made = quotes_made()
    found = _resolved(expr, scope, want)
    value = plain_since(made, found)
    if value is not found and id(found) in scope.settled:  # (its plain copy is as final)
        scope.settled[id(value)] = value
    return value


def stored_value(raw: Value, scope: Scope) -> Any:
    """A value an instance holds, read (Unfurl's ``ResultsMap`` item): evaluated, and when it
    was an expression, what ``q`` quoted in its result rendered once more (a property
    ``{q: "{{ x }}"}`` reads as x's value); quoted text nested in its data stays marked for
    a query's last key (quoting.py)."""
    found = _mapped(raw, scope)
    if is_ref(raw) and is_quoted(found):
        found = scope.evaluated_again(found)
    return found


def _mapped(value: Value, scope: Scope, want_list: bool = False) -> Any:
    # start-up: keeps expressions.sandbox (13 modules) off resolve's import until map_value() runs
    from unfurl_lite.expressions.sandbox import render_native

    if is_ref(value):
        return _resolved(value, scope, "list" if want_list else "one")
    if id(value) in scope.settled:
        return value
    if isinstance(value, Mapping):
        return {k: _mapped(v, scope, want_list) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mapped(v, scope, want_list) for v in value]
    if is_template(value):
        return render_native(value, scope.render_context())
    return value


def _resolved(expr: Any, scope: Scope, want: str = "one") -> Any:
    """Unfurl's ``Ref.resolve``: ``want`` is "one" (a value, a list when several, null
    when none), "list" (the values) or "results" (the list, foreach or not)."""
    return _finish(expr, ref_results(expr, scope), want)


def _finish(expr: Value, results: list[Any], want: str) -> Any:
    if want != "results":
        results = [r.get() if isinstance(r, External) else r for r in results]
    if want != "one" or (isinstance(expr, Mapping) and expr.get("foreach") and _is_ref_form(expr)):
        return results
    strict = expr.get("strict") if isinstance(expr, Mapping) and _is_ref_form(expr) else None
    if not results:
        if strict in ("required", "notnull"):
            raise ExpressionError(f"expression {_source(expr)!r} must return results")
        return None
    if len(results) == 1:
        if strict == "notnull" and results[0] is None:
            raise ExpressionError(f"expression {_source(expr)!r} must not be null")
        return results[0]
    return results


def _is_ref_form(expr: Mapping[str, Any]) -> bool:
    keys = list(expr)
    return bool(keys) and keys[0] not in top_level_functions()


def _source(expr: Value) -> Any:
    if isinstance(expr, Mapping) and _is_ref_form(expr):
        return expr.get("eval", expr.get("ref", expr))
    return expr


def refuse_break() -> None:
    """``trace: break``, met where validate could not see it (an expression a template
    builds): Unfurl 1.2.0 calls ``breakpoint()`` there; a job here never waits for a
    debugger, so the expression fails instead of running on unseen."""
    raise ExpressionError("`trace: break` stops Unfurl in Python's debugger: not supported",
                          hint="remove it, or give a trace level (trace: 1)")


def ref_results(expr: Value, scope: Scope) -> list[Any]:
    """The results of ``{eval: ..., vars:, foreach:, select:}`` (or a bare expression)."""
    vars: dict[str, Any] = {}
    select = None
    source = expr
    if isinstance(expr, Mapping) and _is_ref_form(expr):
        vars = dict(expr.get("vars") or {})
        select = expr.get("foreach") or expr.get("select")
        source = expr.get("eval", expr.get("ref", expr))
        if expr.get("trace") == "break":
            refuse_break()
    inner = scope.copy(vars={"start": _UNSET, **vars})
    if "start" in vars:
        inner.current = inner.last = inner.var("start")
    found = eval_ref(source, inner)
    if found and select:  # (an empty foreach or select is none, as in Unfurl)
        found = for_each(select, found, inner)
    return found


def eval_ref(value: Value, scope: Scope) -> list[Any]:
    """An expression's results: a function call, a query, a template, or a value."""
    # start-up: keeps expressions.sandbox (13 modules) off resolve's import until eval_ref() runs
    from unfurl_lite.expressions.sandbox import render_native

    if isinstance(value, Mapping):
        function_key = _function_key(value)
        if function_key is not None:
            if "var" in value:
                raise ExpressionError(
                    "unexpected 'var' found, did you intend it for the parent?")
            if function_key != "foreach" and "foreach" in value:
                raise ExpressionError(
                    "unexpected 'foreach' found, did you intend it for the parent?")

            result = _call(function_key, value, scope)
            if function_key in ("q", "sensitive"):  # kept whole, as Unfurl keeps them
                return [result]
            if function_key == "template":  # what a template rendered is final, as Unfurl's
                return list(result) if isinstance(result, list) else [result]  # (unsafe text)
            return results_of(result, scope)
        if "ref" not in value and "eval" not in value:
            raise ExpressionError(
                f"no expression function in {_short(value)}",
                hint="an `eval:` mapping names one function (if, and, or, not, eq, q, "
                "concat, template, file, lookup...); see docs/expressions.md")
        return results_of(value, scope)
    if isinstance(value, str):
        if is_template(value):
            return [render_native(value, scope.render_context())]
        return query_results(parse_query(value), scope)
    return results_of(value, scope)


def _function_key(value: Mapping[str, Any]) -> str | None:
    """The first key that names a function of the catalog (implemented or refused)."""
    return next((str(k) for k in value if catalog.entry("function", str(k)) is not None),
                None)


def _call(name: str, mapping: Mapping[str, Any], scope: Scope) -> Any:
    """The catalog's function ``name`` applied to its mapping (Unfurl's ``ctx.kw``)."""
    function = catalog.implementation("function", name)
    if function is None:
        message, hint = catalog.refusal("function", name)
        raise ExpressionError(message, hint=hint)
    scope.kw = mapping
    return function(mapping[name], scope)


def _short(value: Value) -> str:
    text = repr(dict(value)) if isinstance(value, Mapping) else repr(value)
    return text if len(text) < 120 else text[:117] + "..."


def results_of(value: Value, scope: Scope) -> list[Any]:
    """A value as results (Unfurl's ``_eval_ref_results``): an expression's results, each
    item of a list one result, null none, anything else one result."""
    if is_ref(value):
        return ref_results(value, scope)
    if value is None:
        return []
    if isinstance(value, list):
        if id(value) in scope.settled:
            return list(value)
        return [_mapped(v, scope) for v in value]
    return [_mapped(value, scope)]


def eval_for_function(value: Any, scope: Scope) -> Any:
    """An argument of ``if``/``and``/``or``: its one value, or its list of results."""
    if scope.kw.get("map_value"):
        return _mapped(value, scope)
    found = eval_ref(value, scope)
    if not found:
        return None
    return found[0] if len(found) == 1 else found


# --- foreach and select -------------------------------------------------------------------


def for_each(select: Any, found: list[Any], scope: Scope) -> list[Any]:
    if select == "$true":
        return found
    first: Value = found[0] if len(found) == 1 else None
    if isinstance(first, list):
        return _for_each(select, list(enumerate(first)), scope)
    return _for_each(select, list(enumerate(found)), scope)


def for_each_function(arg: Any, scope: Scope) -> list[Any]:
    """``{eval: {foreach: ...}}`` over the current resource's items."""
    current: Value = scope.current
    if isinstance(current, Mapping):
        return _for_each(arg, list(current.items()), scope)
    if isinstance(current, list):
        return _for_each(arg, list(enumerate(current)), scope)
    return _for_each(arg, [(0, current)], scope)


def _for_each(select: Value, items: list[tuple[Any, Any]], scope: Scope) -> list[Any]:
    """Unfurl's ``foreach``: each item evaluated in a scope of its own (``key``, ``item``,
    ``index``, ``break``/``continue``), mappings evaluated after the loop as Unfurl's lazy
    results are."""
    if not isinstance(select, str | Mapping):  # (Unfurl 1.2.0 fails on it too)
        raise ExpressionError(f"foreach: {_short(select)} is not an expression",
                              hint="give a query, a template, or {key: EXPR, value: EXPR}")
    value_expr: Value
    key_expr: Value = None
    if isinstance(select, Mapping) and (select.get("key") or select.get("value")):
        key_expr, value_expr = select.get("key") or None, cast("Value", select.get("value"))
    else:  # (a mapping with neither, as Unfurl tests them, is the expression itself)
        value_expr = select
    later: list[Any] = []  # mappings evaluated after the loop, as Unfurl's lazy results are
    pairs: list[tuple[Any, Any]] = []
    values: list[Any] = []
    item_scope = scope.copy(foreach=True)
    for index, (key, item) in enumerate(items):
        item_scope = scope.copy(current=item, foreach=True, vars={
            "collection": [v for _, v in items], "index": index, "key": key, "item": item,
            "break": BREAK, "continue": CONTINUE})
        item_scope.kw = scope.kw
        name = None
        if key_expr is not None:
            name = eval_for_function(key_expr, item_scope)
            if name is BREAK:
                break
            if name is CONTINUE:
                continue
        if not value_expr:  # Unfurl 1.2.0 fails here too (an assertion)
            raise ExpressionError("foreach: a `key` needs a `value` beside it",
                                  hint="foreach: {key: EXPR, value: EXPR}")
        if isinstance(value_expr, str):
            found = eval_ref(value_expr, item_scope)
        elif isinstance(value_expr, Mapping) and not is_ref(value_expr):
            found = [_Deferred(value_expr)]
            later.append(found[0])
        else:
            found = results_of(value_expr, item_scope)
        if len(found) > 1 and key_expr is None:  # (Unfurl 1.2.0's AttributeError)
            raise ExpressionError(f"foreach: the value {_short(value_expr)} gives several "
                                  "results", hint="give a key beside it, or end the query "
                                  "in one value")
        if not found:
            continue
        if len(found) == 1:
            if found[0] is BREAK:
                break
            if found[0] is CONTINUE:
                continue
            result: Any = found[0]
        else:
            result = found
        if key_expr is not None:
            pairs.append((name, result))
        else:
            values.append(result)
    for deferred in later:
        deferred.value = _mapped(deferred.expr, item_scope)
    if key_expr is not None:
        return [{k: _undefer(v) for k, v in pairs}]
    return [_undefer(v) for v in values]


class _Deferred:
    def __init__(self, expr: Any) -> None:
        self.expr = expr
        self.value: Any = None


def _undefer(value: Any) -> Any:
    return value.value if isinstance(value, _Deferred) else value
