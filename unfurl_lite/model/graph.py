"""Dependency graphs over names: ordering, cycles and closures, free of any model type."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Graph = Mapping[str, Iterable[str]]  # node -> the nodes it depends on


def find_cycle(graph: Graph) -> list[str] | None:
    """A dependency cycle as a closed path (``[a, b, a]``), or None."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(graph, white)
    for root in graph:
        if color[root] != white:
            continue
        stack: list[tuple[str, list[str]]] = [(root, list(graph.get(root, ())))]
        path = [root]
        color[root] = grey
        while stack:
            node, pending = stack[-1]
            if not pending:
                stack.pop()
                path.pop()
                color[node] = black
                continue
            nxt = pending.pop()
            state = color.get(nxt, black)  # edges to unknown nodes are someone else's problem
            if state == grey:
                return [*path[path.index(nxt) :], nxt]
            if state == white:
                color[nxt] = grey
                path.append(nxt)
                stack.append((nxt, list(graph.get(nxt, ()))))
    return None


def topological_order(graph: Graph) -> list[str]:
    """Nodes with every dependency before its dependents; ties keep the graph's order."""
    order: list[str] = []
    seen: set[str] = set()
    for root in graph:
        if root in seen:
            continue
        stack: list[tuple[str, Iterable[str]]] = [(root, iter(graph.get(root, ())))]
        seen.add(root)
        while stack:
            node, deps = stack[-1]
            for dep in deps:
                if dep not in seen and dep in graph:
                    seen.add(dep)
                    stack.append((dep, iter(graph.get(dep, ()))))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def closure(graph: Graph, roots: Iterable[str]) -> set[str]:
    """The roots and everything they (transitively) depend on."""
    found: set[str] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in found:
            continue
        found.add(node)
        stack.extend(graph.get(node, ()))
    return found


def reverse(graph: Graph) -> dict[str, list[str]]:
    """node -> the nodes that depend on it."""
    result: dict[str, list[str]] = {node: [] for node in graph}
    for node, deps in graph.items():
        for dep in deps:
            result.setdefault(dep, []).append(node)
    return result
