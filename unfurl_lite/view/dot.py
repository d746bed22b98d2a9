"""The graph in Graphviz's DOT language.

Every id and label is a quoted string, so any name (quotes, backslashes, dashes, unicode)
is safe; hosted instances are drawn inside a cluster of their host.
"""

from __future__ import annotations

from unfurl_lite.view.diagram import (
    Graph,
    GraphEdge,
    GraphNode,
    nesting,
    status_colour,
    status_stroke,
)

#: how each kind of edge is drawn
EDGE_STYLES = {
    "host": "bold",
    "dependency": "dashed",
    "connect": "solid",
    "relationship": "dotted",
}


def quote(text: str) -> str:
    """A DOT quoted string that a label (Graphviz's escString) shows literally: backslashes
    doubled (``\\N`` would be the node's name), ``&`` as an entity (labels decode them)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    escaped = escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return f'"{escaped}"'


def dot_ids(graph: Graph) -> dict[str, str]:
    """Each node's DOT id: its name, quoted. In an id only ``\\"`` is an escape (a backslash
    stays as written), so a name with a backslash or a line break gets a made-up id
    (``node-<n>``, unique) instead; the label always shows the name."""
    plain = {n.id for n in graph.nodes if not _awkward(n.id)}
    ids: dict[str, str] = {}
    for index, node in enumerate(graph.nodes):
        if node.id in plain:
            ids[node.id] = '"' + node.id.replace('"', '\\"') + '"'
            continue
        made = f"node-{index}"
        while made in plain:
            made += "_"
        ids[node.id] = f'"{made}"'
    return ids


def _awkward(name: str) -> bool:
    return any(char in name for char in "\\\n\r")


def node_label(node: GraphNode) -> str:
    return "\n".join(part for part in (node.label, node.type, node.detail) if part)


def node_line(node_id: str, node: GraphNode) -> str:
    attrs = {
        "label": node_label(node),
        "fillcolor": status_colour(node.status),
        "color": status_stroke(node.status),
        "tooltip": f"{node.kind} {node.label}: {node.detail}",
    }
    if node.kind == "instance":
        attrs["shape"] = "box"
        attrs["style"] = "filled"
    return f"{node_id} [{_attrs(attrs)}];"


def edge_line(ids: dict[str, str], edge: GraphEdge) -> str:
    attrs = {
        "label": edge.label + (f" · {edge.status}" if edge.status else ""),
        "style": EDGE_STYLES.get(edge.kind, "solid"),
    }
    if edge.status:
        attrs["color"] = status_stroke(edge.status)
        attrs["fontcolor"] = status_stroke(edge.status)
    return f"{ids[edge.source]} -> {ids[edge.target]} [{_attrs(attrs)}];"


def _attrs(attrs: dict[str, str]) -> str:
    return ", ".join(f"{key}={quote(value)}" for key, value in attrs.items())


def render(graph: Graph) -> str:
    lines = [
        "digraph topology {",
        '  graph [rankdir="TB", fontname="Helvetica", fontsize="11"];',
        '  node [shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11"];',
        '  edge [fontname="Helvetica", fontsize="9", color="#555555"];',
    ]
    ids = dot_ids(graph)
    counter = iter(range(len(graph.nodes) + 1))
    for step, depth, node in nesting(graph):
        indent = "  " * (depth + 1)
        if step == "leaf":
            lines.append(indent + node_line(ids[node.id], node))
        elif step == "open":
            lines.append(f"{indent}subgraph {quote(f'cluster_{next(counter)}')} {{")
            lines.append(f'{indent}  graph [label={quote(node.label)}, style="rounded,dashed", '
                         f'color="#9e9e9e"];')
        else:
            lines.append(indent + "}")
    lines.extend(
        "  " + edge_line(ids, e) for e in graph.edges if e.source in ids and e.target in ids
    )
    lines.append("}")
    return "\n".join(lines) + "\n"
