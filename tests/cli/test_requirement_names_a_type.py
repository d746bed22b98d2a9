"""A requirement a template writes with a *type* as its ``node`` (``- db: {node:
tosca.nodes.DBMS}``): Unfurl 1.2.0 connects it to a template of that type that its
``node_filter`` passes, and refuses the service template when there is none ("Could not
find target template"); with several, its solver chooses one, not in the document's
order, so the choice is refused here and left to the author. It used to be connected to
nothing."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke, Project

HEAD = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
"""
APP = """\
        app:
          type: tosca.nodes.Root
          requirements:
            - db:
                node: tosca.nodes.DBMS
{filter}          interfaces:
            Standard:
              create: echo "target={{{{ '.targets::db::.name' | eval }}}}"
"""
FILTER = """\
                node_filter:
                  properties:
                    - port: 5432
"""


def db(name: str, port: int = 3306) -> str:
    return f"        {name}:\n          type: tosca.nodes.DBMS\n          properties:\n" \
           f"            port: {port}\n"


@pytest.mark.parametrize(("dbs", "node_filter", "connected"), [
    ([db("mydb")], "", "mydb"),
    ([db("mydb"), db("otherdb", 5432), db("thirddb")], FILTER, "otherdb"),
])
def test_the_one_template_of_the_type_is_connected(
        project: Project, invoke: Invoke, dbs: list[str], node_filter: str,
        connected: str) -> None:
    project.write(HEAD + "".join(dbs) + APP.format(filter=node_filter))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    (changes,) = (project.ensemble.parent / "changes").glob("*.yaml")
    assert f'echo "target={connected}"' in changes.read_text()


def test_no_template_of_the_type_is_refused_in_unfurls_words(project: Project,
                                                            invoke: Invoke) -> None:
    project.write(HEAD + APP.format(filter=""))
    result = invoke("validate")
    assert result.exit_code == 1
    assert ('Could not find target template "tosca.nodes.DBMS" for requirement "db" in '
            'node template "app"') in result.output


def test_several_templates_of_the_type_are_refused_by_name(project: Project,
                                                          invoke: Invoke) -> None:
    project.write(HEAD + db("mydb") + db("otherdb") + APP.format(filter=""))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "names the type 'tosca.nodes.DBMS', which 2 templates are (mydb, otherdb)" \
        in result.output
    assert "`- db: mydb`" in result.output
