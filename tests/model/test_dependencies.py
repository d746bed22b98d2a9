"""Unfurl's depth-first order over a dependency graph (its ``order_templates``): every
dependency first, a loop walked from its first node."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.model.dependencies import find_cycles, topological_order

NAMES = [f"n{i}" for i in range(7)]


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, list[str]]:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=1))
    return {name: draw(st.lists(st.sampled_from(names), unique=True)) for name in names}


@given(graphs())
def test_every_dependency_outside_a_loop_comes_first(graph: dict[str, list[str]]) -> None:
    order = topological_order(graph)
    assert sorted(order) == sorted(graph)
    at = {name: i for i, name in enumerate(order)}
    looped = {name for cycle in find_cycles(graph) for name in cycle}
    for name, deps in graph.items():
        for dep in deps:
            if name not in looped or dep not in looped:
                assert at[dep] < at[name], (name, dep, order)


def test_a_loop_is_walked_from_its_first_node() -> None:
    # unfurl-cases 466: base requires extra; extra's type implies a requirement on base
    assert topological_order({"base": ["extra"], "extra": ["base"], "app": ["base"]}) == [
        "extra", "base", "app"]
