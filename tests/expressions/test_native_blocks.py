"""Ansible's native types inside a template, as Unfurl 1.2.0 renders them: a block Jinja2
joins on its own (``{% filter %}``, ``{% set %}``, a macro, ``{% call %}``) gives its
native value, a string filter's text stays text (``NativeJinjaText``) whatever encloses it,
and ``SELF`` of an instance without properties or attributes is false, as an empty
mapping (each value below is what Unfurl 1.2.0 gave for the same template, asked
through tests/data/unfurl120/queries/oracle.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.native import NativeJinjaText, native_concat
from unfurl_lite.expressions.sandbox import render_native


def render(text: str, **variables: Any) -> Any:
    return render_native(text, EvalContext(self_view={}, inputs={}, extra=variables))


@pytest.mark.parametrize(("text", "value"), [
    ("{% filter length %}[1, 2, 3]{% endfilter %}", 3),
    ("{% filter type_debug %}{{ 1 }}{% endfilter %}", "int"),
    ("{% filter type_debug %}{{ 1 }}{{ 2 }}{% endfilter %}", "int"),
    ("{% filter type_debug %}{% endfilter %}", "NoneType"),
    ("{% filter type_debug %}{{ 'a' | to_json }}{% endfilter %}", "NativeJinjaText"),
    ("{% filter from_json %}\"abc\"{% endfilter %}", "abc"),
    ("{% set x %}[1, 2]{% endset %}{{ x | length }}", 2),
    ("{% set x %}[1, 2]{% endset %}{{ x | type_debug }}", "list"),
    ("{% macro m() %}[1, 2]{% endmacro %}{{ m() | length }}", 2),
    ("x {% filter type_debug %}ab{% endfilter %}", "x str"),
    ("{% filter upper %}abc{% endfilter %}", "ABC"),
])
def test_a_block_gives_its_filter_its_native_value(text: str, value: Any) -> None:
    assert render(text) == value


@pytest.mark.parametrize("text", ["{% filter from_json %}{\"a\": 1}{% endfilter %}",
                                  "{% filter from_json %}[1, 2]{% endfilter %}"])
def test_from_json_of_a_block_that_is_already_a_value_fails_as_in_unfurl(text: str) -> None:
    with pytest.raises(Exception, match="JSON object must be str"):
        render(text)


@pytest.mark.parametrize(("text", "value"), [
    ("{{ 1 | string | type_debug }}", "NativeJinjaText"),
    ("{{ 1 | to_json | type_debug }}", "NativeJinjaText"),
    ("{{ [1] | to_nice_json | type_debug }}", "NativeJinjaText"),
    ("{{ [1] | to_yaml | type_debug }}", "NativeJinjaText"),
    ("{{ 'a' | to_json | string | type_debug }}", "NativeJinjaText"),
    ("{{ [1] | to_json | trim | type_debug }}", "str"),
    ("{{ 'a' | upper | type_debug }}", "str"),
    ("{% if true %}{{ [1] | to_json }}{% endif %}", "[1]"),
    ("{% if true %}{{ 1 | string }}{% endif %}", "1"),
    ("{{ [1] | to_json if true else 2 }}", "[1]"),
    ("{% for i in [1] %}{{ [i] | to_json }}{% endfor %}", "[1]"),
    ("{{ [1] | to_json }}", "[1]"),
    ("{{ ([1] | to_json) ~ '' }}", [1]),
])
def test_a_string_filters_text_stays_text_wherever_it_is_output(text: str, value: Any) -> None:
    result = render(text)
    assert result == value
    assert type(result) is type(value)  # a render gives plain text, never the marker


VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
              st.text("ab 1,:[]{}'\"", max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text("abk", min_size=1, max_size=2), inner,
                                            max_size=3)),
    max_leaves=8)


@settings(max_examples=examples(100))
@given(value=VALUES)
@example(value="1")
@example(value="1,")
def test_json_text_survives_any_enclosing_block(value: Any) -> None:
    text = json.dumps(value)
    wrapped = "{% if true %}{{ v | to_json }}{% endif %}"
    assert render(wrapped, v=value) == text
    # the value read back is output as the value itself is: a text such as "1" or "[]"
    # is read as a literal there, as Ansible's native types read it
    assert render("{% set x %}{{ v | to_json }}{% endset %}{{ x | from_json }}",
                  v=value) == render("{{ v }}", v=value)


@settings(max_examples=examples(100))
@given(items=st.lists(st.integers(-50, 50), max_size=6))
def test_a_filter_block_counts_the_list_it_output(items: list[int]) -> None:
    assert render("{% filter length %}{{ v }}{% endfilter %}", v=items) == len(items)
    assert render("{% set x %}{{ v }}{% endset %}{{ x | sum }}", v=items) == sum(items)


def test_native_concat_is_ansibles() -> None:
    assert native_concat(iter([])) is None
    assert native_concat(iter(["1", "2"])) == 12
    assert native_concat(iter(["'a'"])) == "'a'"  # a quoted literal keeps its quotes
    marked = native_concat(iter([NativeJinjaText("[1]")]))
    assert marked == "[1]" and isinstance(marked, NativeJinjaText)
    assert native_concat(iter([{"a": 1}])) == {"a": 1}


def test_self_of_an_instance_without_values_is_false(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.expressions.unfurl_probes import Probes, copy_case

    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    probes = Probes(copy_case("names-probes", folder))
    # app has no property or attribute; server has
    assert probes.evaluate({"at": "app", "v": "{% if SELF %}yes{% else %}no{% endif %}"}) \
        == {"value": "no"}
    assert probes.evaluate({"at": "app", "v": "{{ SELF or 'empty' }}"}) == {"value": "empty"}
    assert probes.evaluate({"at": "app", "v": "{{ SELF | length }}"}) == {"value": 0}
    assert probes.evaluate({"at": "server", "v": "{% if SELF %}yes{% else %}no{% endif %}"}) \
        == {"value": "yes"}
    # it is still the instance a relative query starts from, and a digest's owner
    assert probes.evaluate({"at": "app", "q": ".name"})["one"] == "app"
    assert probes.evaluate({"at": "app", "v": {"eval": ".::.name"}}) == {"value": "app"}
