"""The graph as a Mermaid flowchart.

Mermaid ids are restricted, so nodes get generated ids (``n0``, ``n1``…) and the names go
in quoted labels, with Mermaid's entity codes for the characters that would end or change
them; statuses become ``classDef`` classes with the shared palette.
"""

from __future__ import annotations

from unfurl_lite.view.diagram import (
    PALETTE,
    Graph,
    GraphEdge,
    GraphNode,
    nesting,
    status_stroke,
)

#: Mermaid's arrows for each kind of edge
ARROWS = {"host": "==>", "dependency": "-.->", "connect": "-->", "relationship": "-->"}


def escape(text: str) -> str:
    """Text safe inside a quoted Mermaid label: entity codes for # & " < > ` (Mermaid
    turns ``#code;`` into ``&code;``, and labels are HTML), ``<br/>`` for line breaks."""
    text = text.replace("#", "#35;")
    for char, code in (("&", "#38;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"),
                       ("`", "#96;")):
        text = text.replace(char, code)
    return text.replace("\r\n", "<br/>").replace("\n", "<br/>").replace("\r", "<br/>")


def status_class(status: str | None) -> str:
    return f"status_{status if status in PALETTE else 'unknown'}"


def node_line(node_id: str, node: GraphNode) -> str:
    label = "<br/>".join(escape(p) for p in (node.label, node.type, node.detail) if p)
    if node.kind == "instance":
        return f'{node_id}["{label}"]'
    return f'{node_id}("{label}")'


def edge_line(ids: dict[str, str], edge: GraphEdge) -> str:
    label = escape(edge.label + (f" · {edge.status}" if edge.status else ""))
    arrow = ARROWS.get(edge.kind, "-->")
    return f'{ids[edge.source]} {arrow}|"{label}"| {ids[edge.target]}'


def render(graph: Graph) -> str:
    ids = {node.id: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = ["flowchart TB"]
    for step, depth, node in nesting(graph):
        indent = "  " * (depth + 1)
        if step == "leaf":
            lines.append(indent + node_line(ids[node.id], node))
        elif step == "open":
            lines.append(f'{indent}subgraph c{ids[node.id]} ["{escape(node.label)}"]')
        else:
            lines.append(indent + "end")
    edges = [e for e in graph.edges if e.source in ids and e.target in ids]
    lines.extend("  " + edge_line(ids, edge) for edge in edges)
    for status, fill in PALETTE.items():
        lines.append(
            f"  classDef status_{status} fill:{fill},stroke:{status_stroke(status)},color:#1b1b1b"
        )
    by_class: dict[str, list[str]] = {}
    for node in graph.nodes:
        by_class.setdefault(status_class(node.status), []).append(ids[node.id])
    for name, members in by_class.items():
        lines.append(f"  class {','.join(members)} {name}")
    for index, edge in enumerate(edges):
        if edge.status:
            lines.append(f"  linkStyle {index} stroke:{status_stroke(edge.status)}")
    return "\n".join(lines) + "\n"
