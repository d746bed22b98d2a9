"""A requirement connected to a template that has no capability it may connect to is
refused at validate, as Unfurl 1.2.0 refuses it at load (tosca-parser's
``get_matching_capabilities``): the capability it names, by name or type, and its
relationship type's ``valid_target_types``. It used to be connected: a ConnectsTo to a
template without an Endpoint, a SoftwareComponent hosted on a template without a Compute
capability (our own bundled relationships example was one). Each probe was run with
Unfurl 1.2.0 (``unfurl --home '' validate``, tenth sitting); ``test_unfurl_still_answers_so``
re-asks it when Unfurl 1.2.0 is installed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, git, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse


def ensemble(target_type: str, source_type: str, requirement: str, name: str = "db") -> str:
    return f"""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      WithEndpoint:
        derived_from: tosca.nodes.Root
        capabilities:
          api: {{type: tosca.capabilities.Endpoint.Admin}}
    topology_template:
      node_templates:
        mydb:
          type: {target_type}
          properties: {{name: x}}
        app:
          type: {source_type}
          requirements:
            - {name}: {requirement}
"""


ROOT = "tosca.nodes.Root"
NO_TYPE = ('No capability with a matching target type found on target node "mydb" for '
           'requirement "db" of node "app".')
NO_CAPABILITY = ('No matching capability "{}" found on target node "mydb" with capabilities '
                 "['feature'] for requirement \"{}\" of node \"app\".")

#: (target type, source type, the requirement, its name, Unfurl 1.2.0's words or None)
PROBES = [
    (ROOT, ROOT, "{node: mydb, relationship: tosca.relationships.ConnectsTo}", "db", NO_TYPE),
    (ROOT, ROOT, "{node: mydb, relationship: {type: tosca.relationships.ConnectsTo}}", "db",
     NO_TYPE),
    (ROOT, ROOT, "{node: mydb, capability: tosca.capabilities.Endpoint}", "db",
     NO_CAPABILITY.format("tosca.capabilities.Endpoint", "db")),
    # the capability named, then narrowed by the relationship's valid_target_types
    (ROOT, ROOT, "{node: mydb, capability: feature, relationship: "
     "tosca.relationships.ConnectsTo}", "db", NO_CAPABILITY.format("feature", "db")),
    # the type's requirement: a SoftwareComponent's host wants a Compute capability
    (ROOT, "tosca.nodes.SoftwareComponent", "mydb", "host",
     NO_CAPABILITY.format("tosca.capabilities.Compute", "host")),
    # what matches
    ("tosca.nodes.Database", ROOT, "{node: mydb, relationship: tosca.relationships.ConnectsTo}",
     "db", None),
    ("WithEndpoint", ROOT, "{node: mydb, relationship: tosca.relationships.ConnectsTo}", "db",
     None),
    ("tosca.nodes.Compute", "tosca.nodes.SoftwareComponent", "mydb", "host", None),
    (ROOT, ROOT, "{node: mydb, capability: feature}", "db", None),
    (ROOT, ROOT, "{node: mydb, relationship: tosca.relationships.DependsOn}", "db", None),
    (ROOT, "tosca.nodes.SoftwareComponent", "{node: mydb, capability: feature}", "host", None),
    # the type names the capability (Root's dependency: a Node), the template a ConnectsTo:
    # Unfurl connects to a capability the relationship allows when the target has one
    ("tosca.nodes.Database", ROOT, "{node: mydb, relationship: tosca.relationships.ConnectsTo}",
     "dependency", None),
    (ROOT, ROOT, "{node: mydb, relationship: tosca.relationships.ConnectsTo}", "dependency",
     NO_CAPABILITY.format("tosca.capabilities.Node", "dependency")),
]
IDS = [f"probe{i}" for i in range(len(PROBES))]


@pytest.mark.parametrize(("target", "source", "requirement", "name", "refused"), PROBES,
                         ids=IDS)
def test_refused_where_unfurl_refuses_it(target: str, source: str, requirement: str,
                                         name: str, refused: str | None) -> None:
    text = ensemble(target, source, requirement, name)
    found = [p.message for p in semantic_problems(parse(text, "e.yaml"), "e.yaml")]
    assert found == ([refused] if refused else [])


def test_the_refusal_is_at_the_requirement(project: Project, invoke: Invoke) -> None:
    project.write(ensemble(ROOT, ROOT, "{node: mydb, relationship: "
                           "tosca.relationships.ConnectsTo}"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1
    line = project.ensemble.read_text().splitlines().index(
        "            - db: {node: mydb, relationship: tosca.relationships.ConnectsTo}") + 1
    assert f"ensemble.yaml:{line}:" in result.output and NO_TYPE in result.output
    assert not (project.ensemble.parent / "jobs.tsv").exists()


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("target", "source", "requirement", "name", "refused"), PROBES,
                         ids=IDS)
def test_unfurl_still_answers_so(tmp_path: Path, target: str, source: str, requirement: str,
                                 name: str, refused: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(target, source, requirement, name))
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == (1 if refused else 0), output
    if refused:
        assert refused in output, output


SHORT = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Db:
        derived_from: tosca.nodes.Root
        capabilities:
          api: tosca.capabilities.Endpoint
      Child:
        derived_from: Db
    topology_template:
      node_templates:
        TEMPLATES
"""


@pytest.mark.parametrize(("templates", "refused"), [
    ("mydb: {type: Db}", True), ("child: {type: Child}", True),
    ("other: {type: tosca.nodes.Root}", False)])
def test_a_short_form_capability_is_refused_by_name_where_unfurl_cannot_load_it(
        templates: str, refused: bool) -> None:
    """Unfurl 1.2.0 fails on it with "'str' object has no attribute 'get'" once a template
    is of the type (or one derived from it); unused, it loads."""
    found = [p.message for p in semantic_problems(
        parse(SHORT.replace("TEMPLATES", templates), "e.yaml"), "e.yaml")]
    assert found == ([
        "capability 'api' of node type 'Db' in TOSCA's short form (`api: "
        "tosca.capabilities.Endpoint`) is not supported: Unfurl 1.2.0 cannot load a "
        "template of the type (\"'str' object has no attribute 'get'\")"] if refused else [])
    if refused:  # the long form loads
        long_form = SHORT.replace("api: tosca.capabilities.Endpoint",
                                  "api: {type: tosca.capabilities.Endpoint}")
        assert semantic_problems(parse(long_form.replace("TEMPLATES", templates), "e.yaml"),
                                 "e.yaml") == []


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("templates", "refused"), [
    ("child: {type: Child}", True), ("other: {type: tosca.nodes.Root}", False)])
def test_unfurl_still_fails_on_a_short_form_capability(tmp_path: Path, templates: str,
                                                       refused: bool) -> None:
    (tmp_path / "ensemble.yaml").write_text(SHORT.replace("TEMPLATES", templates))
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == (1 if refused else 0), output
    if refused:
        assert "'str' object has no attribute 'get'" in output


TYPE_NAMED = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      WithEndpoint:
        derived_from: tosca.nodes.Root
        capabilities:
          api: {type: tosca.capabilities.Endpoint.Admin}
    topology_template:
      node_templates:
        plain:
          type: tosca.nodes.Root
MYDB        app:
          type: tosca.nodes.Root
          requirements:
            - db: {node: tosca.nodes.Root, relationship: tosca.relationships.ConnectsTo}
          interfaces:
            Standard:
              create: echo "t={{ '.targets::db::.name' | eval }}"
"""


def test_a_requirement_naming_a_type_connects_to_the_template_that_offers_a_capability(
        project: Project, invoke: Invoke) -> None:
    """As Unfurl 1.2.0's solver (probed: `t=mydb`): of the templates of the type, the one
    its relationship may target; with none, refused in its words. Before, two templates of
    the type were refused as a choice not made here, and one without an Endpoint was
    connected."""
    project.write(TYPE_NAMED.replace("MYDB", "        mydb:\n          type: WithEndpoint\n"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    (changes,) = (project.ensemble.parent / "changes").glob("*.yaml")
    assert 'echo "t=mydb"' in changes.read_text()
    found = [p.message for p in semantic_problems(parse(TYPE_NAMED.replace("MYDB", ""),
                                                        "e.yaml"), "e.yaml")]
    assert len(found) == 1 and found[0].startswith(
        'Could not find target template "tosca.nodes.Root" for requirement "db" in node '
        'template "app"')
