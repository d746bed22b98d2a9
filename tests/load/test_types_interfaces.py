"""Operations of one's own on Unfurl's ``Install`` interface, declared by an interface
type, against what Unfurl 1.2.0 did (tests/data/unfurl120/15-imports-types/install-*)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, InvokeIn, Project, git

CAPTURED = ROOT / "tests" / "data" / "unfurl120" / "15-imports-types"


def case(project: Project, name: str) -> Path:
    shutil.copytree(CAPTURED / name / "input", project.root, dirs_exist_ok=True)
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", f"case {name}")
    return project.root


def captured(name: str, step: str, file: str) -> str:
    return (CAPTURED / name / step / file).read_text()


def rows(jobs_tsv: str) -> list[dict[str, str]]:
    return [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            for line in jobs_tsv.splitlines()]


def test_an_undeclared_operation_on_install_is_refused_as_unfurl_does(
    project: Project, invoke_in: InvokeIn
) -> None:
    assert captured("install-custom", "validate", "exitcode.txt").strip() == "1"
    root = case(project, "install-custom")
    result = invoke_in(root, "validate")
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    for op in ("subtaskOperation", "execute"):  # Unfurl: contains unknown field "execute"
        assert f"unknown operation {op!r} on interface 'Install'" in output
    assert "derived_from: unfurl.interfaces.Install, operations: {execute: }" in output


def test_operations_an_interface_type_declares_run_by_name_not_by_deploy(
    project: Project, invoke_in: InvokeIn
) -> None:
    root = case(project, "install-typed")
    assert invoke_in(root, "validate").exit_code == 0
    deploy = invoke_in(root, "deploy", "--approve")
    assert deploy.exit_code == 0, deploy.output
    ops = [r["operation"] for r in rows((root / "jobs.tsv").read_text()) if "operation" in r]
    assert ops == [r["operation"] for r in rows(captured("install-typed", "deploy", "jobs.tsv"))
                   if "operation" in r] == ["configure"]
    for name in ("Install.execute", "my.interfaces.Tool.execute"):
        result = invoke_in(root, "run", "--approve", "--operation", name)
        assert result.exit_code == 0, result.output
        (ran,) = [r for r in rows((root / "jobs.tsv").read_text())[-1:]]
        (unfurl,) = rows(captured("install-typed", f"run-{name}", "jobs.tsv"))[-1:]
        assert {k: ran[k] for k in ("target", "operation", "status", "digestValue")} == {
            k: unfurl[k] for k in ("target", "operation", "status", "digestValue")}


def test_an_operation_of_ones_own_needs_its_interface_named(project: Project,
                                                          invoke_in: InvokeIn) -> None:
    # Unfurl 1.2.0 plans nothing for a bare custom name ("Nothing to do"): say why
    assert "Nothing to do" in captured("install-typed", "run-execute", "console.txt")
    root = case(project, "install-typed")
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    result = invoke_in(root, "run", "--approve", "--operation", "execute")
    assert result.exit_code == 1
    assert "--operation Install.execute" in result.output


@pytest.mark.parametrize("operation", ["my.interfaces.Tool.execute", "Install.execute"])
def test_a_workflow_calls_the_operation_by_its_interface_type(
    project: Project, invoke_in: InvokeIn, operation: str
) -> None:
    root = case(project, "install-typed")
    workflow = ("    topology_template:\n      workflows:\n        helm:\n          steps:\n"
                "            run_it:\n              target: a\n              activities:\n"
                f"                - call_operation: {operation}\n")
    text = (root / "ensemble.yaml").read_text().replace("    topology_template:\n", workflow)
    project.write(text)
    assert invoke_in(root, "validate").exit_code == 0
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    result = invoke_in(root, "run", "--approve", "--workflow", "helm")
    assert result.exit_code == 0, result.output
    assert rows((root / "jobs.tsv").read_text())[-1]["operation"] == "execute"
