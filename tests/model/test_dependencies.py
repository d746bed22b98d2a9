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


def _reaches_itself(graph: dict[str, list[str]]) -> bool:
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            node = todo.pop()
            if node == start:
                return True
            if node not in seen:
                seen.add(node)
                todo += graph.get(node, [])
    return False


@given(graphs(), st.lists(st.sampled_from(["x", "y"]), max_size=2))
def test_cycles_are_found_exactly_when_a_node_reaches_itself(
        graph: dict[str, list[str]], outside: list[str]) -> None:
    """Also with requirements of names the graph does not have (they lead nowhere)."""
    first = next(iter(graph))
    graph[first] = [*graph[first], *outside]
    assert bool(find_cycles(graph)) == _reaches_itself(graph)


def test_a_long_chain_has_no_cycle_and_no_recursion() -> None:
    """A chain written from its last dependent to its first dependency (5,000 templates
    each requiring the next) is walked without recursion."""
    chain = {f"n{i}": [f"n{i + 1}"] for i in range(5000)}
    assert find_cycles(chain) == []


def _cycles_by_recursion(graph: dict[str, list[str]]) -> list[list[str]]:
    """find_cycles as it was first written (recursive, a trail copied for each step): the
    reference for its order and spelling of the cycles."""
    order = {name: i for i, name in enumerate(graph)}
    found: dict[tuple[str, ...], list[str]] = {}
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            loop = trail[trail.index(node):]
            start = min(range(len(loop)), key=lambda i: order.get(loop[i], 0))
            loop = loop[start:] + loop[:start]
            found.setdefault(tuple(loop), [*loop, loop[0]])
            return
        if node in done:
            return
        for child in graph.get(node, []):
            visit(child, [*trail, node])
        done.add(node)

    for name in graph:
        visit(name, [])
    return list(found.values())


@given(graphs(), st.lists(st.sampled_from(["x", "y"]), max_size=2))
def test_the_cycles_and_their_order_are_those_of_the_recursive_walk(
        graph: dict[str, list[str]], outside: list[str]) -> None:
    first = next(iter(graph))
    graph[first] = [*graph[first], *outside]
    assert find_cycles(graph) == _cycles_by_recursion(graph)


def test_a_long_cycle_is_found_without_recursion() -> None:
    chain = {f"n{i}": [f"n{(i + 1) % 5000}"] for i in range(5000)}
    assert find_cycles(chain) == [[*chain, "n0"]]
