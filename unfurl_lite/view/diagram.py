"""The topology as a graph for people: nodes coloured by status, labelled edges.

One neutral graph feeds every picture (DOT, Mermaid, SVG through Graphviz, the built-in
SVG) and the dashboard, so a node's colour and an edge's label mean the same everywhere.
The formats live in modules of their own and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unfurl_lite.model.entities import Instance, NodeTemplate, Requirement, Status
from unfurl_lite.model.status_layout import host_instances

if TYPE_CHECKING:
    from unfurl_lite.model.ensemble import Ensemble


@dataclass(frozen=True)
class GraphNode:
    """A template or instance drawn in the topology graph."""
    id: str
    label: str
    kind: str  # "template" | "instance"
    type: str
    status: str | None
    state: str | None
    detail: str  # e.g. "ok · started"
    #: the instance this one is hosted on (instances only): nested pictures draw it inside
    host: str | None = None


@dataclass(frozen=True)
class GraphEdge:
    """A requirement drawn as an edge between two graph nodes."""
    source: str  # the node with the requirement
    target: str  # the node it requires
    label: str
    kind: str  # "host" | "dependency" | "connect" | "relationship"
    #: the relationship instance's status, when one is recorded (instances only)
    status: str | None = None


@dataclass(frozen=True)
class Graph:
    """The topology as nodes and edges, ready to be drawn any way."""
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]

    def node(self, node_id: str) -> GraphNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)


#: fill colours, one per status, light enough for dark text on them
PALETTE: dict[str, str] = {
    "ok": "#b7e4c7",
    "degraded": "#ffe08a",
    "error": "#f4a3a3",
    "pending": "#bcd7f5",
    "absent": "#d9d9d9",
    "unknown": "#eeeeee",
}

#: the matching outline and edge colours, dark enough to read on white
STROKES: dict[str, str] = {
    "ok": "#2d6a4f",
    "degraded": "#b7791f",
    "error": "#c0392b",
    "pending": "#2f6db5",
    "absent": "#7f7f7f",
    "unknown": "#8c8c8c",
}

#: how bad each status is when one template has instances in several
_SEVERITY = ("ok", "pending", "degraded", "unknown", "absent", "error")


def status_colour(status: str | None) -> str:
    """The fill colour of a status (unknown for None or anything unexpected)."""
    return PALETTE.get(str(status) if status is not None else "unknown", PALETTE["unknown"])


def status_stroke(status: str | None) -> str:
    """The outline (and relationship edge) colour of a status."""
    return STROKES.get(str(status) if status is not None else "unknown", STROKES["unknown"])


def edge_kind(requirement: Requirement) -> str:
    """hosted-on, depends-on, connects-to (TOSCA's and Cloudify's names), or another type."""
    if requirement.is_host:
        return "host"
    relationship = (requirement.relationship or "").rsplit(".", 1)[-1].lower()
    if relationship in ("", "dependson", "depends_on"):
        return "dependency"
    if relationship in ("connectsto", "connected_to", "attachesto"):
        return "connect"
    return "relationship"


#: the relationship a requirement has when the template names none (TOSCA's defaults)
HOSTED_ON = "tosca.relationships.HostedOn"
DEPENDS_ON = "tosca.relationships.DependsOn"


def relationship_type(requirement: Requirement) -> str:
    """The relationship type the template names, else the one TOSCA implies."""
    if requirement.relationship:
        return requirement.relationship
    return HOSTED_ON if requirement.is_host else DEPENDS_ON


def edge_label(requirement: Requirement) -> str:
    """The requirement's name and its relationship type: ``db (tosca.relationships.ConnectsTo)``."""
    return f"{requirement.name} ({relationship_type(requirement)})"


def worst_status(statuses: Sequence[str]) -> str:
    return max(statuses, key=lambda s: _SEVERITY.index(s) if s in _SEVERITY else 3)


def _detail(*parts: str | None) -> str:
    return " · ".join(p for p in parts if p)


def template_node(
    template: NodeTemplate, instances: Sequence[Instance], operationless: bool = False
) -> GraphNode:
    """A template takes the status of its instances (the worst of them); none yet: pending,
    saying why when it has no operation (a deploy runs nothing for it, as in Unfurl)."""
    if not instances:
        why = "no operation to run" if operationless else "no instance yet"
        return GraphNode(template.name, template.name, "template", template.type,
                         "pending", None, f"pending · {why}")
    statuses = [str(i.status) for i in instances]
    states = {str(i.state) for i in instances if i.state is not None}
    status = worst_status(statuses)
    state = states.pop() if len(states) == 1 else None
    count = f"{len(instances)} instances" if len(instances) > 1 else None
    return GraphNode(template.name, template.name, "template", template.type,
                     status, state, _detail(status, state, count))


def instance_node(
    instance: Instance,
    type_name: str,
    effective: Status | None,
    host: str | None,
    recorded: bool = True,
) -> GraphNode:
    """An instance; what sets it apart is in its detail: not recorded yet (a deploy would
    create it), failed by what it requires (its effective status), discovered, protected."""
    status = str(instance.status)
    state = str(instance.state) if instance.state is not None else None
    notes: list[str | None] = []
    if not recorded:
        notes.append("not deployed yet")
    elif effective is not None and effective != instance.status:
        notes.append(f"effective {effective}")
    notes.append("discovered" if instance.discovered else None)
    notes.append("protected" if instance.protected else None)
    return GraphNode(instance.name, instance.name, "instance", type_name, status, state,
                     _detail(status, state, *notes), host)


def template_graph(ensemble: Ensemble) -> Graph:
    # start-up: keeps plan.topology (10 modules) off diagram's import until template_graph() runs
    from unfurl_lite.plan.topology import operationless

    templates = ensemble.topology.templates
    idle = operationless(ensemble.topology)
    by_template: dict[str, list[Instance]] = {}
    for inst in ensemble.instances.values():
        by_template.setdefault(inst.template, []).append(inst)
    nodes = tuple(
        template_node(t, by_template.get(name, []), name in idle) for name, t in templates.items()
    )
    edges = tuple(
        GraphEdge(name, req.node, edge_label(req), edge_kind(req))
        for name, template in templates.items()
        for req in template.requirements
        if req.node in templates
    )
    return Graph(nodes, edges)


def instance_graph(ensemble: Ensemble) -> Graph:
    """Every instance (recorded, or pending for a template with none yet), each hosted one
    with its host, and an edge per requirement carrying its relationship instance's status."""
    # start-up: keeps plan.topology (15 modules) off diagram's import until instance_graph() runs
    from unfurl_lite.plan.topology import instance_graph as requires
    from unfurl_lite.plan.topology import operationless, planned_instances
    from unfurl_lite.run.status import fold_effective

    templates = ensemble.topology.templates
    instances = planned_instances(ensemble)
    effective = fold_effective(
        instances, requires(ensemble, instances), operationless(ensemble.topology)
    )
    hosts = host_instances(templates, instances)
    by_template: dict[str, list[str]] = {}
    for inst in instances.values():
        by_template.setdefault(inst.template, []).append(inst.name)
    nodes = tuple(
        instance_node(
            inst,
            templates[inst.template].type if inst.template in templates else "",
            effective.get(name),
            hosts.get(name),
            name in ensemble.instances,
        )
        for name, inst in instances.items()
    )
    edges = tuple(
        edge
        for inst in instances.values()
        if inst.template in templates
        for edge in _instance_edges(inst, templates[inst.template], by_template, hosts)
    )
    return Graph(nodes, edges)


def _instance_edges(
    inst: Instance,
    template: NodeTemplate,
    by_template: Mapping[str, list[str]],
    hosts: Mapping[str, str],
) -> list[GraphEdge]:
    edges: list[GraphEdge] = []
    for req in template.requirements:
        peers = by_template.get(req.node, [])
        if req.is_host and inst.name in hosts:
            peers = [hosts[inst.name]]
        relationship = inst.relationships.get(req.name)
        for peer in peers:
            status = None
            if relationship is not None and (relationship.name == peer or len(peers) == 1):
                status = str(relationship.status)
            edges.append(GraphEdge(inst.name, peer, edge_label(req), edge_kind(req), status))
    return edges


def hosted_children(graph: Graph) -> dict[str | None, list[GraphNode]]:
    """Host id (None: top level) -> the nodes hosted directly on it: the nesting every
    format draws (a Graphviz cluster, a Mermaid subgraph)."""
    ids = {n.id for n in graph.nodes}
    children: dict[str | None, list[GraphNode]] = {}
    for node in graph.nodes:
        host = node.host if node.host in ids and node.host != node.id else None
        children.setdefault(host, []).append(node)
    return children


def nesting(graph: Graph) -> Iterator[tuple[str, int, GraphNode]]:
    """The nodes in drawing order, as (``"leaf"`` | ``"open"`` | ``"close"``, depth, node):
    a host with hosted nodes opens a cluster holding itself and them, then closes it. Every
    format draws the same nesting from these; a cycle of hosts is drawn flat."""
    children = hosted_children(graph)
    drawn: set[str] = set()

    def place(node: GraphNode, depth: int) -> Iterator[tuple[str, int, GraphNode]]:
        if node.id in drawn:
            return
        drawn.add(node.id)
        hosted = children.get(node.id, [])
        if not hosted:
            yield "leaf", depth, node
            return
        yield "open", depth, node
        yield "leaf", depth + 1, node
        for child in hosted:
            yield from place(child, depth + 1)
        yield "close", depth, node

    for node in children.get(None, []):
        yield from place(node, 0)
    for node in graph.nodes:
        if node.id not in drawn:
            drawn.add(node.id)
            yield "leaf", 0, node


def build_graph(ensemble: Ensemble, *, instances: bool = False) -> Graph:
    """The ensemble's templates (or, with ``instances``, its instances) and what links them."""
    return instance_graph(ensemble) if instances else template_graph(ensemble)


def load_graph(path: str | Path | None = None, *, instances: bool = False) -> Graph:
    """The graph of the ensemble at ``path`` (a file, its directory, or the current one),
    loaded and checked as ``unfurl validate`` does."""
    from unfurl_lite.api.project import validate  # start-up: keeps api.project off diagram's import

    return build_graph(validate(path), instances=instances)


#: the version of :func:`as_json`'s document
SCHEMA_VERSION = 1


def as_json(graph: Graph) -> dict[str, Any]:
    """The graph as plain data (``unfurl graph --json``), each node with its colour."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "nodes": [{**asdict(n), "colour": status_colour(n.status)} for n in graph.nodes],
        "edges": [asdict(e) for e in graph.edges],
    }
