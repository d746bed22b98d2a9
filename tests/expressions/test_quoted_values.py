"""What ``q`` quoted is rendered once more where Unfurl 1.2.0 reads it as a plain value (a
template reading a variable that is an expression, a query's last key, an instance's
property that is an expression) and stays as written where it is data (nested in a
variable, ``$e`` alone, ``*``, a predicate). tests/data/unfurl120/queries/quoted-and-blocks
records Unfurl's answers on an ensemble; these check the rules over any template."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.quoting import Quoted, QuotedList, QuotedMap
from unfurl_lite.expressions.resolve import Scope, map_value


def value_of(expr: Any, **variables: Any) -> Any:
    return map_value(expr, Scope(EvalContext(self_view={}, inputs={}), None, variables))


NUMBERS = st.integers(-1000, 1000)


@settings(max_examples=examples(100))
@given(a=NUMBERS, b=NUMBERS)
def test_a_template_reads_a_quoted_variable_rendered(a: int, b: int) -> None:
    text = f"{{{{ {a} + {b} }}}}"
    assert value_of("{{ e }}", e={"q": text}) == a + b
    assert value_of("{{ e }}", e={"eval": {"q": text}}) == a + b
    assert value_of("{{ e.x }}", e={"q": {"x": text}}) == a + b
    assert value_of("{{ e }}", e={"q": {"x": text, "y": "p"}}) == {"x": a + b, "y": "p"}
    # nested in the variable's data, it is data
    assert value_of("{{ e.k }}", e={"k": {"q": text}}) == text
    assert value_of("{{ e }}", e={"k": {"q": text}}) == {"k": text}
    assert value_of("{{ e }}", e=[{"q": text}]) == [text]


@settings(max_examples=examples(100))
@given(a=NUMBERS, b=NUMBERS)
def test_a_querys_last_key_renders_what_was_quoted(a: int, b: int) -> None:
    text = f"{{{{ {a} + {b} }}}}"
    nested = {"k": {"q": text}}
    assert value_of({"eval": "$e::k"}, e=nested) == a + b
    assert value_of({"eval": "$e::k::j"}, e={"k": {"j": {"q": text}}}) == a + b
    assert value_of({"eval": "$e::x"}, e={"q": {"x": text}}) == a + b
    assert value_of({"eval": "$e::k"}, e={"k": {"q": {"x": text}}}) == {"x": a + b}
    assert value_of({"eval": f"$e::k={a + b}"}, e=nested) == a + b
    assert value_of({"eval": "$e::k", "foreach": "$item"}, e=nested) == [a + b]
    # not a key step: as written
    assert value_of({"eval": "$e"}, e={"q": text}) == text
    assert value_of({"eval": "$e"}, e=nested) == {"k": text}
    assert value_of({"eval": "$e::*"}, e=nested) == text
    assert value_of({"eval": "$e[k]"}, e=nested) == {"k": text}
    assert value_of({"eval": {"q": text}}) == text


def test_quoted_text_that_is_not_a_template_stays_as_written() -> None:
    assert value_of({"eval": "$e::k"}, e={"k": {"q": "::app::.name"}}) == "::app::.name"
    assert value_of("{{ e }}", e={"q": "plain"}) == "plain"


def test_a_quoted_expression_selected_by_the_last_key_fails_as_in_unfurl() -> None:
    with pytest.raises(ExpressionError, match="quoted expression"):
        value_of({"eval": "$e::k"}, e={"k": {"q": {"eval": "::app::.name"}}})


def test_what_evaluation_gives_carries_no_mark() -> None:
    for found in (value_of({"eval": {"q": {"a": ["x", {"b": "y"}]}}}),
                  value_of({"eval": "$e"}, e={"k": {"q": ["x"]}}),
                  value_of({"a": {"q": "t"}, "b": [{"q": "u"}]})):
        stack = [found]
        while stack:
            item = stack.pop()
            assert not isinstance(item, Quoted | QuotedMap | QuotedList), found
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)


UNFURL_TEMPLATE_FUNC = """\
#jinja2: variable_start_string: '<%', variable_end_string: '%>'
{% filter from_yaml %}
a_dict:
    key1: "{{ extras.quoted }}" # shouldn't be evaluated
    key2: "<% extras.quoted %>" # will be evaluated to "{{ quoted }}  "
    key3: "original"
    <<: <% key4 | mapValue | to_json %>  # will merge into a_dict
{% endfilter %}
        """


@pytest.mark.parametrize("expr", [UNFURL_TEMPLATE_FUNC,
                                  {"eval": {"template": UNFURL_TEMPLATE_FUNC}}])
def test_unfurls_own_template_test_gives_its_expected_value(expr: Any) -> None:
    """Unfurl 1.2.0's tests/test_eval.py test_templateFunc: a filter block over YAML text with
    the delimiters overridden, a quoted value nested in a variable kept as written."""
    found = value_of(expr, extras={"key3": "hello", "quoted": {"q": "{{ quoted }}  "}},
                     key4={"extra1": {"a": 1}, "extra2": [1, 3], "key3": "overwritten"},
                     key2={"q": "{{ quoted2 }}  "})
    assert found == {"a_dict": {"key1": "{{ extras.quoted }}", "key2": "{{ quoted }}  ",
                                "key3": "original", "extra1": {"a": 1}, "extra2": [1, 3]}}
