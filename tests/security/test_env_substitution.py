"""``to_env``'s ``${NAME}`` references, as Unfurl 1.2.0's substitute_env reads them (the
corpus case 197-docs-to-env-substitution runs them side by side in a job)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.expressions.expr import EvalContext, evaluate
from unfurl_lite.security import taint
from unfurl_lite.security.environment import substitute_references

VARIABLES = {"BASE": "base", "EMPTY": ""}


@pytest.mark.parametrize(("text", "expected", "used"), [
    ("${BASE}/d", "base/d", ["BASE"]),
    ("[${NOPE}]", "[]", []),
    ("${NOPE:fallback}", "fallback", []),
    ("${NOPE:a:b}", "a:b", []),
    ("${NOPE|BASE}", "base", ["BASE"]),
    ("${EMPTY:unused}", "", ["EMPTY"]),  # set but empty: the value, not the default
    ("\\${BASE}", "${BASE}", []),
    ("\\\\${BASE}", "\\${BASE}", []),
    ("$BASE and ${ BASE}", "$BASE and ${ BASE}", []),
    ("${BASE}${BASE}", "basebase", ["BASE", "BASE"]),
])
def test_references_are_replaced_as_unfurl_does(text, expected, used):
    assert substitute_references(text, VARIABLES) == (expected, used)


@given(st.text().filter(lambda t: "${" not in t))
def test_text_without_a_reference_is_left_alone(text):
    assert substitute_references(text, VARIABLES) == (text, [])


def test_to_env_substitutes_and_keeps_environment_values_secret(monkeypatch):
    monkeypatch.setenv("HOME", "/home/probe")
    rules = {"A": "${HOME}-x", "B": "${A}/b", "C": "${X:c}"}
    env = evaluate({"eval": {"to_env": rules}}, EvalContext(self_view={}, inputs={}))
    assert env == {"A": "/home/probe-x", "B": "/home/probe-x/b", "C": "c"}
    assert isinstance(env["A"], taint.Sensitive) and isinstance(env["B"], taint.Sensitive)
    assert not isinstance(env["C"], taint.Sensitive)


def test_a_variable_copied_with_plus_stays_a_secret_where_it_is_substituted(monkeypatch):
    monkeypatch.setenv("HOME", "/home/probe")
    rules = {"+HOME": None, "LIT": "lit", "A": "${HOME}/a", "B": "${LIT}/b"}
    env = evaluate({"eval": {"to_env": rules}}, EvalContext(self_view={}, inputs={}))
    assert env["A"] == "/home/probe/a" and isinstance(env["A"], taint.Sensitive)
    assert env["B"] == "lit/b" and not isinstance(env["B"], taint.Sensitive)
