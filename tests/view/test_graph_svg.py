"""The SVG pictures: through Graphviz's real ``dot`` (skipped only where it is not installed;
CI installs Debian's graphviz), the clear error when it is missing, and the built-in drawing
the dashboard falls back to."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ensemble_yaml
from unfurl_lite.errors import ToolMissing, UnfurlLiteError
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.view.diagram import PALETTE, build_graph
from unfurl_lite.view.formats import to_builtin_svg, to_dot, to_svg

SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed (apt-get install graphviz)")

TOPOLOGY = """\
server:
  type: tosca.nodes.Compute
'app "x"-ü':
  type: tosca.nodes.Root
  requirements:
    - host: server
    - db:
        node: db
        relationship: cloudify.relationships.connected_to
db:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: echo db
"""


@pytest.fixture
def graph(project, invoke):
    project.write(ensemble_yaml(TOPOLOGY))
    assert invoke("deploy", "--approve").exit_code == 0
    return build_graph(load_ensemble(project.ensemble))


def texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text")]


@needs_dot
def test_svg_through_graphviz_shows_every_name_label_and_colour(graph):
    svg = to_svg(graph)
    root = ET.fromstring(svg)  # well-formed XML

    shown = texts(svg)
    for name in ("server", 'app "x"-ü', "db", "host (tosca.relationships.HostedOn)",
                 "db (cloudify.relationships.connected_to)"):
        assert name in shown
    fills = {p.get("fill") for p in root.iter(f"{SVG}path")} | {
        p.get("fill") for p in root.iter(f"{SVG}polygon")}
    assert PALETTE["ok"] in fills  # db deployed
    assert PALETTE["pending"] in fills  # server and app have no operation: never recorded
    titles = ["".join(t.itertext()) for t in root.iter(f"{SVG}title")]
    assert "app \"x\"-ü->server" in titles  # the edge, between the real names


@needs_dot
def test_graphviz_reads_the_dot_with_the_names_unchanged(graph):
    done = subprocess.run(["dot", "-Tjson"], input=to_dot(graph), capture_output=True,
                          text=True, check=True)
    import json

    layout = json.loads(done.stdout)
    names = [o["name"] for o in layout["objects"]]
    assert names == ["server", 'app "x"-ü', "db"]
    assert sorted(e["label"] for e in layout["edges"]) == [
        "db (cloudify.relationships.connected_to)", "host (tosca.relationships.HostedOn)"]


def test_missing_dot_is_a_clear_error_naming_debians_package(graph, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToolMissing) as raised:
        to_svg(graph)

    assert isinstance(raised.value, UnfurlLiteError)
    text = raised.value.format()
    assert "`dot`" in text and "`graphviz` package" in text and "apt-get install graphviz" in text


def test_a_failing_dot_is_an_error_with_its_message(graph, tmp_path, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dot").write_text("#!/bin/sh\necho 'Error: syntax error in line 1' >&2\nexit 1\n")
    (fake / "dot").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    with pytest.raises(UnfurlLiteError, match="syntax error in line 1"):
        to_svg(graph)


def test_builtin_svg_draws_every_node_in_its_colour_and_every_edge(graph):
    svg = to_builtin_svg(graph)
    root = ET.fromstring(svg)

    nodes = {g.get("data-id"): g for g in root.iter(f"{SVG}g") if "node" in g.get("class", "")}
    assert set(nodes) == {"server", 'app "x"-ü', "db"}
    fill = {name: g.find(f"{SVG}rect").get("fill") for name, g in nodes.items()}
    assert fill == {"server": PALETTE["pending"], 'app "x"-ü': PALETTE["pending"],
                    "db": PALETTE["ok"]}
    edges = [g for g in root.iter(f"{SVG}g") if "edge" in g.get("class", "").split()]
    assert {(g.get("data-source"), g.get("data-target"), "".join(g.find(f"{SVG}text").itertext()))
            for g in edges} == {('app "x"-ü', "server", "host (tosca.relationships.HostedOn)"),
                                ('app "x"-ü', "db", "db (cloudify.relationships.connected_to)")}
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0


def test_builtin_svg_puts_each_node_below_what_requires_it(graph):
    root = ET.fromstring(to_builtin_svg(graph))
    top = {g.get("data-id"): float(g.find(f"{SVG}rect").get("y"))
           for g in root.iter(f"{SVG}g") if g.get("data-id")}

    assert top['app "x"-ü'] < top["server"]
    assert top['app "x"-ü'] < top["db"]
    boxes = [(float(r.get("x")), float(r.get("y")), float(r.get("width")))
             for g in root.iter(f"{SVG}g") if g.get("data-id")
             for r in [g.find(f"{SVG}rect")]]
    for i, (x, y, w) in enumerate(boxes):  # no two boxes overlap
        for x2, y2, w2 in boxes[i + 1:]:
            assert y != y2 or x + w <= x2 or x2 + w2 <= x


def test_builtin_svg_routes_an_edge_past_the_layer_it_would_cross(project):
    project.write(ensemble_yaml("""\
        top:
          type: tosca.nodes.Root
          requirements:
            - middle: middle
            - bottom: bottom
        middle:
          type: tosca.nodes.Root
          requirements:
            - dependency: bottom
        bottom:
          type: tosca.nodes.Root
        """))
    root = ET.fromstring(to_builtin_svg(build_graph(load_ensemble(project.ensemble))))
    middle = next(g.find(f"{SVG}rect") for g in root.iter(f"{SVG}g")
                  if g.get("data-id") == "middle")
    long_edge = next(g for g in root.iter(f"{SVG}g") if g.get("data-target") == "bottom"
                     and g.get("data-source") == "top")
    path = long_edge.find(f"{SVG}path").get("d")
    lane = float(path.split(" L")[1].split(",")[0])  # the vertical part: x of the lane

    left, right = float(middle.get("x")), float(middle.get("x")) + float(middle.get("width"))
    assert not left <= lane <= right
    label = long_edge.find(f"{SVG}text")
    text = "".join(label.itertext())
    assert text == "bottom (tosca.relationships.DependsOn)"
    assert float(label.get("x")) + len(text) * 5.6 <= float(root.get("width"))


def test_builtin_svg_lays_out_a_long_chain_one_layer_each(project):
    lines = [f"n{i}:\n  type: tosca.nodes.Root\n  requirements:\n    - dependency: n{i + 1}\n"
             for i in range(299)] + ["n299:\n  type: tosca.nodes.Root\n"]
    project.write(ensemble_yaml("".join(lines)))
    root = ET.fromstring(to_builtin_svg(build_graph(load_ensemble(project.ensemble))))

    tops = [float(g.find(f"{SVG}rect").get("y")) for g in root.iter(f"{SVG}g")
            if g.get("data-id")]
    assert len(tops) == 300 and tops == sorted(tops) and len(set(tops)) == 300


def test_builtin_svg_draws_a_cycle_the_loader_would_refuse():
    from unfurl_lite.view.diagram import Graph, GraphEdge, GraphNode

    nodes = tuple(GraphNode(n, n, "instance", "T", "ok", None, "ok") for n in "abc")
    edges = (GraphEdge("a", "b", "x", "dependency"), GraphEdge("b", "c", "y", "dependency"),
             GraphEdge("c", "a", "z", "dependency"), GraphEdge("c", "c", "self", "relationship"))
    root = ET.fromstring(to_builtin_svg(Graph(nodes, edges)))

    assert len([g for g in root.iter(f"{SVG}g") if g.get("data-id")]) == 3
    assert len([g for g in root.iter(f"{SVG}g") if g.get("data-source")]) == 4


@needs_dot
@pytest.mark.slow
def test_a_big_topology_through_graphviz_keeps_every_node():
    from unfurl_lite.view.diagram import Graph, GraphEdge, GraphNode

    count = 600  # past svg.LARGE: laid out with the faster options
    nodes = tuple(GraphNode(f"n{i}", f"n{i}", "template", "T", "ok", None, "ok")
                  for i in range(count))
    edges = tuple(GraphEdge(f"n{i}", f"n{(i - 1) // 3}", "host", "host")
                  for i in range(1, count))
    root = ET.fromstring(to_svg(Graph(nodes, edges)))

    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") in ("node", "edge")]
    assert sum(g.get("class") == "node" for g in groups) == count
    assert sum(g.get("class") == "edge" for g in groups) == count - 1


@needs_dot
def test_both_svgs_draw_odd_names_exactly_as_written():
    from unfurl_lite.view.diagram import Graph, GraphEdge, GraphNode

    names = ['say "hi"', "back\\slash", "a&amp;b", "<b>x</b>", "café-ünï-日本", "\\N", "n-1"]
    nodes = tuple(GraphNode(n, n, "template", "T", "ok", None, "ok") for n in names)
    edges = tuple(GraphEdge(a, b, f"{a} to {b}", "dependency")
                  for a, b in itertools.pairwise(names))
    graph = Graph(nodes, edges)

    for shown in (texts(to_svg(graph)), texts(to_builtin_svg(graph))):
        for name in names:
            assert name in shown
        for edge in edges:
            assert edge.label in shown
