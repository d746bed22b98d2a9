"""The expression checks' quick pass may answer from the text a document was read from
(``expression_checks.read_from``): it may say "no expression" only where the walk of the
data finds none, whatever the text's spelling (quoted keys, escapes, anchors, flow style)."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.expressions import catalog
from unfurl_lite.load import blockyaml, expression_checks, plainyaml, yamlio

FUNCTIONS = sorted(catalog.top_level_functions())
KEYS = st.sampled_from(["eval", "ref", "name", "command", "properties", "x", *FUNCTIONS[:6]])
SCALARS = st.one_of(st.sampled_from(["true", "{{ SELF.x }}", "{% if a %}b{% endif %}", "plain",
                                     "eval: no", "a { {b} }", "ref"]),
                    st.integers(), st.booleans())
DATA = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)


def _answers(text: str) -> tuple[bool, bool]:
    """(the text's answer: no expression, the walk's answer: some expression)."""
    doc = plainyaml.load(text)
    spec = doc["spec"]
    with expression_checks.read_from(text):
        quick = expression_checks._none_in_text()
    return quick, isinstance(spec, dict | list) and expression_checks._any_expression(spec)


@given(DATA)
@settings(max_examples=examples(200))
def test_the_text_never_hides_an_expression_the_walk_finds(data: object) -> None:
    document = {"spec": {"service_template": {"topology_template": {"node_templates": {
        "a": {"type": "tosca.nodes.Root", "properties": {"p": data}}}}}}}
    for text in (yamlio.dump(document), json.dumps(document)):  # block and flow styles
        quick, found = _answers(text)
        assert not (quick and found), text


def test_spellings_that_hide_a_key_go_to_the_walk() -> None:
    hidden = [
        'spec: {p: {"ev\\x61l": ".x"}}\n',  # an escape spells eval
        "spec:\n  a: &k eval\n  p: {*k : .x}\n",  # an alias is the key
        "spec:\n  p:\n    'eval' : .x\n",  # quoted, a space before the colon
        "spec:\n  p:\n    ? eval\n    : .x\n",  # an explicit key
        "spec:\n  p: '{{ x }}'\n",
    ]
    for text in hidden:
        quick, found = _answers(text)
        assert found and not quick, text


def test_a_plain_text_is_answered_without_the_walk() -> None:
    text = "spec:\n  service_template:\n    node_templates:\n      a:\n        type: T\n"
    assert _answers(text) == (True, False)
    assert not expression_checks._none_in_text()  # outside read_from: the walk decides


#: the search the reversed one replaces, written forwards: a function's name as a key
FORWARD = re.compile("(?:" + "|".join(map(re.escape, sorted(
    {"eval", "ref", *FUNCTIONS}, key=len, reverse=True))) + r""")["']?\s*:""")
PIECES = st.sampled_from(["eval", "ref", "q", "get_env", "env", "ge", "t_", "ev", "al", ":",
                          " ", "\n", "'", '"', "\t", "x", "concat", "join", "token", "-",
                          "{", "}", "?", "#"])


@given(st.lists(PIECES, max_size=30).map("".join))
@settings(max_examples=examples(300))
def test_the_reversed_search_finds_what_the_forward_one_finds(text: str) -> None:
    """The key search runs on the reversed text (it jumps from colon to colon): it must
    find a function's name as a key exactly where the forward pattern does."""
    assert expression_checks.has_function_key(text) == (FORWARD.search(text) is not None)


def test_a_text_read_by_lines_is_searched_in_its_distinct_lines() -> None:
    """The line reader's distinct lines stand for the text (each key on one line with its
    colon): a function's name as a key is found there in any of the spellings it reads
    (block, quoted, a one-line flow mapping, in a list), once among many equal lines."""
    plain = "".join(f"      t{i}:\n        type: tosca.nodes.Root\n" for i in range(50))
    head = "spec:\n  service_template:\n    node_templates:\n"
    for key in ("    p:\n      eval: .x\n", "    p:\n      'get_env': HOME\n",
                "    p: {q: [1, {eval: .x}]}\n", "    p:\n    - eval: .x\n"):
        text = head + plain + "      a:\n        type: T\n        properties:\n" + \
            "\n".join("    " + line for line in key.splitlines()) + "\n" + plain.replace(
                "      t", "      u")
        quick, found = _answers(text)
        assert blockyaml.distinct_lines(text) is not None, text  # read by lines
        assert found and not quick, text
    text = head + plain
    assert _answers(text) == (True, False)
    assert blockyaml.distinct_lines(text) is not None
    assert blockyaml.distinct_lines(text + "\n") is None  # another text: searched whole


@given(DATA, st.sampled_from(["min", "max", "get_property", "eval", "plain", "x:", "{%"]))
@settings(max_examples=examples(100))
def test_a_word_is_found_in_a_text_read_by_lines_exactly_where_it_is(data: object,
                                                                     word: str) -> None:
    """Searched in the distinct lines of a text the line reader read, or in the text:
    the same answer as the text's own, for words and marks without a line break."""
    text = yamlio.dump({"spec": {"p": data, "q": [data, data]}})
    plainyaml.load(text)
    with expression_checks.read_from(text):
        assert expression_checks.text_lacks(word) == ("\\" not in text and word not in text)
