"""What validation refuses before any job (a name that cannot exist, an input nobody gives,
an undeclared get_input, a misspelt configurator, an eval function or filter that is not
here), each with its file and line; and a job whose templates read a name that cannot
exist runs nothing, as Unfurl 1.2.0 (tests/data/unfurl120/18-strict-names)."""

from __future__ import annotations

import keyword
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import ensemble_yaml, examples, safe_load, suppressed
from tests.expressions.test_strict_names import NAMES, typo
from unfurl_lite.expressions.analysis import MAPPING_METHODS
from unfurl_lite.expressions.names import VIEW_FIELDS, did_you_mean

CAPTURE = Path(__file__).resolve().parent.parent / "data" / "unfurl120" / "18-strict-names"


def _files(project) -> set[str]:
    return {p.name for p in project.root.iterdir() if p.name != ".git"}


@pytest.mark.parametrize("case", ["self-typo", "inputs-typo", "topo-typo", "variable-typo",
                                  "two-nodes"])
def test_a_name_that_does_not_exist_runs_nothing_as_in_unfurl(project, invoke, case) -> None:
    theirs = (CAPTURE / case / "1-deploy")
    assert (theirs / "exitcode.txt").read_text().strip() == "64"
    assert "ran.txt" not in (CAPTURE / case / "files.txt").read_text()
    console = (theirs / "console.txt").read_text()
    named = console.split("UnfurlTaskError(\"Template: ")[1].split('")')[0]
    missing = named.split("'")[-2]  # 'wrokdir', 'nosuch', 'regoin'
    before = _files(project)
    project.write((CAPTURE / "input" / f"{case}.yaml").read_text())
    commits = project.commits()
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64, result.output
    assert f"'{missing}'" in result.output and "nothing was run" in result.output
    assert "ensemble.yaml:" in result.output  # where, in the file
    assert _files(project) == before | {"ensemble.yaml"}  # no ran.txt, no records
    assert project.commits() == commits
    validated = invoke("validate")
    assert validated.exit_code == 1 and f"'{missing}'" in validated.output


def test_the_typo_of_the_issue_says_did_you_mean(project, invoke) -> None:
    project.write((CAPTURE / "input" / "self-typo.yaml").read_text())
    for command in (("validate",), ("deploy", "--approve")):
        output = invoke(*command).output
        assert "has no attribute 'wrokdir'; did you mean 'workdir'?" in output
        assert "ensemble.yaml:18:" in output


def test_a_resulttemplate_that_fails_to_render_fails_its_task_as_in_unfurl(project,
                                                                           invoke) -> None:
    theirs = CAPTURE / "result-typo" / "1-deploy"
    their_row = (theirs / "jobs.tsv").read_text().splitlines()[-1]
    assert "status=error" in their_row
    project.write((CAPTURE / "input" / "result-typo.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "has no attribute 'missing'" in result.output
    assert (project.root / "ran.txt").exists()  # the command ran, then its result failed
    assert "status=error" in project.jobs_tsv()[-1]
    assert project.local("app") == "unknown" == safe_load(
        (theirs / "ensemble.after.yaml").read_text())["status"]["instances"]["app"][
        "readyState"]["local"]
    assert "answer" not in project.status()["app"].get("attributes", {})
    assert "'missing'" in invoke("validate").output  # and validation says so beforehand


def test_guarded_names_render_as_in_unfurl(project, invoke) -> None:
    project.write((CAPTURE / "input" / "guarded.yaml").read_text())
    assert invoke("validate").exit_code == 0
    assert invoke("deploy", "--approve").exit_code == 0
    theirs = (CAPTURE / "guarded" / "1-deploy" / "console.txt").read_text()
    assert "none no False" in theirs
    assert (project.root / "ran.txt").read_text().strip() == "none no False"


def test_a_required_input_without_value_stops_everything(project, invoke) -> None:
    assert "MissingRequiredInputError" in (
        CAPTURE / "required-input" / "1-deploy" / "console.txt").read_text()
    project.write((CAPTURE / "input" / "required-input.yaml").read_text())
    for command in (("validate",), ("plan",), ("deploy", "--approve")):
        result = invoke(*command)
        assert result.exit_code == 1, result.output
        assert "topology input 'region' is required" in result.output
        assert "ensemble.yaml:7:" in result.output
    assert not project.jobs_tsv() and not (project.root / "ran.txt").exists()
    text = (CAPTURE / "input" / "required-input.yaml").read_text()
    for fixed in (text.replace("  type: string\n", "  type: string\n          default: eu\n"),
                  text.replace("spec:\n", "spec:\n  inputs:\n    region: eu\n", 1),
                  text.replace("  type: string\n", "  type: string\n          required: false\n")):
        project.write(fixed)
        assert invoke("validate").exit_code == 0, fixed


@pytest.mark.parametrize(("value", "named"), [
    ("{get_input: regoin}", "get_input: no topology input named 'regoin'; did you mean 'region'?"),
    ("{eval: {get_input: nothere}}", "get_input: no topology input named 'nothere'"),
    ("{eval: {secret: regio}}", "secret: no topology input named 'regio'; did you mean"),
    ("{join: [[a, b], '-']}", "TOSCA's eval function 'join' is not supported"),
    ("{eval: {local: x}}", "eval function 'local' is not supported"),
    ("{eval: {file: x.txt, contents: y}}", "file: writing a file from an expression"),
    ("{eval: '::app::.template'}", "`.template` is Unfurl's internal Python object"),
    ("{eval: '::app::.nope'}", "no instance has the key `.nope`"),
    ("{eval: {no_such_fn: 1}}", "unknown eval function 'no_such_fn'"),
    ("{eval: {get_env: HOME, bogus: 1}}", "'bogus' is not an option of the eval function"),
    ("{eval: {then: 1, else: 2}}", "'then' is an option of the eval function 'if', which is "
                                   "missing"),
    ("{eval: {then: 1, iff: $x}}", "unknown eval function 'iff'"),
    ("{eval: {sep: ',', concatt: [a, b]}}", "unknown eval function 'concatt'"),
    ("{eval: {python: 'm.py#f'}}", "would run code named by the ensemble"),
    ("{eval: '::app::x', foreach: {a: b}, bogus: 1}", "unknown expression key 'bogus'"),
    ("\"{{ '~' | expanduser }}\"", "filter 'expanduser' is not supported"),
    ("\"{{ 'x' | b64encod }}\"", "unknown filter 'b64encod'"),
    ("\"{{ 'x' is file }}\"", "Ansible's test 'file' is not supported"),
    ("\"{{ 'x' is nosuchtest }}\"", "unknown test 'nosuchtest'"),
    ("\"{{ lookup('pipe', 'id') }}\"", "lookup plugin 'pipe' is not supported"),
    ("\"{{ query('nosuch', 'x') }}\"", "unknown lookup plugin 'nosuch'"),
    ("\"{{ 'x' | ansible.builtin.expandvars }}\"", "filter 'ansible.builtin.expandvars' is"),
    ("\"{{ 'x' | to_label(seperator='-') }}\"", "'seperator' is not an option of the filter"),
    ("\"{{ 'x' | to_dns_label(_wrapper=1) }}\"", "'_wrapper' is not an option of the filter"),
    ("{eval: '0'}", "query '0' names nothing to read"),
    ("{eval: '::app', trace: break}", "`trace: break` stops Unfurl in Python's debugger"),
    ("\"{{ '::app' | eval(trace='break') }}\"", "`trace: break` stops Unfurl in Python's"),
    ("\"{{ {'eval': '::app', 'trace': 'break'} | eval }}\"", "`trace: break` stops Unfurl"),
    ("{eval: {lookup: {dict: {a: 1}}}}", "the 'dict' plugin is not supported from the"),
])
def test_every_function_and_filter_is_evaluated_or_refused_by_name(project, invoke, value,
                                                                   named) -> None:
    text = ensemble_yaml("app:\n  type: tosca.nodes.Root\n  properties:\n"
                         f"    p: {value}\n").replace(
        "      node_templates:",
        "      inputs:\n        region: {default: eu}\n      outputs:\n"
        f"        out: {{value: {value}}}\n      node_templates:")
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert named in result.output
    said = [line for line in result.output.splitlines() if "ensemble.yaml:" in line]
    lines = {line.split(":")[1] for line in said}
    assert len(lines) >= 2  # the property and the output, each at its own line
    assert len(said) == len(set(said)), said  # each problem once
    assert invoke("deploy", "--approve").exit_code == 1 and not project.jobs_tsv()


@pytest.mark.parametrize("body", [
    "{if: '{{ true }}', then: {q: yes}, else: {q: no}}",
    "{then: {q: yes}, if: '{{ true }}', else: {q: no}}",
    "{else: {q: no}, then: {q: yes}, if: '{{ true }}'}", "{concat: [a, b], sep: '-'}",
    "{sep: '-', concat: [a, b]}", "{map_value: x, not: '{{ false }}'}"])
def test_a_functions_options_are_never_taken_for_functions(project, invoke, body) -> None:
    """``then``, ``else``, ``sep``... beside their function, in any order, are its options
    (161-docs-get-started-gcloud was refused as "unknown eval function 'then'")."""
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        "        create:\n          implementation: Shell\n          inputs:\n"
        f"            v: {{eval: {body}}}\n"
        "            command: echo {{ inputs.v }} > ran.txt\n"))
    validated = invoke("validate")
    assert validated.exit_code == 0, validated.output
    assert invoke("deploy", "--approve").exit_code == 0
    assert (project.root / "ran.txt").read_text().strip() in ("yes", "a-b", "x", "True")


def test_a_name_that_is_a_function_is_a_name_where_names_are(project, invoke) -> None:
    """A property called ``token`` or an input called ``q`` is not a function call."""
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  properties:\n    token: {eval: {get_env: HOME}}\n"
        "    q: plain\n  interfaces:\n    Standard:\n      operations:\n        create:\n"
        "          implementation: {className: Shell}\n          inputs:\n"
        "            has_env: x\n            command: echo {{ inputs.has_env }} > ran.txt\n"))
    assert invoke("validate").exit_code == 0
    assert invoke("deploy", "--approve").exit_code == 0
    assert (project.root / "ran.txt").read_text().strip() == "x"


@pytest.mark.parametrize(("implementation", "named"), [
    ("Shel", "unknown configurator 'Shel'; did you mean 'Shell'?"),
    ("shell", "did you mean 'Shell'?"),
    ("Tempalte", "did you mean 'Template'?"),
    ("{className: Shel}", "did you mean 'Shell'?"),
    ("my_tool", "unknown configurator 'my_tool'"),  # a name, and the command is an input
])
def test_a_misspelt_configurator_is_refused(project, invoke, implementation, named) -> None:
    assert "ran.txt" in (CAPTURE / "shel" / "files.txt").read_text()  # Unfurl ran it
    text = (CAPTURE / "input" / "shel.yaml").read_text()
    project.write(text.replace("implementation: Shel", f"implementation: {implementation}"))
    result = invoke("validate")
    assert result.exit_code == 1 and named in result.output, result.output
    assert "ensemble.yaml:13:" in result.output
    assert invoke("deploy", "--approve").exit_code == 1
    assert not (project.root / "ran.txt").exists()


@pytest.mark.parametrize("command", ["/bin/true", "make", "./deploy.sh", "date", "echo hi"])
def test_a_command_as_implementation_still_runs(project, invoke, command) -> None:
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        f"        create:\n          implementation: {command}\n"))
    assert invoke("validate").exit_code == 0, invoke("validate").output


def test_attributes_an_operation_sets_are_known_to_later_templates(project, invoke) -> None:
    """No false alarm: what a resultTemplate sets, what the type declares (null until set,
    as Unfurl), what the status recorded, what a Python operation may set."""
    project.write("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            node_types:
              Box:
                derived_from: tosca.nodes.Compute
                attributes:
                  ip: {type: string}
            topology_template:
              node_templates:
                box:
                  type: Box
                  interfaces:
                    Standard:
                      operations:
                        create:
                          implementation: Shell
                          inputs:
                            command: echo 10.0.0.9
                            resultTemplate:
                              attributes:
                                address: "{{ stdout | trim }}"
                        configure:
                          implementation: Shell
                          inputs:
                            command: >-
                              echo {{ SELF.address }} {{ SELF.ip }} {{ SELF.public_address }}
                              > ran.txt
        """)
    assert invoke("validate").exit_code == 0, invoke("validate").output
    # Unfurl 1.2.0 renders configure before create has run: SELF.address, which nothing
    # declares, is not there yet, so the job is aborted (unfurl-cases 196)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64 and "Aborting job" in result.output, result.output
    assert not (project.root / "ran.txt").exists()
    project.write(project.ensemble.read_text().replace(
        "ip: {type: string}", "ip: {type: string}\n          address: {type: string}"))
    assert invoke("deploy", "--approve").exit_code == 0
    assert (project.root / "ran.txt").read_text().split() == ["10.0.0.9", "None", "None"]


#: a declared name read three ways: a property of the template, an input of the
#: operation, a topology input
_READS = {"SELF": "SELF.{}", "inputs": "inputs.{}", "TOPOLOGY": "TOPOLOGY.inputs.{}"}


@settings(max_examples=examples(20),
          suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))
@given(declared=st.lists(NAMES, min_size=1, max_size=4, unique=True), data=st.data(),
       read=st.sampled_from(sorted(_READS)))
def test_a_random_misspelling_is_reported_with_its_line_and_never_runs(
        tmp_path_factory, template_repo, declared, data, read) -> None:
    """Whatever the declared names and however one is misspelt, validate reports the
    misspelling at its file and line with the closest declared name, and deploy runs
    nothing and records nothing (Unfurl 1.2.0: exit 64, nothing run)."""
    import shutil

    from tests.conftest import _in_process

    wanted = data.draw(st.sampled_from(declared))
    wrong = typo(wanted, data)
    assume(wrong not in declared and wrong.isidentifier() and not keyword.iskeyword(wrong)
           and wrong not in VIEW_FIELDS and wrong not in MAPPING_METHODS
           and not wrong.startswith("_"))
    root = tmp_path_factory.mktemp("typo") / "project"
    shutil.copytree(template_repo, root, symlinks=True)
    values = "".join(f"\n    {n}: v-{n}" for n in declared)
    inputs = "".join(f"\n            {n}: v-{n}" for n in declared)
    command = "echo {{ " + _READS[read].format(wrong) + " }} > ran.txt"
    text = ensemble_yaml(
        f"app:\n  type: tosca.nodes.Root\n  properties:{values}\n  interfaces:\n"
        "    Standard:\n      operations:\n        create:\n"
        f"          implementation: Shell\n          inputs:{inputs}\n"
        f"            command: {command!r}\n").replace(
        "      node_templates:", "      inputs:" + "".join(
            f"\n        {n}: {{default: v-{n}}}" for n in declared) + "\n      node_templates:")
    (root / "ensemble.yaml").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "ran.txt" in row)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        validated = _in_process("validate")
        deployed = _in_process("deploy", "--approve")
    finally:
        os.chdir(cwd)
    assert validated.exit_code == 1, validated.output
    assert f"'{wrong}'" in validated.output and f"ensemble.yaml:{line}:" in validated.output
    close = did_you_mean(wrong, declared)
    if close is not None:
        assert close in validated.output, validated.output
    assert deployed.exit_code == 64, deployed.output
    assert f"'{wrong}'" in deployed.output and "nothing was run" in deployed.output
    assert not (root / "ran.txt").exists() and not (root / "jobs.tsv").exists()


def test_names_an_eval_gives_its_templates_are_known(project, invoke) -> None:
    """``foreach``/``select`` give ``item``, ``key`` and ``value``, ``vars`` its names, to
    the templates inside the ``eval`` (unfurl-cases 224, 225); outside it they are unknown."""
    import json

    doubled = {"eval": ".::b", "foreach": "{{ item * 2 }}"}
    templated = {"eval": {"template": "{% if flag %}{{ word }}{% endif %}"},
                 "vars": {"flag": True, "word": "yes"}}
    app = {"app": {
        "type": "tosca.nodes.Root", "properties": {"b": [1, 2]},
        "interfaces": {"Standard": {"configure": {"implementation": "Template", "inputs": {
            "doubled": doubled, "templated": templated,
            "resultTemplate": {"attributes": {"d": "{{ inputs.doubled }}",
                                              "t": "{{ inputs.templated }}"}}}}}}}}
    project.write(ensemble_yaml(json.dumps(app)))
    assert invoke("validate").exit_code == 0
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.status()["app"]["attributes"] == {"d": [2, 4], "t": "yes"}
    project.write(ensemble_yaml(json.dumps({"app": {
        "type": "tosca.nodes.Root", "interfaces": {"Standard": {"configure": {
            "implementation": "Template", "inputs": {"x": "{{ item }}"}}}}}})))
    assert "'item' is undefined" in invoke("validate").output
