"""Issue 18: rendered values have Ansible's native types, as in Unfurl 1.2.0 (its
``jinja2_native``): ``"{{ stdout | trim }}"`` of ``42`` is the integer 42, a rendered list
is a list. Checked against what Unfurl 1.2.0 wrote for the same ensemble
(tests/data/unfurl120/15-native-types)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import safe_load
from unfurl_lite.expressions.expr import EvalContext, evaluate
from unfurl_lite.security.taint import Sensitive

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "15-native-types"


def theirs(step: str) -> dict:
    from ruamel.yaml import YAML  # Unfurl wrote `{eval: ::n::answer}`: only the round trip reads it

    return YAML().load((DATA / "native" / step / "ensemble.after.yaml").read_text())


def their_task(step: str) -> dict:
    (path,) = (DATA / "native" / step / "jobs").glob("job*.yaml")
    return safe_load(path.read_text())["changes"][1]


def test_result_template_attributes_have_unfurls_types(project, invoke):
    project.write((DATA / "native.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    ours = project.status()["n"]["attributes"]
    expected = theirs("1-deploy")["status"]["instances"]["n"]["attributes"]
    assert ours == expected
    assert ours["answer"] == 42 and ours["items"] == [1, "two"] and ours["flt"] == 1.5
    assert ours["padded"] == "007" and ours["boolean"] == "true" and ours["quoted"] == "'42'"
    assert ours["none"] is None and ours["text"] == "42 apples"


def test_rendered_inputs_are_recorded_with_their_type_and_same_digest(project, invoke):
    project.write((DATA / "native.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    (job_file,) = (project.root / "jobs").glob("job*.yaml")
    ours = safe_load(job_file.read_text())["changes"][1]
    unfurl = their_task("1-deploy")
    assert ours["inputs"]["num"] == unfurl["inputs"]["num"] == 42
    assert ours["inputs"]["command"] == unfurl["inputs"]["command"]
    # the digest covers the inputs the operation read (command, and num through it), in
    # Unfurl's order; `lst` and `padded`, never read, take no part: the same digest
    assert (ours["digestKeys"], ours["digestValue"]) == (
        unfurl["digestKeys"], unfurl["digestValue"]) == (
        "command,num", "a3679897672f8f4f78accba3381aa7ab4a72ee71")
    # a second deploy finds nothing to do in both tools: the digest is stable
    assert "Nothing to do." in (DATA / "native" / "2-deploy-again" / "console.txt").read_text()
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0 and len(project.commits()) == 3  # init, write, one job


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ 6 * 7 }}", 42),
        ("{{ x }}", 42),  # a string that reads as a number becomes the number
        ("{{ x | string }}", "42"),  # ... unless a string filter asks for text
        ("  {{ x }}  ", 42),  # the template is stripped first, as Unfurl does
        ("{{ x }} apples", "42 apples"),
        ("{{ x }}{{ x }}", 4242),
        ("'{{ x }}'", "'42'"),
        ("{{ '007' }}", "007"),
        ("{{ 'true' }}", "true"),
        ("{{ 'True' }}", True),
        ("{{ '-3' }}", -3),
        ("{{ None }}", None),
        ("{{ {'a': [1, 2]} }}", {"a": [1, 2]}),
        ("{{ ' 42 ' }}", " 42 "),
        ("{{ '' }}", ""),
    ],
)
def test_native_rendering_rules(template, expected):
    ctx = EvalContext(self_view={}, inputs={}, extra={"x": "42"})
    value = evaluate(template, ctx)
    assert value == expected and type(value) is type(expected)


def test_text_built_from_a_secret_stays_tainted_text():
    ctx = EvalContext(self_view={}, inputs={}, extra={"pw": Sensitive("314159265")},
                      secrets={"314159265"})
    value = evaluate("{{ pw }}", ctx)  # a number-like secret is not turned into a number
    assert isinstance(value, Sensitive) and value == "314159265"


def test_topology_outputs_are_evaluated_into_status_as_unfurl_writes_them(project, invoke):
    """Unfurl writes the topology's outputs, evaluated, into ``status.outputs`` at every job
    (before, they were accepted and never evaluated here)."""
    project.write((DATA / "outputs.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    unfurl = theirs_step("outputs", "1-deploy")["status"]["outputs"]
    assert unfurl["missing"] is None  # {eval: "::n::nosuch"}: a query that finds nothing
    assert safe_load(project.ensemble.read_text())["status"]["outputs"] == unfurl
    assert unfurl["port"] == 8080 and unfurl["sum"] == 42 and unfurl["url"] == "http://n:8080"
    assert invoke("undeploy", "--approve").exit_code == 0  # kept, as Unfurl keeps them
    after = theirs_step("outputs", "2-undeploy")["status"]["outputs"]
    assert safe_load(project.ensemble.read_text())["status"]["outputs"] == after


def test_query_expression_outputs_as_unfurl(project, invoke):
    """`{eval: '::n::answer'}`, Unfurl's query expression in its simple form."""
    project.write((DATA / "native.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    unfurl = theirs("1-deploy")["status"]["outputs"]
    assert safe_load(project.ensemble.read_text())["status"]["outputs"] == unfurl
    assert unfurl["items"] == [1, "two"] and unfurl["joined"] == "42"


def test_a_key_no_instance_has_fails_by_name():
    from unfurl_lite.errors import ExpressionError

    ctx = EvalContext(self_view={}, inputs={})
    assert evaluate({"eval": ".::url"}, ctx) is None  # the root has no url: null, as Unfurl
    with pytest.raises(ExpressionError, match=r"has no key '\.url'"):
        evaluate({"eval": ".url"}, ctx)


def test_a_secret_output_is_redacted(project, invoke, monkeypatch):
    monkeypatch.setenv("HC_OUT_SECRET", "s3cr3t-0utput-value")
    project.write(ENSEMBLE_WITH_SECRET_OUTPUT)
    assert invoke("deploy", "--approve").exit_code == 0
    outputs = safe_load(project.ensemble.read_text())["status"]["outputs"]
    assert outputs == {"token": "<<REDACTED>>", "greeting": "<<REDACTED>>",
                       "unset": None}


ENSEMBLE_WITH_SECRET_OUTPUT = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      outputs:
        token:
          value: {eval: {get_env: HC_OUT_SECRET}}
        greeting:
          value: {concat: ["hello ", {eval: {sensitive: "s3cr3t-0utput-value"}}]}
        unset:
          value: {eval: "::a::nothing_here"}
      node_templates:
        a:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure: echo configured
"""


def theirs_step(scenario: str, step: str) -> dict:
    from ruamel.yaml import YAML

    return YAML().load((DATA / scenario / step / "ensemble.after.yaml").read_text())


def test_topology_inputs_are_recorded_in_status_with_secrets_redacted(project, invoke,
                                                                    monkeypatch):
    """Unfurl writes every declared topology input's value into ``status.inputs`` (a
    sensitive one and one read from the environment in plain text); here those two are
    redacted."""
    monkeypatch.setenv("HC_IN_VAR", "env-value")
    project.write((DATA / "inputs.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    unfurl = theirs_step("inputs", "1-deploy")["status"]["inputs"]
    assert unfurl["secret"] == "hunter2hunter2" and unfurl["fromenv"] == "env-value"
    ours = safe_load(project.ensemble.read_text())["status"]["inputs"]
    assert ours == {**unfurl, "secret": "<<REDACTED>>", "fromenv": "<<REDACTED>>"}
    assert "undeclared" not in ours and ours["withdefault"] == 5


def test_a_query_key_no_instance_has_is_refused_at_validate(project, invoke):
    project.write((DATA / "native.yaml").read_text().replace("'::n::items'", "'::n::.itemz'"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "query '::n::.itemz': no instance has the key `.itemz`" in result.output
    assert "ensemble.yaml:10:" in result.output  # its line
