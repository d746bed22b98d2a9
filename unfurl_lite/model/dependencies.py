"""Dependency graphs over names: ordering, cycles and closures, free of any model type."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

Dependencies = Mapping[str, Iterable[str]]  # node -> the nodes it depends on


def find_cycles(graph: Mapping[str, list[str]]) -> list[list[str]]:
    """Each distinct cycle once, as ``[a, b, a]``, starting from its first node in graph order."""
    if _acyclic(graph):  # almost every graph: one walk without the loops kept below
        return []
    order = {name: i for i, name in enumerate(graph)}
    found: dict[tuple[str, ...], list[str]] = {}
    done: set[str] = set()
    for root in graph:  # depth first from each node in turn, without recursion
        if root in done:
            continue
        path = [root]  # the walk from root to where it is now
        on_path = {root}
        children: list[Iterator[str]] = [iter(graph.get(root, []))]
        while children:
            child = next(children[-1], None)
            if child is None:  # every child of the walk's end seen: done with it
                children.pop()
                on_path.discard(node := path.pop())
                done.add(node)
            elif child in on_path:  # back where the walk was: a cycle
                loop = path[path.index(child):]
                start = min(range(len(loop)), key=lambda i: order.get(loop[i], 0))
                loop = loop[start:] + loop[:start]
                found.setdefault(tuple(loop), [*loop, loop[0]])
            elif child not in done:
                path.append(child)
                on_path.add(child)
                children.append(iter(graph.get(child, [])))
    return list(found.values())


def _acyclic(graph: Mapping[str, list[str]]) -> bool:
    """Whether no walk along the graph's edges comes back to where it started (depth first,
    without recursion: a chain of any length)."""
    state: dict[str, bool] = {}  # False: on the walk's path; True: done
    for root in graph:
        if root in state:
            continue
        state[root] = False
        stack: list[Iterator[str]] = [iter(graph.get(root, ()))]
        path = [root]
        while stack:
            for child in stack[-1]:
                seen = state.get(child)
                if seen is None:
                    state[child] = False
                    stack.append(iter(graph.get(child, ())))
                    path.append(child)
                    break
                if seen is False:
                    return False
            else:
                stack.pop()
                state[path.pop()] = True
    return True


def topological_order(graph: Dependencies) -> list[str]:
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


def closure(graph: Dependencies, roots: Iterable[str]) -> set[str]:
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


def reverse(graph: Dependencies) -> dict[str, list[str]]:
    """node -> the nodes that depend on it."""
    result: dict[str, list[str]] = {node: [] for node in graph}
    for node, deps in graph.items():
        for dep in deps:
            result.setdefault(dep, []).append(node)
    return result
