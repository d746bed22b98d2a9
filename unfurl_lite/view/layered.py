"""The graph as SVG drawn without Graphviz: a small layered (Sugiyama-style) drawing.

Each node sits one layer below everything that requires it, layers are ordered by the
average position of their requirers (one pass), and edges are curves from a node's bottom
to its target's top. Enough to see a topology when ``dot`` is not installed; Graphviz
draws large graphs better.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from unfurl_lite.model.graph import topological_order
from unfurl_lite.view.graph import Graph, GraphEdge, GraphNode, status_colour, status_stroke

MARGIN = 20
GAP_X = 36
GAP_Y = 78
HEIGHT = 56
CHAR = 6.8  # average width of a character at the label sizes used
MIN_WIDTH = 120
FONT = "Helvetica, Arial, sans-serif"

DASHES = {"host": "", "dependency": "6 4", "connect": "", "relationship": "2 3"}


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float = HEIGHT

    @property
    def bottom(self) -> tuple[float, float]:
        return (self.x + self.width / 2, self.y + self.height)

    @property
    def top(self) -> tuple[float, float]:
        return (self.x + self.width / 2, self.y)


def layers(graph: Graph) -> list[list[str]]:
    """Node ids by layer: a node is one layer below the lowest node requiring it."""
    ids = [n.id for n in graph.nodes]
    requirers: dict[str, list[str]] = {i: [] for i in ids}
    for edge in graph.edges:
        if edge.source in requirers and edge.target in requirers and edge.source != edge.target:
            requirers[edge.target].append(edge.source)
    depth: dict[str, int] = {}
    for node in topological_order(requirers):
        above = [depth[r] + 1 for r in requirers[node] if r in depth]
        depth[node] = max(above, default=0)
    rows: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for node in ids:
        rows[depth[node]].append(node)
    position: dict[str, float] = {}
    for row in rows:
        first = {node: i for i, node in enumerate(row)}
        keys = {node: _barycentre(node, first, requirers, position) for node in row}
        row.sort(key=keys.__getitem__)
        position.update({node: float(i) for i, node in enumerate(row)})
    return rows


def _barycentre(
    node: str, row: dict[str, int], requirers: dict[str, list[str]], position: dict[str, float]
) -> tuple[float, int]:
    """Where a node goes in its layer: the mean position of what requires it, else its order."""
    index = row[node]
    placed = [position[r] for r in requirers[node] if r in position]
    return (sum(placed) / len(placed) if placed else float(index), index)


def node_width(node: GraphNode) -> float:
    longest = max(len(node.label) * 1.15, len(node.type), len(node.detail))
    return max(MIN_WIDTH, longest * CHAR + 24)


def place(graph: Graph) -> tuple[dict[str, Box], float, float]:
    nodes = {n.id: n for n in graph.nodes}
    rows = layers(graph)
    widths = [
        sum(node_width(nodes[i]) for i in row) + GAP_X * max(len(row) - 1, 0) for row in rows
    ]
    total = max(widths, default=0.0)
    boxes: dict[str, Box] = {}
    for index, row in enumerate(rows):
        x = MARGIN + (total - widths[index]) / 2
        y = MARGIN + index * (HEIGHT + GAP_Y)
        for node_id in row:
            width = node_width(nodes[node_id])
            boxes[node_id] = Box(x, y, width)
            x += width + GAP_X
    height = MARGIN * 2 + len(rows) * HEIGHT + max(len(rows) - 1, 0) * GAP_Y
    return boxes, total + MARGIN * 2, height


def _node(node: GraphNode, box: Box) -> str:
    status = node.status or "unknown"
    centre = box.x + box.width / 2
    radius = 8 if node.kind == "template" else 2
    lines = [
        f'<g class="node {escape(node.kind)} status-{escape(status)}" '
        f'data-id="{escape(node.id)}">',
        f"<title>{escape(f'{node.label} ({node.type}): {node.detail}')}</title>",
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="{radius}" fill="{status_colour(node.status)}" '
        f'stroke="{status_stroke(node.status)}" stroke-width="1.4"/>',
        f'<text x="{centre:.1f}" y="{box.y + 18:.1f}" text-anchor="middle" '
        f'font-size="13" font-weight="bold">{escape(node.label)}</text>',
        f'<text x="{centre:.1f}" y="{box.y + 34:.1f}" text-anchor="middle" '
        f'font-size="10" fill="#333333">{escape(node.type)}</text>',
        f'<text x="{centre:.1f}" y="{box.y + 48:.1f}" text-anchor="middle" '
        f'font-size="10" fill="#333333">{escape(node.detail)}</text>',
        "</g>",
    ]
    return "\n".join(lines)


def _edge(edge: GraphEdge, boxes: dict[str, Box]) -> str:
    source, target = boxes[edge.source], boxes[edge.target]
    (sx, sy), (tx, ty) = source.bottom, target.top
    if ty <= sy:  # a cycle or a node requiring itself: leave by the side and loop back
        sx, sy = source.x + source.width, source.y + source.height / 2
        tx, ty = target.x + target.width, target.y + target.height / 2
        bend = GAP_X + abs(sy - ty) / 4
        path = f"M{sx:.1f},{sy:.1f} C{sx + bend:.1f},{sy:.1f} {tx + bend:.1f},{ty:.1f} " \
               f"{tx:.1f},{ty:.1f}"
        label_x, label_y = max(sx, tx) + bend * 0.75, (sy + ty) / 2
    else:
        pull = (ty - sy) / 2
        path = f"M{sx:.1f},{sy:.1f} C{sx:.1f},{sy + pull:.1f} {tx:.1f},{ty - pull:.1f} " \
               f"{tx:.1f},{ty:.1f}"
        label_x, label_y = (sx + tx) / 2, (sy + ty) / 2
    colour = status_stroke(edge.status) if edge.status else "#555555"
    dash = DASHES.get(edge.kind, "")
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    width = "2.2" if edge.kind == "host" else "1.3"
    label = edge.label + (f" · {edge.status}" if edge.status else "")
    return "\n".join([
        f'<g class="edge edge-{escape(edge.kind)}" data-source="{escape(edge.source)}" '
        f'data-target="{escape(edge.target)}">',
        f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{dash_attr} '
        f'marker-end="url(#arrow)"/>',
        f'<text x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="middle" font-size="10" '
        f'fill="{colour}" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
        f"{escape(label)}</text>",
        "</g>",
    ])


def render(graph: Graph) -> str:
    boxes, width, height = place(graph)
    width, height = max(width, 160.0), max(height, 60.0)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" class="topology">',
        "<defs>",
        '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">',
        '<path d="M0,0 L10,5 L0,10 z" fill="#555555"/>',
        "</marker>",
        "</defs>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    edges = [e for e in graph.edges if e.source in boxes and e.target in boxes]
    parts.extend(_edge(edge, boxes) for edge in edges)
    parts.extend(_node(node, boxes[node.id]) for node in graph.nodes)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
