"""The graph as SVG drawn without Graphviz: a small layered (Sugiyama-style) drawing.

Each node sits one layer below everything that requires it, layers are ordered by the
average position of their requirers (one pass), and edges are curves from a node's bottom
to its target's top. Enough to see a topology when ``dot`` is not installed; Graphviz
draws large graphs better.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from unfurl_lite.model.dependencies import topological_order
from unfurl_lite.view.diagram import Graph, GraphEdge, GraphNode, status_colour, status_stroke

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
    """Where a node's box sits in the built-in SVG layout."""
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


@dataclass
class Layout:
    """The built-in SVG layout: boxes by node, and the rows they sit in."""
    boxes: dict[str, Box]
    rows: list[list[str]]
    width: float
    height: float

    def between(self, top: float, bottom: float) -> list[Box]:
        """The boxes of the layers strictly between two heights."""
        found: list[Box] = []
        for row in self.rows:
            if row and top < self.boxes[row[0]].y < bottom:
                found.extend(self.boxes[node] for node in row)
        return found

    def lane_is_free(self, x: float, top: float, bottom: float) -> bool:
        return all(not (b.x - 6 <= x <= b.x + b.width + 6) for b in self.between(top, bottom))


def place(graph: Graph) -> Layout:
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
    return Layout(boxes, rows, total + MARGIN * 2, height)


LABEL_CHAR = 5.6  # average width of a character of an edge label


@dataclass(frozen=True)
class EdgePath:
    """An edge's SVG path and where its label goes."""
    path: str
    label_x: float
    label_y: float
    anchor: str = "middle"  # "start": the label is beside a lane, left-aligned

    def label_extent(self, label: str) -> tuple[float, float]:
        """The label's left and right edges (estimated from its length)."""
        width = len(label) * LABEL_CHAR
        if self.anchor == "start":
            return self.label_x, self.label_x + width
        return self.label_x - width / 2, self.label_x + width / 2


def route(edge: GraphEdge, layout: Layout, shift: float, spare: list[float]) -> EdgePath:
    """A curve from the source's bottom to the target's top; one that would cross a layer
    between them goes down a free vertical lane instead (``spare``: the next lane right of
    everything, used when no gap is free); a cycle loops round the right side."""
    source, target = layout.boxes[edge.source], layout.boxes[edge.target]
    limit = min(source.width, target.width) / 2 - 8
    shift = max(-limit, min(limit, shift))
    (sx, sy), (tx, ty) = source.bottom, target.top
    sx, tx = sx + shift, tx + shift
    if ty <= sy:  # a cycle or a node requiring itself: leave by the side and loop back
        sx, sy = source.x + source.width, source.y + source.height / 2 + shift / 4
        tx, ty = target.x + target.width, target.y + target.height / 2 + shift / 4
        bend = GAP_X + abs(sy - ty) / 4
        return EdgePath(f"M{sx:.1f},{sy:.1f} C{sx + bend:.1f},{sy:.1f} {tx + bend:.1f},{ty:.1f} "
                     f"{tx:.1f},{ty:.1f}", max(sx, tx) + bend * 0.75, (sy + ty) / 2)
    crossed = [b for b in layout.between(sy, ty)
               if b.x - 6 <= sx + (tx - sx) * (b.y + HEIGHT / 2 - sy) / (ty - sy)
               <= b.x + b.width + 6]
    if not crossed:
        pull = (ty - sy) / 2
        return EdgePath(f"M{sx:.1f},{sy:.1f} C{sx:.1f},{sy + pull:.1f} {tx:.1f},{ty - pull:.1f} "
                     f"{tx:.1f},{ty:.1f}", (sx + tx) / 2, (sy + ty) / 2 + shift * 0.9)
    lane = _free_lane(layout, crossed, (sx + tx) / 2, sy, ty)
    if lane is None:
        lane = spare[0]
        spare[0] += 12
    y1, y2 = sy + GAP_Y / 2, ty - GAP_Y / 2
    return EdgePath(
        f"M{sx:.1f},{sy:.1f} C{sx:.1f},{(sy + y1) / 2:.1f} {lane:.1f},{(sy + y1) / 2:.1f} "
        f"{lane:.1f},{y1:.1f} L{lane:.1f},{y2:.1f} C{lane:.1f},{(y2 + ty) / 2:.1f} "
        f"{tx:.1f},{(y2 + ty) / 2:.1f} {tx:.1f},{ty:.1f}",
        lane + 4, (y1 + y2) / 2, "start")


def _free_lane(layout: Layout, crossed: list[Box], near: float, top: float,
               bottom: float) -> float | None:
    """The gap beside a crossed box nearest ``near`` that is free in every layer between."""
    candidates = sorted(
        (x for b in crossed for x in (b.x - GAP_X / 2, b.x + b.width + GAP_X / 2)),
        key=lambda x: abs(x - near),
    )
    return next((x for x in candidates if layout.lane_is_free(x, top, bottom)), None)


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


def _edge(edge: GraphEdge, way: EdgePath) -> str:
    colour = status_stroke(edge.status) if edge.status else "#555555"
    dash = DASHES.get(edge.kind, "")
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    width = "2.2" if edge.kind == "host" else "1.3"
    label = _label(edge)
    return "\n".join([
        f'<g class="edge edge-{escape(edge.kind)}" data-source="{escape(edge.source)}" '
        f'data-target="{escape(edge.target)}">',
        f'<path d="{way.path}" fill="none" stroke="{colour}" stroke-width="{width}"'
        f'{dash_attr} marker-end="url(#arrow)"/>',
        f'<text x="{way.label_x:.1f}" y="{way.label_y:.1f}" text-anchor="{way.anchor}" '
        f'font-size="10" fill="{colour}" stroke="#ffffff" stroke-width="3" '
        f'paint-order="stroke">{escape(label)}</text>',
        "</g>",
    ])


def _label(edge: GraphEdge) -> str:
    return edge.label + (f" · {edge.status}" if edge.status else "")


def _shifts(edges: list[GraphEdge]) -> list[float]:
    """Edges between the same two nodes side by side, 16 px apart."""
    pairs: dict[frozenset[str], int] = {}
    for edge in edges:
        pair = frozenset((edge.source, edge.target))
        pairs[pair] = pairs.get(pair, 0) + 1
    seen: dict[frozenset[str], int] = {}
    shifts: list[float] = []
    for edge in edges:
        pair = frozenset((edge.source, edge.target))
        index = seen.get(pair, 0)
        seen[pair] = index + 1
        shifts.append((index - (pairs[pair] - 1) / 2) * 16)
    return shifts


def render(graph: Graph) -> str:
    layout = place(graph)
    edges = [e for e in graph.edges if e.source in layout.boxes and e.target in layout.boxes]
    spare = [layout.width - MARGIN / 2]
    routes = [route(e, layout, shift, spare) for e, shift in zip(edges, _shifts(edges),
                                                                strict=True)]
    extents = [way.label_extent(_label(e)) for e, way in zip(edges, routes, strict=True)]
    left = min((lo for lo, _ in extents), default=0.0)
    shift = max(0.0, MARGIN / 2 - left)  # a long label left of the first box: move all right
    right = max((hi for _, hi in extents), default=0.0)
    width = max(layout.width, spare[0] + MARGIN / 2, right + MARGIN / 2, 160.0) + shift
    height = max(layout.height, 60.0)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" class="topology">',
        "<defs>",
        '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse">',
        '<path d="M0,0 L10,5 L0,10 z" fill="#555555"/>',
        "</marker>",
        "</defs>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
        f'<g transform="translate({shift:.1f},0)">',
    ]
    parts.extend(_edge(edge, way) for edge, way in zip(edges, routes, strict=True))
    parts.extend(_node(node, layout.boxes[node.id]) for node in graph.nodes)
    parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
