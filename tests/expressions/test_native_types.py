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
