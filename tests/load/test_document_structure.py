"""Document structure as Unfurl 1.2.0 reads it (captured in
tests/data/unfurl120/13-structure-and-layout): the ``types:`` section, ``spec.instances``,
top-level keys such as ``dsl:``, the apiVersion it accepts, and what unfurl-lite refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "13-structure-and-layout"


def captured(scenario: str, step: str = "1-deploy") -> dict:
    return YAML(typ="safe").load((DATA / scenario / step / "ensemble.after.yaml").read_text())


def console(scenario: str, step: str = "1-deploy") -> str:
    return (DATA / scenario / step / "console.txt").read_text()


def ready(instances: dict) -> dict:
    return {name: record["readyState"] for name, record in instances.items()}


@pytest.mark.parametrize("scenario", ["api-v1", "api-bad"])
def test_only_the_api_version_unfurl_accepts_loads(project, invoke, scenario):
    assert "'unfurl/v1alpha1' was expected in apiVersion" in console(scenario)
    project.write((DATA / f"{scenario}.yaml").read_text())
    result = invoke("validate")
    assert result.exit_code == 1
    assert "apiVersion" in result.output and "unfurl/v1alpha1" in result.output
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 1
    assert project.commits() == before and project.jobs_tsv() == []


def test_types_section_declares_node_types_as_in_unfurl(project, invoke):
    assert "hello from type" in console("types")
    project.write((DATA / "types.yaml").read_text())
    assert invoke("validate").exit_code == 0
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "hello from type" in project.jobs_tsv()[1] or "hello from type" in "".join(
        p.read_text() for p in (project.root / "jobs").glob("*.yaml")
    )
    assert ready(project.status()) == ready(captured("types")["status"]["instances"])
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 0  # as Unfurl: nothing changes
    assert project.commits() == before


def test_types_section_relationship_types_are_relationship_types(project, invoke):
    project.write(
        """\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            types:
              Link:
                derived_from: tosca.relationships.DependsOn
                interfaces:
                  Configure:
                    operations:
                      add_target:
                        implementation: {className: Shell}
                        inputs: {command: echo linking}
            topology_template:
              node_templates:
                db:
                  type: tosca.nodes.Root
                app:
                  type: tosca.nodes.Root
                  requirements:
                  - dependency:
                      node: db
                      relationship: Link
        """
    )
    assert invoke("validate").exit_code == 0
    result = invoke("plan")
    assert result.exit_code == 0
    assert "add_target" in result.output


def test_spec_instances_exist_without_being_deployed(project, invoke):
    project.write((DATA / "spec-instances.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    ours, theirs = project.status(), captured("spec-instances")["status"]["instances"]
    assert ready(ours) == ready(theirs)
    assert ours["ext"]["created"] == theirs["ext"]["created"] == "::root"
    assert ours["ext"]["attributes"] == theirs["ext"]["attributes"]
    assert "lastConfigChange" not in ours["ext"]
    assert [line.split("\t")[3] for line in project.jobs_tsv()[1:]] == ["target=::a"]


def test_dsl_and_other_top_level_keys_load(project, invoke):
    assert (DATA / "dsl" / "1-deploy" / "exitcode.txt").read_text().strip() == "0"
    project.write((DATA / "dsl.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    assert ready(project.status()) == ready(captured("dsl")["status"]["instances"])


def test_inline_changes_log_is_kept_as_unfurl_keeps_it(project, invoke):
    """(tests/record/test_changes_inline.py has the rest)"""
    project.write((DATA / "inline-changes.yaml").read_text())
    assert invoke("validate").exit_code == 0
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.jobs_tsv() == []
    ours = YAML(typ="safe").load(project.ensemble.read_text())["changes"]
    theirs = captured("inline-changes")["changes"]
    assert [c["digestValue"] for c in ours] == [c["digestValue"] for c in theirs]


@pytest.mark.parametrize("section", ["discovered", "resource_templates", "deployment_blueprints"])
def test_unfurl_spec_sections_we_do_not_build_are_refused(project, invoke, section):
    text = (DATA / "dsl.yaml").read_text().replace(
        "spec:\n", f"spec:\n  {section}:\n    x:\n      type: tosca.nodes.Root\n", 1
    )
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1
    assert f"spec.{section}" in result.output and "not supported" in result.output


def test_unknown_field_in_an_implementation_is_a_validation_error(project, invoke):
    assert 'contains unknown field "timout"' in console("implementation-unknown-key")
    project.write((DATA / "implementation-unknown-key.yaml").read_text())
    result = invoke("validate")
    assert result.exit_code == 1
    assert "unknown key 'timout'" in result.output
    assert "did you mean 'timeout'?" in result.output


@pytest.mark.parametrize("key", ["invoke"])
def test_implementation_keys_we_do_not_build_are_refused_by_name(project, invoke, key):
    text = (DATA / "implementation-unknown-key.yaml").read_text().replace(
        "timout: 5", f"{key}: x"
    )
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1
    assert f"implementation key {key!r} is not supported" in result.output


@pytest.mark.parametrize(("value", "said"), [
    ("x", "preConditions must be a JSON schema (a mapping)"),
    ("{type: 12}", "preConditions is not a valid JSON schema"),
])
def test_preconditions_that_are_no_json_schema_are_refused(project, invoke, value, said):
    text = (DATA / "implementation-unknown-key.yaml").read_text().replace(
        "timout: 5", f"preConditions: {value}"
    )
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1
    assert said in result.output
