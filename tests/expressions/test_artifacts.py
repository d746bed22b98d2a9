"""Artifacts as Unfurl 1.2.0's queries see them (its tests/examples/deploy_artifact.yaml;
unfurl-cases 413 and 428): ``.artifacts`` of a node instance, the artifacts its type and
template declare, each with its definition's fields and properties as attributes, its
``contents`` evaluated with the artifact as where a relative query starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import module_project, run_in_process
from unfurl_lite.api.jobs import query_ensemble
from unfurl_lite.errors import InputError
from unfurl_lite.load.loader import load_ensemble

ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    artifact_types:
      Flavored:
        derived_from: tosca.artifacts.Root
        properties:
          flavor: {type: string}
    node_types:
      WithArtifacts:
        derived_from: tosca.nodes.Root
        artifacts:
          inherited: {file: base.txt, intent: install}
          overridden: {file: from-type.txt}
    topology_template:
      node_templates:
        plain:
          type: tosca.nodes.Root
        app:
          type: WithArtifacts
          artifacts:
            overridden:
              file: from-template.txt
              target: HOST
              contents: "{{ '.name' | eval }} of {{ '.parent::.name' | eval }}"
            short: short.txt
            flavored:
              type: Flavored
              file: f.txt
              properties: {flavor: "{{ '.name' | eval }}-vanilla"}
          interfaces:
            Standard:
              configure: echo configured
"""


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory: pytest.TempPathFactory, template_repo: Path) -> Path:
    """Deployed once (no operation runs): queries walk the instances; they only read."""
    project = module_project(tmp_path_factory, template_repo)
    project.write(ENSEMBLE)
    proc = run_in_process(project.root, "deploy", "--approve", "--dirty=ok")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project.ensemble


@pytest.mark.parametrize(("query", "expected"), [
    ("::app::.artifacts::*::.name", ["inherited", "overridden", "short", "flavored"]),
    ("::app::.artifacts::overridden::file", "from-template.txt"),  # the template's wins
    ("::app::.artifacts::inherited::intent", "install"),  # the type's, inherited
    ("::app::.artifacts::short::file", "short.txt"),  # the short form is its file
    ("::app::.artifacts::*::[target=HOST]::.name", "overridden"),
    ("::app::.artifacts::overridden::contents", "overridden of app"),
    ("::app::.artifacts::flavored::flavor", "flavored-vanilla"),
    ("::app::.artifacts::flavored::.type", "Flavored"),
    ("::app::.artifacts::inherited::.type", "tosca.artifacts.Root"),
    ("::app::.artifacts::overridden::deploy_path", None),  # a field left out: null
    ("::app::.artifacts::overridden::.parent::.name", "app"),
    ("::plain::.artifacts::*", None),
])
def test_artifact_queries(ensemble: Path, query: str, expected: object) -> None:
    assert query_ensemble(ensemble, query) == expected


def test_a_template_reads_an_artifacts_fields_as_attributes(ensemble: Path) -> None:
    template = ("{% for a in ('::app::.artifacts::*' | eval(wantList=true)) %}"
                "{{ a.name }}={{ a.file }};{% endfor %}")
    assert query_ensemble(ensemble, template) == (
        "inherited=base.txt;overridden=from-template.txt;short=short.txt;flavored=f.txt;")


@settings(max_examples=25, deadline=None)
@given(declared=st.sets(st.sampled_from(["a", "b", "c"])),
       given_=st.sets(st.sampled_from(["a", "b", "c", "d"]), min_size=1))
def test_artifact_properties_must_be_declared_by_its_type(
    tmp_path_factory: pytest.TempPathFactory, declared: set[str], given_: set[str]
) -> None:
    """As Unfurl 1.2.0 (toscaparser's UnknownFieldError): a property the artifact type's
    lineage does not declare refuses the ensemble, named; declared ones load."""
    properties = "".join(f"\n          {name}: {{type: string}}" for name in sorted(declared))
    values = ", ".join(f"{name}: x" for name in sorted(given_))
    text = ENSEMBLE.replace("          flavor: {type: string}", properties.lstrip("\n") or "{}") \
        .replace("    artifact_types:\n      Flavored:\n", "    artifact_types:\n      Base:\n") \
        .replace("properties: {flavor: \"{{ '.name' | eval }}-vanilla\"}",
                 f"properties: {{{values}}}") \
        .replace("    node_types:\n", "      Flavored: {derived_from: Base}\n    node_types:\n", 1)
    if not declared:
        text = text.replace("        properties:\n{}\n", "")
    path = tmp_path_factory.mktemp("artifacts") / "ensemble.yaml"
    path.write_text(text)
    undeclared = sorted(given_ - declared)
    if not undeclared:
        load_ensemble(path)
        return
    with pytest.raises(InputError) as failed:
        load_ensemble(path)
    messages = "\n".join(p.message for p in failed.value.problems)
    for name in undeclared:
        assert f"property {name!r} is not declared by its type 'Flavored'" in messages
