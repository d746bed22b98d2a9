"""Rendering is strict: a name that does not exist fails the render with the name and the
closest existing one, and what a template reads statically is judged the same way by
validation (no false alarms, nothing missed), for many names and template shapes."""

from __future__ import annotations

import keyword
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tests.conftest import SERVICE_HEAD, ensemble_yaml, examples, suppressed
from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.context import make_context
from unfurl_lite.expressions.names import did_you_mean
from unfurl_lite.expressions.sandbox import render_template
from unfurl_lite.load import name_checks
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model.entities import Instance

NAMES = st.from_regex(r"[a-z][a-z_]{2,11}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in (
        "name", "template", "type", "attributes", "properties", "status", "state", "get",
        "keys", "items", "values", "true", "false", "none"))


def typo(name: str, data: st.DataObject) -> str:
    """A misspelling: a letter dropped, doubled, swapped with its neighbour or replaced."""
    index = data.draw(st.integers(0, len(name) - 1))
    kind = data.draw(st.sampled_from(["drop", "double", "swap", "replace"]))
    if kind == "drop":
        return name[:index] + name[index + 1:]
    if kind == "double":
        return name[:index] + name[index] * 2 + name[index + 1:]
    if kind == "swap" and index < len(name) - 1:
        return name[:index] + name[index + 1] + name[index] + name[index + 2:]
    letter = data.draw(st.sampled_from(string.ascii_lowercase))
    return name[:index] + letter + name[index + 1:]


def _project(tmp_path: Path, properties: dict[str, str], command: str) -> Path:
    props = "".join(f"\n    {k}: {v!r}" for k, v in properties.items()) or " {}"
    text = ensemble_yaml(
        f"app:\n  type: tosca.nodes.Root\n  properties:{props}\n  interfaces:\n"
        f"    Standard:\n      operations:\n        create:\n"
        f"          implementation: {{className: Shell}}\n"
        f"          inputs:\n            command: {command!r}\n")
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ensemble.yaml").write_text(text)
    return tmp_path / "ensemble.yaml"


def _render(path: Path, text: str) -> str:
    ensemble = load_ensemble(path)
    instances = {"app": Instance(name="app", template="app")}
    ctx = make_context(ensemble.topology, instances, "app")
    ctx.project_root = path.parent
    return str(render_template(text, ctx))


_SETTINGS = settings(max_examples=examples(60),
                     suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))


@_SETTINGS
@given(names=st.lists(NAMES, min_size=1, max_size=5, unique=True), data=st.data())
@example(names=["workdir"], data=None)
def test_a_misspelt_attribute_fails_with_its_name_and_the_closest(tmp_path_factory, names,
                                                                  data) -> None:
    wanted = names[0]
    wrong = typo(wanted, data) if data is not None else "wrokdir"
    assume(wrong not in names and wrong.isidentifier() and not keyword.iskeyword(wrong))
    path = _project(tmp_path_factory.mktemp("p"), {n: f"/v/{n}" for n in names}, "true")
    with pytest.raises(ExpressionError) as failed:
        _render(path, f"rm -rf {{{{ SELF.{wrong} }}}}/cache")
    message = failed.value.message
    assert f"has no attribute '{wrong}'" in message
    expected = did_you_mean(wrong, names)
    if expected:
        assert expected in message
    assert _render(path, f"{{{{ SELF.{wanted} }}}}") == f"/v/{wanted}"


#: ways a template can read a path (X): those that need it, and those that only test it
NEEDS = ["{{ X }}", "{{ X | upper }}", "{{ 'a' ~ X }}", "{% for c in [1] %}{{ X }}{% endfor %}",
         "{% if X %}y{% endif %}", "{{ X or 'd' }}", "{% set v = X %}{{ v }}",
         "{{ (X ~ '') | trim }}", "{{ X.upper() }}"]
TESTS = ["{{ X | default('d') }}", "{{ X | d('d') }}", "{% if X is defined %}{{ X }}{% endif %}",
         "{{ X is none }}", "{{ X is undefined }}", "{{ 'y' if X is defined else 'n' }}"]


@_SETTINGS
@given(declared=st.lists(NAMES, min_size=1, max_size=4, unique=True), data=st.data(),
       shape=st.sampled_from(NEEDS + TESTS), root=st.sampled_from(["SELF", "SELF.properties"]))
def test_validation_finds_exactly_what_rendering_refuses(tmp_path_factory, declared, data,
                                                         shape, root) -> None:
    """For every shape: the static check reports a name iff rendering fails on it."""
    name = data.draw(st.sampled_from(declared) | NAMES)
    text = shape.replace("X", f"{root}.{name}")
    path = _project(tmp_path_factory.mktemp("p"), {n: "v" for n in declared}, text)
    try:
        _render(path, text)
        failed = False
    except ExpressionError as exc:
        assert f"'{name}'" in exc.message
        failed = True
    found = name_checks.find(load_ensemble(path))
    assert bool(found) == failed, (text, [f.message for f in found])
    assert failed == (name not in declared and shape in NEEDS)


@pytest.mark.parametrize(("text", "named"), [
    ("{{ nosuch }}", "'nosuch' is undefined"),
    ("{{ SLEF.workdir }}", "'SLEF' is undefined; did you mean 'SELF'?"),
    ("{{ inputs.comand }}", "the operation has no input 'comand'; did you mean 'command'?"),
    ("{{ TOPOLOGY.inputs.regoin }}", "no topology input 'regoin'; did you mean 'region'?"),
    ("{{ TOPOLOGY.input.region }}", "'input'"),
    ("{{ SELF.config.prot }}", "has no attribute 'prot'; did you mean 'port'?"),
    ("{{ SELF.properties.wrokdir }}", "'wrokdir'; did you mean 'workdir'?"),
    ("{{ HOST.x }}", "has no attribute 'x'"),
])
def test_each_variable_names_what_is_missing(project, invoke, text: str, named: str) -> None:
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  properties:\n    workdir: /w\n"
        "    config: {port: 80}\n  interfaces:\n    Standard:\n      operations:\n"
        "        create:\n          implementation: {className: Shell}\n"
        f"          inputs:\n            command: echo {text} > ran.txt\n")
        .replace("      node_templates:", "      inputs:\n        region: {default: eu}\n"
                 "      node_templates:"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64, result.output
    assert named in result.output
    assert not (project.root / "ran.txt").exists()


@given(st.text(min_size=1, max_size=12), st.lists(st.text(max_size=12), max_size=8))
def test_a_suggestion_is_never_the_name_itself(word: str, choices: list[str]) -> None:
    hint = did_you_mean(word, [*choices, word])
    assert hint != f"did you mean {word!r}?"


def test_a_result_variable_outside_its_configurator_says_where_it_is_given(tmp_path) -> None:
    path = _project(tmp_path, {}, "true")
    with pytest.raises(ExpressionError) as caught:
        _render(path, "{{ outputs.stdout }}")
    message = str(caught.value)
    assert "'outputs' is undefined" in message and "did you mean 'outputs'" not in message
    assert "resultTemplate" in message and "stdout" in message


_READS_DATABASE = ("  interfaces:\n    Standard:\n      configure:\n"
                   "        implementation: Template\n        inputs:\n"
                   "          run: '{{ SELF.database.port }}'\n          done: {status: ok}\n")


def test_a_requirement_read_as_an_attribute_is_named_as_a_requirement(project, invoke) -> None:
    project.write(ensemble_yaml("db:\n  type: tosca.nodes.Root\n  properties: {port: 5}\n"
                                "app:\n  type: tosca.nodes.Root\n"
                                "  requirements:\n    - database: db\n" + _READS_DATABASE))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert "'database' is a requirement" in result.output
    assert "'.targets::database::NAME' | eval" in result.output
    assert "unconnected" not in result.output


def test_an_unconnected_requirement_read_as_an_attribute_says_so(project, invoke) -> None:
    types = ("    node_types:\n      App:\n        derived_from: tosca.nodes.Root\n"
             "        requirements:\n          - database:\n"
             "              node: tosca.nodes.Database\n              occurrences: [0, 1]\n")
    project.write(ensemble_yaml("app:\n  type: App\n" + _READS_DATABASE).replace(
        SERVICE_HEAD, SERVICE_HEAD + types, 1))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert "'database' is a requirement" in result.output
    assert "template 'app' leaves it unconnected" in result.output


_CONNECTED = """\
db:
  type: tosca.nodes.Root
  properties: {workdir: /srv}
  interfaces:
    Standard:
      create: echo db
app:
  type: tosca.nodes.Root
  requirements:
    - dependency:
        node: db
        relationship:
          type: tosca.relationships.DependsOn
          interfaces:
            Configure:
              add_target: echo {{ TARGET.wrokdir }} {{ SOURCE.nmae }} {{ TARGET.workdir }}
"""


def test_a_relationship_operations_target_and_source_are_checked_by_validate(
        project, invoke) -> None:
    """TARGET and SOURCE in a requirement's relationship operation are known before
    anything runs: validate names each misspelling at its line, as it does SELF's."""
    project.write(ensemble_yaml(_CONNECTED))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    said = [line for line in result.output.splitlines() if "ensemble.yaml:" in line]
    assert len(said) == 2, result.output
    assert "instance 'db' has no attribute 'wrokdir'; did you mean 'workdir'?" in said[0]
    assert "instance 'app' has no attribute 'nmae'; did you mean 'name'?" in said[1]
    lines = project.ensemble.read_text().splitlines()
    number = 1 + lines.index(next(t for t in lines if "add_target" in t))
    assert all(f"ensemble.yaml:{number}:" in s for s in said), said  # the operation's line
    project.write(ensemble_yaml(_CONNECTED.replace("wrokdir", "workdir").replace(
        "nmae", "name")))
    assert invoke("validate").exit_code == 0
