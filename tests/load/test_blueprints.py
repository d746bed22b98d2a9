"""Unfurl's deployment blueprints: the one the ensemble's environment chooses replaces and
adds node templates, as Unfurl 1.2.0 loads it (unfurl-cases 446, 463-466 record Unfurl)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Invoke, Project
from unfurl_lite.load import blueprints
from unfurl_lite.load.loader import load_ensemble

HEAD = "apiVersion: unfurl/v1alpha1\nkind: Ensemble\n"

BODY = """\
spec:
  deployment_blueprints:
    small:
      node_templates:
        web: {type: Web, properties: {size: 1}}
        cache: {type: Web, properties: {size: 2}}
  service_template:
    node_types:
      Web:
        derived_from: tosca.nodes.Root
        properties:
          size: {type: integer}
          region: {type: string, default: default-region}
    topology_template:
      node_templates:
        web: {type: Web, properties: {size: 10, region: topology-region}}
        db: {type: Web, properties: {size: 5}}
    deployment_blueprints:
      small:
        node_templates:
          web: {type: Web, properties: {size: 100}}
      large:
        node_templates:
          web: {type: Web, properties: {size: 1000}}
"""


def write(root: Path, environment: str = "", body: str = BODY) -> Path:
    path = root / "ensemble.yaml"
    path.write_text(HEAD + textwrap.dedent(environment) + body)
    return path


def test_the_chosen_blueprint_replaces_templates_whole_and_adds_its_others(
        tmp_path: Path) -> None:
    ensemble = load_ensemble(write(tmp_path, "environment:\n  deployment_blueprint: small\n"))
    templates = ensemble.topology.templates
    assert list(templates) == ["web", "cache", "db"]  # the blueprint's first, as Unfurl plans
    assert templates["web"].properties["size"] == 1  # the spec's blueprint over the inner one
    # replaced whole: the topology's region is gone, the type's default stands
    assert templates["web"].properties["region"] == "default-region"
    assert templates["db"].properties["size"] == 5


def test_an_inner_blueprint_is_chosen_when_the_spec_has_none_of_that_name(
        tmp_path: Path) -> None:
    ensemble = load_ensemble(write(tmp_path, "environment:\n  deployment_blueprint: large\n"))
    assert ensemble.topology.templates["web"].properties["size"] == 1000
    assert "cache" not in ensemble.topology.templates


def test_with_no_blueprint_chosen_the_topology_is_deployed_as_written(tmp_path: Path) -> None:
    ensemble = load_ensemble(write(tmp_path))
    assert list(ensemble.topology.templates) == ["web", "db"]
    assert ensemble.topology.templates["web"].properties["region"] == "topology-region"


def test_a_blueprint_the_ensemble_does_not_declare_is_refused_in_unfurls_words(
        project: Project, invoke: Invoke) -> None:
    write(project.root, "environment:\n  deployment_blueprint: medium\n")
    before = project.ensemble.read_text()
    result = invoke("deploy", "--approve", "--dirty=ok")
    assert result.exit_code == 1
    assert ("Can not find requested deployment blueprint: 'medium' is missing from the "
            "ensemble.") in result.output
    assert "declared: large, small" in result.output
    assert "ensemble.yaml:4:" in result.output  # the environment's line
    assert project.ensemble.read_text() == before
    assert project.jobs_tsv() == []


def test_blueprints_in_unfurls_json_export_form_are_refused_by_name(
        project: Project, invoke: Invoke) -> None:
    write(project.root, body=BODY.replace(
        "      large:\n", "      large:\n        resourceTemplates: [web]\n"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "`resourceTemplates` (Unfurl's JSON export form) is not supported" in result.output


def test_a_blueprint_that_is_not_a_mapping_is_refused(project: Project, invoke: Invoke) -> None:
    write(project.root, body=BODY.replace("    large:\n        node_templates:\n"
                                          "          web: {type: Web, properties: {size: 1000}}\n",
                                          "    large: [web]\n"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "deployment blueprint 'large' must be a mapping" in result.output


def test_the_rest_of_an_ensembles_environment_is_still_refused_by_name(
        project: Project, invoke: Invoke) -> None:
    write(project.root, "environment:\n  deployment_blueprint: small\n"
                        "  variables: {A: b}\n")
    result = invoke("validate")
    assert result.exit_code == 1
    assert "`environment.variables` in an ensemble is not supported" in result.output
    assert "deployment_blueprint" not in result.output


names = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, max_size=5)


@given(topology=names, chosen=names)
def test_applied_keeps_every_template_once_the_blueprints_first(
        topology: list[str], chosen: list[str]) -> None:
    data = {
        "environment": {"deployment_blueprint": "bp"},
        "spec": {"service_template": {
            "topology_template": {"node_templates": {n: {"type": "T", "of": "topology"}
                                                     for n in topology}},
            "deployment_blueprints": {"bp": {"node_templates": {
                n: {"type": "T", "of": "blueprint"} for n in chosen}}}}},
    }
    result = blueprints.applied(data)
    templates = result["spec"]["service_template"]["topology_template"]["node_templates"]
    if not chosen:
        assert result is data
        return
    assert list(templates) == chosen + [n for n in topology if n not in chosen]
    assert all(templates[n]["of"] == ("blueprint" if n in chosen else "topology")
               for n in templates)
    # the input is left as it was
    assert all(body["of"] == "topology" for body in data["spec"]["service_template"][
        "topology_template"]["node_templates"].values())


def test_a_key_unfurl_does_not_document_for_a_blueprint_is_refused(
        project: Project, invoke: Invoke) -> None:
    write(project.root, body=BODY.replace("      large:\n", "      large:\n        type: x\n"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "deployment blueprint 'large': the key 'type' is not supported" in result.output
