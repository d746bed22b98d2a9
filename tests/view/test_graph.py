"""``build_graph``: what the picture of a topology says (nodes, their status, labelled edges),
and the DOT and Mermaid that carry it, read back as Graphviz and Mermaid read them."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import ensemble_yaml
from tests.view.graph_parsing import parse_dot, parse_mermaid
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.view.diagram import (
    PALETTE,
    GraphEdge,
    as_json,
    build_graph,
    status_colour,
)
from unfurl_lite.view.formats import to_dot, to_mermaid

HOSTED = "host (tosca.relationships.HostedOn)"  # no relationship named: TOSCA's default
DEPENDS = "dependency (tosca.relationships.DependsOn)"
DEPENDS_ON = "tosca.relationships.DependsOn"

STACK = """\
server:
  type: tosca.nodes.Compute
  interfaces:
    Standard:
      create: echo server
db:
  type: tosca.nodes.Root
  requirements:
    - host: server
  interfaces:
    Standard:
      create: echo db
app:
  type: tosca.nodes.Root
  requirements:
    - host: server
    - dependency: db
    - cache:
        node: db
        relationship: cloudify.relationships.connected_to
  interfaces:
    Standard:
      create: {create}
web:
  type: tosca.nodes.Root
  requirements:
    - backend:
        node: app
        relationship: cloudify.relationships.connected_to
  interfaces:
    Standard:
      create: echo web
"""


def stack(create: str = "echo app") -> str:
    return ensemble_yaml(STACK.format(create=create))


def test_templates_not_yet_deployed_are_pending_with_every_edge_labelled(project):
    project.write(stack())
    graph = build_graph(load_ensemble(project.ensemble))

    assert [n.id for n in graph.nodes] == ["server", "db", "app", "web"]
    assert {n.status for n in graph.nodes} == {"pending"}
    assert all(n.kind == "template" for n in graph.nodes)
    assert graph.node("server").type == "tosca.nodes.Compute"
    assert graph.node("server").detail == "pending · no instance yet"
    assert set(graph.edges) == {
        GraphEdge("db", "server", HOSTED, "host"),
        GraphEdge("app", "server", HOSTED, "host"),
        GraphEdge("app", "db", DEPENDS, "dependency"),
        GraphEdge("app", "db", "cache (cloudify.relationships.connected_to)", "connect"),
        GraphEdge("web", "app", "backend (cloudify.relationships.connected_to)", "connect"),
    }


def test_templates_take_the_status_of_their_instances_after_a_deploy(project, invoke):
    project.write(stack(create="exit 3"))
    assert invoke("deploy", "--approve").exit_code == 64
    graph = build_graph(load_ensemble(project.ensemble))

    status = {n.id: (n.status, n.state) for n in graph.nodes}
    assert status["server"] == ("ok", "created")
    assert status["db"] == ("ok", "created")
    assert status["app"][0] == "unknown"  # as Unfurl: a failed Shell create did not say
    assert status["web"][0] == "ok"  # connected to app, not hosted on it: it ran, as Unfurl
    assert graph.node("server").detail == "ok · created"


SCALED = """\
host:
  type: tosca.nodes.Compute
web:
  type: tosca.nodes.Root
  requirements:
    - host: host
"""


def with_status(templates: str, instances: str) -> str:
    return ensemble_yaml(templates) + "status:\n  instances:\n" + textwrap.indent(
        textwrap.dedent(instances), "    "
    )


def test_a_template_with_several_instances_shows_the_worst_and_how_many(project):
    project.write(with_status(SCALED, """\
        host:
          template: host
          readyState: {local: ok, state: started}
          instances:
            web:
              template: web
              readyState: {local: ok, state: started}
            web_1:
              template: web
              readyState: {local: degraded, state: started}
        """))
    graph = build_graph(load_ensemble(project.ensemble))

    web = graph.node("web")
    assert (web.status, web.state) == ("degraded", "started")
    assert web.detail == "degraded · started · 2 instances"
    assert graph.node("host").status == "ok"


def test_instances_are_nested_in_their_host_with_relationship_status_on_edges(project, invoke):
    project.write(ensemble_yaml("""\
        host:
          type: tosca.nodes.Compute
          interfaces:
            Standard:
              create: echo host
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo db
        app:
          type: tosca.nodes.Root
          requirements:
            - host: host
            - database:
                node: db
                relationship:
                  type: cloudify.relationships.connected_to
                  interfaces:
                    Configure:
                      add_target: echo connected
          interfaces:
            Standard:
              create: echo app
        """))
    assert invoke("deploy", "--approve").exit_code == 0
    graph = build_graph(load_ensemble(project.ensemble), instances=True)

    assert all(n.kind == "instance" for n in graph.nodes)
    assert graph.node("app").host == "host"
    assert graph.node("db").host is None
    connection = next(e for e in graph.edges if e.target == "db")
    assert connection.label == "database (cloudify.relationships.connected_to)"
    assert connection.status == "ok"  # the relationship instance add_target ran on
    dot = parse_dot(to_dot(graph))
    assert dot.clusters == {"host": ["host", "app"]}
    assert dot.edge("app", "db")["label"] == "database (cloudify.relationships.connected_to) · ok"
    assert parse_mermaid(to_mermaid(graph)).clusters == {"host": ["host", "app"]}


def test_scaled_instances_each_sit_in_their_own_host_instance(project):
    project.write(with_status(SCALED, """\
        host:
          template: host
          readyState: {local: ok, state: started}
        host_1:
          template: host
          readyState: {local: ok, state: started}
        """))
    graph = build_graph(load_ensemble(project.ensemble), instances=True)

    assert {n.id: n.host for n in graph.nodes if n.id.startswith("web")} == {
        "web": "host", "web_1": "host_1"}
    assert {(e.source, e.target) for e in graph.edges} == {
        ("web", "host"), ("web_1", "host_1")}
    assert {n.id: n.status for n in graph.nodes}["web_1"] == "pending"
    assert graph.node("web_1").detail == "pending · not deployed yet"
    assert graph.node("host_1").detail == "ok · started"


def test_dot_carries_names_labels_and_the_status_colours(project):
    project.write(with_status(SCALED + "db:\n  type: tosca.nodes.Root\n"
                              "cache:\n  type: tosca.nodes.Root\n", """\
        host:
          template: host
          readyState: {local: error, state: error}
          instances:
            web:
              template: web
              readyState: {local: ok, state: started}
        db:
          template: db
          readyState: {local: absent, state: deleted}
        """))
    dot = parse_dot(to_dot(build_graph(load_ensemble(project.ensemble))))

    assert set(dot.nodes) == {"host", "web", "db", "cache"}
    assert dot.label_lines("web") == ["web", "tosca.nodes.Root", "ok · started"]
    # no operation: a deploy runs nothing for it, so it stays pending, and says why
    assert dot.label_lines("cache")[2] == "pending · no operation to run"
    colours = {name: attrs["fillcolor"] for name, attrs in dot.nodes.items()}
    assert colours == {"host": PALETTE["error"], "web": PALETTE["ok"],
                       "db": PALETTE["absent"], "cache": PALETTE["pending"]}
    assert dot.edge("web", "host") == {"label": HOSTED, "style": "bold"}


def test_mermaid_carries_names_labels_and_the_status_colours(project, invoke):
    project.write(stack(create="exit 3"))
    invoke("deploy", "--approve")
    mermaid = parse_mermaid(to_mermaid(build_graph(load_ensemble(project.ensemble))))

    assert set(mermaid.nodes) == {"server", "db", "app", "web"}
    assert mermaid.nodes["app"]["fillcolor"] == PALETTE["unknown"]  # a failed Shell create
    assert mermaid.nodes["web"]["fillcolor"] == PALETTE["ok"]  # ran: app is not its host
    assert mermaid.nodes["db"]["fillcolor"] == PALETTE["ok"]
    assert mermaid.edge("db", "server") == {"label": HOSTED, "arrow": "==>"}
    assert mermaid.edge("web", "app") == {
        "label": "backend (cloudify.relationships.connected_to)", "arrow": "-->"}
    assert mermaid.nodes["app"]["label"].split("\n")[2].startswith("unknown")


ODD = ['say "hi"', "café-ünïcode", "a-b", "back\\slash<b>&amp;#35;", "node-0", "日本"]


def odd_topology() -> str:
    quoted = [name.replace("'", "''") for name in ODD]
    return ensemble_yaml(f"""\
        '{quoted[0]}':
          type: tosca.nodes.Root
        '{quoted[1]}':
          type: tosca.nodes.Root
          requirements:
            - host: '{quoted[0]}'
        '{quoted[2]}':
          type: tosca.nodes.Root
          requirements:
            - dependency: '{quoted[1]}'
        '{quoted[3]}':
          type: tosca.nodes.Root
          requirements:
            - "needs \\"it\\"":
                node: '{quoted[2]}'
        '{quoted[4]}':
          type: tosca.nodes.Root
          requirements:
            - dependency: '{quoted[3]}'
        '{quoted[5]}':
          type: tosca.nodes.Root
          requirements:
            - dependency: '{quoted[4]}'
        """)


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
def test_odd_names_come_back_exactly(project, fmt):
    project.write(odd_topology())
    graph = build_graph(load_ensemble(project.ensemble))
    parsed = parse_dot(to_dot(graph)) if fmt == "dot" else parse_mermaid(to_mermaid(graph))

    assert list(parsed.nodes) == ODD
    assert {(s, t, a["label"]) for s, t, a in parsed.edges} == {
        (ODD[1], ODD[0], HOSTED),
        (ODD[2], ODD[1], DEPENDS),
        (ODD[3], ODD[2], f'needs "it" ({DEPENDS_ON})'),
        (ODD[4], ODD[3], DEPENDS),
        (ODD[5], ODD[4], DEPENDS),
    }


def test_a_big_topology_keeps_every_node_and_edge(project):
    count = 400  # a tree: each node hosted on node (i-1)//3, depending on its left sibling
    lines = []
    for i in range(count):
        lines.append(f"n{i}:\n  type: tosca.nodes.Root\n")
        reqs = ([f"    - host: n{(i - 1) // 3}\n"] if i else []) + (
            [f"    - dependency: n{i - 1}\n"] if i % 3 != 1 and i else [])
        if reqs:
            lines.append("  requirements:\n" + "".join(reqs))
    project.write(ensemble_yaml("".join(lines)))
    graph = build_graph(load_ensemble(project.ensemble))

    assert len(graph.nodes) == count
    expected = {(f"n{i}", f"n{(i - 1) // 3}") for i in range(1, count)} | {
        (f"n{i}", f"n{i - 1}") for i in range(1, count) if i % 3 != 1}
    for parsed in (parse_dot(to_dot(graph)), parse_mermaid(to_mermaid(graph))):
        assert len(parsed.nodes) == count
        assert {(s, t) for s, t, _ in parsed.edges} == expected


def test_status_colour_is_one_palette_with_unknown_for_anything_else():
    assert status_colour("ok") == PALETTE["ok"]
    assert status_colour(None) == PALETTE["unknown"] == status_colour("nonsense")
    assert len(set(PALETTE.values())) == len(PALETTE)  # every status its own colour


def test_json_lists_nodes_with_their_colour_and_edges(project):
    project.write(stack())
    document = as_json(build_graph(load_ensemble(project.ensemble)))

    assert document["schemaVersion"] == 1
    assert document["nodes"][0] == {
        "id": "server", "label": "server", "kind": "template", "type": "tosca.nodes.Compute",
        "status": "pending", "state": None, "detail": "pending · no instance yet", "host": None,
        "colour": PALETTE["pending"]}
    assert {"source": "web", "target": "app", "kind": "connect", "status": None,
            "label": "backend (cloudify.relationships.connected_to)"} in document["edges"]


def test_the_docs_palette_and_pictures_match_the_code():
    from tests.conftest import ROOT
    from unfurl_lite.view.diagram import STROKES

    doc = (ROOT / "docs" / "graph.md").read_text()
    for status, fill in PALETTE.items():
        assert f"| {status} | `{fill}` " in doc and f"| `{STROKES[status]}` |" in doc
    example = (ROOT / "docs" / "img" / "graph-example.svg").read_text()
    for name, status in (("db", "ok"), ("app", "error"), ("web", "ok")):
        assert f">{name}</text>" in example and PALETTE[status] in example
    assert "(img/graph-example.svg)" in doc
    assert "(docs/img/graph-example.svg)" in (ROOT / "README.md").read_text()


def test_an_instance_fine_itself_but_failed_by_what_it_requires_says_so(project):
    project.write(with_status("""\
        db:
          type: tosca.nodes.Root
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
        """, """\
        db:
          template: db
          readyState: {local: error, state: error}
          created: false
        app:
          template: app
          readyState: {local: ok, state: started}
          protected: true
        """))
    graph = build_graph(load_ensemble(project.ensemble), instances=True)

    assert graph.node("app").status == "ok"  # coloured by its own status
    assert graph.node("app").detail == "ok · started · effective error · protected"
    assert graph.node("db").detail == "error · error · discovered"
