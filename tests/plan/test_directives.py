"""Template directives (a node template's ``directives:`` list) as Unfurl 1.2.0 defines them:
``protected`` is built (captured in tests/data/unfurl120/13-structure-and-layout/
directive-protected); the others are refused by name at validate."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ensemble_yaml, shell_node

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "13-structure-and-layout"


def ready(instances: dict) -> dict:
    return {name: record["readyState"] for name, record in instances.items()}


def test_protected_directive_keeps_the_instance_on_undeploy_as_unfurl(project, invoke):
    project.write((DATA / "directive-protected.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("undeploy", "--approve")
    assert result.exit_code == 0, result.output
    assert 'instance with "protected" directive' in result.output
    theirs = YAML(typ="safe").load(
        (DATA / "directive-protected" / "2-undeploy" / "ensemble.after.yaml").read_text()
    )
    assert ready(project.status()) == ready(theirs["status"]["instances"])
    assert not any("deleting keep" in line for line in project.jobs_tsv())


@pytest.mark.parametrize(
    "directive", ["dependent", "select", "discover", "default", "check", "virtual"]
)
def test_directives_not_built_are_refused_by_name(project, invoke, directive):
    node = shell_node("a", "echo hi").replace(
        "  type: tosca.nodes.Root\n", f"  type: tosca.nodes.Root\n  directives: [{directive}]\n"
    )
    project.write(ensemble_yaml(node))
    result = invoke("validate")
    assert result.exit_code == 1
    assert f"template directive {directive!r} on 'a'" in result.output
    assert "not supported" in result.output
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 1
    assert project.commits() == before and project.jobs_tsv() == []
