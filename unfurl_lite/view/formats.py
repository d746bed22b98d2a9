"""One picture of a topology (:class:`~unfurl_lite.view.diagram.Graph`), four ways to
write it: DOT, Mermaid, SVG through Graphviz, and SVG drawn here without it.

The drawing modules sit below this one and above the diagram, so none of them imports
another through the picture's data.
"""

from __future__ import annotations

from unfurl_lite.view import dot, layered, mermaid, svg
from unfurl_lite.view.diagram import Graph


def to_dot(graph: Graph) -> str:
    """Graphviz's DOT language: nothing needed to write it."""
    return dot.render(graph)


def to_mermaid(graph: Graph) -> str:
    """A Mermaid flowchart (GitHub, GitLab and many wikis draw it)."""
    return mermaid.render(graph)


def to_svg(graph: Graph) -> str:
    """SVG drawn by Graphviz's ``dot``; a clear error naming the package when it is missing."""
    return svg.render(graph)


def to_builtin_svg(graph: Graph) -> str:
    """SVG drawn here, without Graphviz: layers from the requirements, the same colours."""
    return layered.render(graph)
