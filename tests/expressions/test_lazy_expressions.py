"""Expressions wherever Unfurl allows them: a node property or operation input given as
``{eval: ...}``, ``{get_input: ...}``, ``{concat: ...}``, ``{get_property: ...}`` or a
``{{ }}`` template reaches the operation as its value, evaluated lazily (only when read)."""

from __future__ import annotations

import json
import textwrap

import pytest
from ruamel.yaml import YAML

from tests.conftest import Invoke, Project, ensemble_yaml

SECRET = "lazy-s3cret-77"


def spec(nodes: str, inputs: str = "") -> str:
    text = ensemble_yaml(nodes)
    if inputs:
        text = text.replace(
            "    topology_template:\n",
            "    topology_template:\n      inputs:\n" + textwrap.indent(inputs, " " * 8), 1)
    return text


def op(command: str, *inputs: str, extra: str = "") -> str:
    lines = "".join(f"\n            {line}" for line in inputs)
    return (f"  interfaces:\n    Standard:\n      operations:\n        create:\n"
            f"          implementation: {{className: Shell}}\n          inputs:\n"
            f"            command: {json.dumps(command)}{lines}\n{extra}")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZY_REGION", "eu-north")
    monkeypatch.setenv("LAZY_SECRET", SECRET)


def deploy(project: Project, invoke: Invoke, text: str) -> str:
    project.write(text)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    return (project.root / "out.txt").read_text().strip()


def test_a_property_from_get_env_reaches_the_command_as_its_value(project, invoke, env):
    text = spec("web:\n  type: tosca.nodes.Root\n  properties:\n"
                "    region: {eval: {get_env: LAZY_REGION}}\n"
                + op("echo region={{ SELF.region }} > out.txt"))
    assert deploy(project, invoke, text) == "region=eu-north"


def test_a_property_from_get_input_and_functions_over_it(project, invoke):
    """get_property gives the value as db's template writes it, evaluated where it is
    called, as Unfurl 1.2.0 (tosca-parser's get_property): its SELF is web."""
    text = spec(
        "db:\n  type: tosca.nodes.Root\n  properties:\n"
        "    port: {get_input: db_port}\n"
        "    url: {concat: ['db:', {get_property: [SELF, port]}]}\n"
        "    label: '{{ SELF.name }}@{{ SELF.port }}'\n"
        + op("true")
        + "web:\n  type: tosca.nodes.Root\n  requirements: [{dependency: db}]\n"
        + op("echo {{ SELF.properties.p }} > out.txt",
             extra="  properties:\n    port: 80\n"
                   "    p: {concat: [{get_property: [db, port]}, ' ',"
                   " {get_property: [db, url]}, ' ', {get_property: [db, label]}]}\n"),
        inputs="db_port: {type: integer, default: 5432}\n")
    assert deploy(project, invoke, text) == "5432 db:80 web@80"


def test_an_input_reads_another_inputs_value(project, invoke, env):
    text = spec("web:\n  type: tosca.nodes.Root\n" + op(
        "echo {{ inputs.greeting }} / {{ inputs.region }} / {{ inputs.port }} > out.txt",
        "greeting: 'hello {{ inputs.region }}'",
        "region: {eval: {get_env: LAZY_REGION}}",
        "port: {get_input: port}"), inputs="port: {type: integer, default: 8080}\n")
    assert deploy(project, invoke, text) == "hello eu-north / eu-north / 8080"


def test_result_template_reads_the_operations_inputs(project, invoke):
    text = spec("web:\n  type: tosca.nodes.Root\n" + op(
        "echo ran > out.txt", "where: {concat: ['port-', 80]}",
        "resultTemplate: '{attributes: {seen: \"{{ inputs.where }}\"}}'"))
    deploy(project, invoke, text)
    assert project.status()["web"]["attributes"]["seen"] == "port-80"


def test_an_expression_nobody_reads_is_never_evaluated(project, invoke):
    text = spec("web:\n  type: tosca.nodes.Root\n  properties:\n"
                "    unused: {get_property: [no_such_node, port]}\n    used: 3\n"
                + op("echo {{ SELF.used }} > out.txt"))
    assert deploy(project, invoke, text) == "3"


def test_an_expression_that_fails_when_read_fails_its_task_clearly(project, invoke):
    project.write(spec("web:\n  type: tosca.nodes.Root\n  properties:\n"
                       "    port: {get_property: [no_such_node, port]}\n"
                       + op("echo {{ SELF.port }} > out.txt")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "no node 'no_such_node'" in result.output
    assert "Traceback" not in result.output


def test_inputs_that_need_each_other_are_a_clear_error(project, invoke):
    project.write(spec("web:\n  type: tosca.nodes.Root\n" + op(
        "echo {{ inputs.a }}", "a: '{{ inputs.b }}'", "b: '{{ inputs.a }}'")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "circular reference" in result.output and "Traceback" not in result.output


def test_a_secret_property_from_get_env_stays_redacted(project, invoke, env):
    text = spec("web:\n  type: tosca.nodes.Root\n  properties:\n"
                "    token: {eval: {get_env: LAZY_SECRET}}\n"
                + op("echo token={{ SELF.token }} > out.txt; echo {{ SELF.token }}"))
    assert deploy(project, invoke, text) == f"token={SECRET}"  # the operation saw the value
    recorded = [p for p in project.root.rglob("*") if p.is_file() and ".git" not in p.parts
                and p.name != "out.txt"]
    assert all(SECRET not in p.read_text(errors="replace") for p in recorded)
    shown = invoke("show", project.jobs_tsv()[-1].split("\t")[0])
    assert SECRET not in shown.output


def test_a_python_operation_gets_evaluated_properties(project, invoke, env):
    (project.root / "lazyop.py").write_text(textwrap.dedent("""\
        def create(ctx):
            props = ctx["properties"]
            with open("out.txt", "w") as out:
                out.write(f"{props['region']} {props['port']} {props['token'] == 'lazy-s3cret-77'}")
        """))
    text = spec("web:\n  type: tosca.nodes.Root\n  properties:\n"
                "    region: {eval: {get_env: LAZY_REGION}}\n    port: {get_input: port}\n"
                "    token: {eval: {get_env: LAZY_SECRET}}\n"
                "  interfaces:\n    Standard:\n      operations:\n        create:\n"
                "          implementation: {className: 'lazyop:create'}\n",
                inputs="port: {type: integer, default: 81}\n")
    assert deploy(project, invoke, text) == "eu-north 81 True"
    jobs = "".join(p.read_text() for p in (project.root / "jobs").glob("*.yaml"))
    assert SECRET not in jobs
    assert YAML(typ="safe").load(project.ensemble.read_text())["status"]


def test_template_attributes_are_expressions_too_and_reported_ones_win(project, invoke, env):
    text = spec("web:\n  type: Web\n  attributes:\n"
                "    zone: {eval: {get_env: LAZY_REGION}}\n    url: '{{ SELF.name }}:80'\n"
                + op("echo {{ SELF.zone }} {{ SELF.url }} {{ SELF.attributes.zone }} > out.txt;"
                     " echo again",
                     "resultTemplate: '{attributes: {url: reported}}'"))
    text = text.replace("    topology_template:\n", "    node_types:\n      Web:\n"
                        "        derived_from: tosca.nodes.Root\n        attributes:\n"
                        "          url: {type: string, default: unset}\n"
                        "    topology_template:\n", 1)
    assert deploy(project, invoke, text) == "eu-north web:80 eu-north"
    old = ('command: "echo {{ SELF.zone }} {{ SELF.url }} {{ SELF.attributes.zone }} > out.txt;'
           ' echo again"')
    assert old in project.ensemble.read_text()
    project.write(project.ensemble.read_text().replace(
        old, "command: {concat: ['echo ', {get_attribute: [SELF, url]}, ' ',"
             " {get_attribute: [SELF, zone]}, ' > out.txt']}"))
    result = invoke("deploy", "--approve", "--force")
    assert result.exit_code == 0, result.output
    assert (project.root / "out.txt").read_text().strip() == "reported eu-north"
