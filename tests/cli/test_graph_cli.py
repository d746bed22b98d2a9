"""``unfurl graph`` at the command line: formats, --instances, -e, -o, --json, and errors."""

from __future__ import annotations

import json
import os
import shutil
import stat
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ensemble_yaml, run_in_process
from tests.view.graph_parsing import parse_dot, parse_mermaid
from unfurl_lite.view.diagram import PALETTE

TOPOLOGY = """\
host:
  type: tosca.nodes.Compute
  interfaces:
    Standard:
      create: echo host
web:
  type: tosca.nodes.Root
  requirements:
    - host: host
  interfaces:
    Standard:
      create: echo web
"""


@pytest.fixture
def deployed(project, invoke):
    project.write(ensemble_yaml(TOPOLOGY))
    assert invoke("deploy", "--approve").exit_code == 0
    return project


def test_dot_by_default_on_stdout(deployed, invoke):
    result = invoke("graph")

    assert result.exit_code == 0, result.output
    dot = parse_dot(result.stdout)
    assert set(dot.nodes) == {"host", "web"}
    assert dot.nodes["web"]["fillcolor"] == PALETTE["ok"]
    assert dot.edge("web", "host")["label"] == "host (tosca.relationships.HostedOn)"


def test_mermaid_with_instances(deployed, invoke):
    result = invoke("graph", "--format", "mermaid", "--instances")

    assert result.exit_code == 0, result.output
    mermaid = parse_mermaid(result.stdout)
    assert mermaid.clusters == {"host": ["host", "web"]}
    assert mermaid.nodes["web"]["shape"] == "box"  # an instance, not a template


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_to_a_file_with_o_prints_nothing(deployed, invoke):
    result = invoke("graph", "--format", "svg", "-o", "pictures/topology.svg")

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    svg = ET.parse(deployed.root / "pictures" / "topology.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"


def test_o_writes_a_file_others_can_read_and_keeps_an_old_files_mode(deployed, invoke):
    old_umask = os.umask(0o022)
    try:
        assert invoke("graph", "-o", "new.dot").exit_code == 0
        (deployed.root / "kept.dot").write_text("old")
        (deployed.root / "kept.dot").chmod(0o640)
        assert invoke("graph", "-o", "kept.dot").exit_code == 0
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((deployed.root / "new.dot").stat().st_mode) == 0o644
    assert stat.S_IMODE((deployed.root / "kept.dot").stat().st_mode) == 0o640
    assert set(parse_dot((deployed.root / "kept.dot").read_text()).nodes) == {"host", "web"}


def test_o_dash_is_stdout(deployed, invoke):
    result = invoke("graph", "-o", "-", "--format", "mermaid")

    assert result.exit_code == 0
    assert set(parse_mermaid(result.stdout).nodes) == {"host", "web"}
    assert not (deployed.root / "-").exists()


def test_ensemble_given_with_e_from_elsewhere(deployed, invoke_in, tmp_path):
    result = invoke_in(tmp_path, "graph", "-e", str(deployed.ensemble), "--format", "mermaid")

    assert result.exit_code == 0, result.output
    assert set(parse_mermaid(result.stdout).nodes) == {"host", "web"}
    positional = invoke_in(tmp_path, "graph", str(deployed.root))
    assert set(parse_dot(positional.stdout).nodes) == {"host", "web"}


def test_json_is_the_graph_as_data(deployed, invoke):
    result = invoke("graph", "--json", "--instances")

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [(n["id"], n["kind"], n["status"], n["host"]) for n in document["nodes"]] == [
        ("host", "instance", "ok", None), ("web", "instance", "ok", "host")]
    assert document["edges"] == [{"source": "web", "target": "host", "kind": "host",
                                  "label": "host (tosca.relationships.HostedOn)",
                                  "status": None}]


def test_json_and_format_together_is_a_usage_error(deployed, invoke):
    result = invoke("graph", "--json", "--format", "dot")

    assert result.exit_code == 2
    assert "--json and --format" in result.output


def test_an_unknown_format_is_a_usage_error(deployed, invoke):
    result = invoke("graph", "--format", "png")

    assert result.exit_code == 2
    assert "'png' is not one of 'dot', 'mermaid', 'svg'" in result.output


def test_a_bad_ensemble_exits_1_with_the_usual_message(project, invoke):
    project.write(ensemble_yaml("""\
        web:
          type: tosca.nodes.Root
          requirements:
            - host: nowhere
        """))
    result = invoke("graph", "-o", "out.dot")

    assert result.exit_code == 1
    assert "ensemble.yaml:" in result.stderr
    assert "names unknown node template 'nowhere'" in result.stderr
    assert "Traceback" not in result.output
    assert not (project.root / "out.dot").exists()


def test_missing_dot_exits_1_naming_the_package_and_writes_nothing(deployed, tmp_path):
    result = run_in_process(deployed.root, "graph", "--format", "svg", "-o", "topology.svg",
                        env={"PATH": str(tmp_path / "no-bin")})

    assert result.returncode == 1
    assert "`dot`" in result.stderr and "`graphviz` package" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (deployed.root / "topology.svg").exists()


def test_dot_and_mermaid_need_no_graphviz(deployed, tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert invoke("graph", "--format", "dot").exit_code == 0  # dot needs no Graphviz
    assert invoke("graph", "--format", "mermaid").exit_code == 0


def test_graph_writes_nothing_into_the_project(deployed, invoke):
    from tests.conftest import git

    before = git(deployed.root, "status", "--porcelain")
    for args in (("graph",), ("graph", "--instances", "--format", "mermaid"), ("graph", "--json")):
        assert invoke(*args).exit_code == 0
    assert git(deployed.root, "status", "--porcelain") == before
