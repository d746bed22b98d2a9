"""The text guard names the line and column of a line of block indicators too deep to parse,
wherever the line is (the first line of the text or any other)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from unfurl_lite.errors import InputError
from unfurl_lite.load import guard

DEEP = guard.MAX_INDICATOR_COLUMN // 2 + 1  # "- " pairs: past the column


@settings(max_examples=25)
@given(before=st.integers(min_value=0, max_value=4), indent=st.integers(0, 3),
       indicator=st.sampled_from(["- ", "? ", ": ", "-\t"]))
def test_a_deep_line_is_located_wherever_it_is(before: int, indent: int, indicator: str) -> None:
    deep = " " * indent + indicator * DEEP + "x"
    text = "".join(f"k{i}: v\n" for i in range(before)) + deep + "\nafter: 1\n"
    with pytest.raises(InputError) as refused:
        guard.check_text(text, "e.yaml")
    [problem] = refused.value.problems
    run = len(deep) - 1  # the indicators and the blanks before the x
    assert (problem.line, problem.file) == (before + 1, "e.yaml")
    assert f"opens {DEEP} block collections, the last at column {run})" in problem.message


def test_a_line_just_under_the_column_passes() -> None:
    guard.check_text("a: 1\n" + "- " * (guard.MAX_INDICATOR_COLUMN // 2) + "x\n", "e.yaml")


#: the line pattern as first written (the indicator's lookahead before the run's length)
_FIRST_DEEP_LINE = re.compile("\n" + guard._DEEP_INDICATORS.pattern)


@settings(max_examples=60)
@example(lines=[(["- "] * 201, "x"), ([" ", "? "] * 201, ""), (["  " * 50] * 5, "k: v")])
@given(lines=st.lists(st.tuples(
    st.lists(st.sampled_from([" ", "\t", "-", "?", ":", "- ", "? ", ": ", "  " * 50]),
             max_size=30),
    st.sampled_from(["", "x", "k: v", "-"])), max_size=6))
def test_the_deep_line_search_finds_what_the_first_pattern_found(
        lines: list[tuple[list[str], str]]) -> None:
    """The search that asks the run's length first finds the same line, and the same run,
    as the pattern that asked the indicator first, for lines of any indicators and blanks
    (the ones past the column among them)."""
    text = "top: 1\n" + "".join("".join(run) + end + "\n" for run, end in lines)
    found, first = guard._DEEP_LINE.search(text), _FIRST_DEEP_LINE.search(text)
    assert (found and found.span()) == (first and first.span())
