"""Unfurl's topology ``root: {node: NAME}``, against what Unfurl 1.2.0 did
(tests/data/unfurl120/15-imports-types/root-*)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import InvokeIn, Project
from tests.load.test_imports import CAPTURED, HEAD, case
from unfurl_lite.load import yamlio


def statuses(file: Path) -> dict:
    doc = yamlio.to_plain(yamlio.parse(file.read_text(), str(file)))
    return {name: {k: v for k, v in record.items() if k in ("priority", "readyState")}
            for name, record in doc["status"]["instances"].items()}


def test_only_the_root_node_and_what_it_requires_deploy(project: Project,
                                                        invoke_in: InvokeIn) -> None:
    root = case(project, "root-node")
    plan = invoke_in(root, "plan")
    assert "other: skipped: not required by the topology's root node" in plan.output
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    # app ok/created (required); other recorded pending with priority ignore, never run
    assert statuses(root / "ensemble.yaml") == statuses(
        CAPTURED / "root-node" / "deploy" / "ensemble.after.yaml")
    assert [r.split("\t")[3] for r in project.jobs_tsv()[1:]] == ["target=::app"]


def test_what_the_root_requires_is_deployed_too(project: Project, invoke_in: InvokeIn) -> None:
    project.write(HEAD + textwrap.dedent("""\
        spec:
          service_template:
            topology_template:
              root: {node: app}
              node_templates:
                db:
                  type: tosca.nodes.Root
                  interfaces: {Standard: {create: echo db}}
                app:
                  type: tosca.nodes.Root
                  requirements: [{dependency: db}]
                  interfaces: {Standard: {create: echo app}}
                spare:
                  type: tosca.nodes.Root
                  interfaces: {Standard: {create: echo spare}}
        """))
    result = invoke_in(project.root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert (project.local("db"), project.local("app"), project.local("spare")) == (
        "ok", "ok", "pending")


@pytest.mark.parametrize(("root", "message"), [
    ("{node: nosuch}", "unknown node 'nosuch' declared as the topology's root"),
    ("{node: app, node_type: x.Y}", "`root: {node_type: ...}` (Unfurl's substitution mapping) "
                                    "is not supported"),
    ("{capabilities: {}}", "`root:` needs `node:` naming a node template"),
])
def test_a_root_unfurl_would_refuse_or_substitute_is_refused(
    project: Project, invoke_in: InvokeIn, root: str, message: str
) -> None:
    if "nosuch" in root:  # Unfurl 1.2.0: Unknown node "nosuch" declared on substitution_mappings
        console = (CAPTURED / "root-missing" / "validate" / "console.txt").read_text()
        assert 'Unknown node "nosuch"' in console
    project.write(HEAD + textwrap.dedent(f"""\
        spec:
          service_template:
            topology_template:
              root: {root}
              node_templates:
                app: {{type: tosca.nodes.Root}}
        """))
    result = invoke_in(project.root, "validate")
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert message in output and "ensemble.yaml:6:" in output, output
