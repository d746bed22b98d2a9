"""The graph in Graphviz's DOT language.

Every id and label is a quoted string, so any name (quotes, backslashes, dashes, unicode)
is safe; hosted instances are drawn inside a cluster of their host.
"""

from __future__ import annotations

from unfurl_lite.view.graph import Graph, GraphEdge, GraphNode, status_colour, status_stroke

#: how each kind of edge is drawn
EDGE_STYLES = {
    "host": "bold",
    "dependency": "dashed",
    "connect": "solid",
    "relationship": "dotted",
}


def quote(text: str) -> str:
    """A DOT quoted string that shows ``text`` literally."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return f'"{escaped}"'


def node_label(node: GraphNode) -> str:
    return "\n".join(part for part in (node.label, node.type, node.detail) if part)


def node_line(node: GraphNode) -> str:
    attrs = {
        "label": node_label(node),
        "fillcolor": status_colour(node.status),
        "color": status_stroke(node.status),
        "tooltip": f"{node.kind} {node.label}: {node.detail}",
    }
    if node.kind == "instance":
        attrs["shape"] = "box"
        attrs["style"] = "filled"
    return f"{quote(node.id)} [{_attrs(attrs)}];"


def edge_line(edge: GraphEdge) -> str:
    attrs = {
        "label": edge.label + (f" · {edge.status}" if edge.status else ""),
        "style": EDGE_STYLES.get(edge.kind, "solid"),
    }
    if edge.status:
        attrs["color"] = status_stroke(edge.status)
        attrs["fontcolor"] = status_stroke(edge.status)
    return f"{quote(edge.source)} -> {quote(edge.target)} [{_attrs(attrs)}];"


def _attrs(attrs: dict[str, str]) -> str:
    return ", ".join(f"{key}={quote(value)}" for key, value in attrs.items())


def _clusters(graph: Graph) -> dict[str | None, list[GraphNode]]:
    """host id (None: top level) -> the nodes hosted directly on it."""
    ids = {n.id for n in graph.nodes}
    children: dict[str | None, list[GraphNode]] = {}
    for node in graph.nodes:
        host = node.host if node.host in ids and node.host != node.id else None
        children.setdefault(host, []).append(node)
    return children


def render(graph: Graph) -> str:
    lines = [
        "digraph topology {",
        '  graph [rankdir="TB", fontname="Helvetica", fontsize="11"];',
        '  node [shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11"];',
        '  edge [fontname="Helvetica", fontsize="9", color="#555555"];',
    ]
    children = _clusters(graph)
    counter = iter(range(len(graph.nodes) + 1))
    drawn: set[str] = set()

    def place(node: GraphNode, indent: str) -> None:
        if node.id in drawn:
            return
        drawn.add(node.id)
        hosted = children.get(node.id, [])
        if not hosted:
            lines.append(indent + node_line(node))
            return
        lines.append(f"{indent}subgraph {quote(f'cluster_{next(counter)}')} {{")
        lines.append(
            f'{indent}  graph [label={quote(node.label)}, style="rounded,dashed", '
            f'color="#9e9e9e"];'
        )
        lines.append(indent + "  " + node_line(node))
        for child in hosted:
            place(child, indent + "  ")
        lines.append(indent + "}")

    for node in children.get(None, []):
        place(node, "  ")
    for node in graph.nodes:  # a cycle of hosts: drawn flat
        if node.id not in drawn:
            drawn.add(node.id)
            lines.append("  " + node_line(node))
    lines.extend("  " + edge_line(edge) for edge in graph.edges)
    lines.append("}")
    return "\n".join(lines) + "\n"
