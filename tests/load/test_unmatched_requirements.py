"""A requirement a template writes itself that finds no template is judged as tosca-parser
judges it when Unfurl 1.2.0 loads the service template: refused in its words when the
template names the node (a type) or when neither it nor its type names one; left
unconnected, the job running, when it is optional, when only its type names the node, or
when the template has the ``default`` directive. One only its type declares is "missing"
when a job is created, as before. It used to be refused where Unfurl accepts (an optional
one, a default template) and accepted where Unfurl refuses (a type whose templates its
node_filter all fail, a capability nothing offers). Each probe was run with Unfurl 1.2.0
(``unfurl --home '' validate`` and ``deploy``, tenth sitting); ``test_unfurl_still_answers_so``
re-asks it when Unfurl 1.2.0 is installed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, git, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

HEAD = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      MyDb:
        derived_from: tosca.nodes.Root
        properties:
          port: {type: integer}
      App:
        derived_from: tosca.nodes.Root
        requirements:
          - db: TYPE_REQ
    topology_template:
      node_templates:
        mydb:
          type: MyDb
          properties: {port: 3306}
        app:
          type: App
DIRECTIVES          requirements:
            - db: OWN_REQ
          interfaces:
            Standard:
              create: echo "target={{ '.targets::db::.name' | eval }}"
"""
NOT_PASSED = "{node_filter: {properties: [{port: 5432}]}}"
NAMES_TYPE = "{node: MyDb, node_filter: {properties: [{port: 5432}]}}"
DBMS = "{node: tosca.nodes.DBMS}"
FIND = 'Could not find target template "{}" for requirement "db" in node template "app"'
NO_MATCH = 'No matching target template found for requirement "db" in node template "app"'


def ensemble(on_type: str, own: str, default: bool = False) -> str:
    return (HEAD.replace("TYPE_REQ", on_type).replace("OWN_REQ", own)
            .replace("DIRECTIVES", "          directives: [default]\n" if default else ""))


#: (the type's requirement, the template's, default directive, Unfurl 1.2.0's refusal)
PROBES = [
    # the template names the type; its filter passes none of the type's templates
    ("{node: MyDb}", NAMES_TYPE, False, FIND.format("MyDb")),
    # ... and no template is of the type
    ("{node: MyDb}", DBMS, False, FIND.format("tosca.nodes.DBMS")),
    # optional, on the template or on its type: unconnected
    ("{node: MyDb}", NAMES_TYPE.replace("}]}}", "}]}, occurrences: [0, 1]}"), False, None),
    ("{node: tosca.nodes.DBMS, occurrences: [0, 1]}", DBMS, False, None),
    # a default template: Unfurl only warns
    ("{node: MyDb}", NAMES_TYPE, True, None),
    # the node comes from its type: unconnected, the job runs (in a repository with a
    # commit: without one, Unfurl 1.2.0 refuses a type the document declares, as if the
    # template had named it; a job commits, so the committed answer is the one followed)
    ("{node: MyDb}", NOT_PASSED, False, None),
    ("{node: tosca.nodes.DBMS}", NOT_PASSED, False, None),
    # no node at all: a capability nothing offers
    ("{capability: tosca.capabilities.Node}",
     "{capability: tosca.capabilities.Endpoint.Database}", False, NO_MATCH),
    # nothing to match with
    ("{capability: tosca.capabilities.Node}", "{relationship: tosca.relationships.DependsOn,"
     " capability: null}", False, 'requirement "db" of node "app" must specify a node_filter,'
     " a node or a capability"),
]
IDS = [f"probe{i}" for i in range(len(PROBES))]


@pytest.mark.parametrize(("on_type", "own", "default", "refused"), PROBES, ids=IDS)
def test_refused_where_unfurl_refuses_it(on_type: str, own: str, default: bool,
                                         refused: str | None) -> None:
    found = [p.message for p in semantic_problems(parse(ensemble(on_type, own, default),
                                                        "e.yaml"), "e.yaml")]
    if refused is None:
        assert found == []
    else:
        assert len(found) == 1 and refused in found[0], found


def test_the_filter_names_the_templates_it_passes_none_of() -> None:
    (found,) = semantic_problems(parse(ensemble("{node: MyDb}", NAMES_TYPE), "e.yaml"),
                                 "e.yaml")
    assert ("none of the templates of that type (mydb) passes its node_filter with a "
            "capability it may connect to") in found.message
    assert found.path is not None and found.path.endswith("app.requirements[0]")


@pytest.mark.parametrize("own", [NOT_PASSED, DBMS.replace("}", ", occurrences: [0, 1]}")])
def test_an_unconnected_requirement_lets_the_job_run(project: Project, invoke: Invoke,
                                                     own: str) -> None:
    """As Unfurl 1.2.0 deploys them: the operation runs, the requirement reads None."""
    project.write(ensemble("{node: MyDb}", own))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    (changes,) = (project.ensemble.parent / "changes").glob("*.yaml")
    assert 'echo "target=None"' in changes.read_text()


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("on_type", "own", "default", "refused"), PROBES, ids=IDS)
def test_unfurl_still_answers_so(tmp_path: Path, on_type: str, own: str, default: bool,
                                 refused: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(on_type, own, default))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "ensemble.yaml")
    git(tmp_path, "commit", "-qm", "the probe")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == (1 if refused else 0), output
    if refused:
        assert refused in output, output
