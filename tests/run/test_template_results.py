"""A Template operation's result as Unfurl 1.2.0's TemplateConfigurator makes it: the
resultTemplate's variables are ``done``'s ``result``, else ``run``'s mapping, else
``{run, outputs}`` (no ``result`` variable: ``{{ result }}`` fails the task, as in Unfurl,
case 118); in a ``--dryrun`` job a true ``dryrun`` input makes it dry-runnable, its mapping
replacing ``run`` (case 67)."""

from __future__ import annotations

from tests.conftest import ensemble_yaml


def _template(name: str, inputs: str) -> str:
    lines = "".join(f"\n            {line}" for line in inputs.strip().splitlines())
    return (f"{name}:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
            f"      configure:\n        implementation: Template\n        inputs:{lines}\n")


def test_the_variables_of_a_template_result(project, invoke):
    project.write(ensemble_yaml(
        _template("text", """
run: real
resultTemplate:
  attributes:
    ran: "{{ run }}"
    outs: "{{ outputs }}"
""") + _template("mapping", """
run: {size: 3, name: box}
resultTemplate:
  attributes:
    both: "{{ name }}-{{ size }}"
""") + _template("given", """
run: {size: 3}
done:
  result: {size: 4}
resultTemplate:
  attributes:
    size: "{{ size }}"
""")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    status = project.status()
    assert status["text"]["attributes"] == {"ran": "real", "outs": None}
    assert status["mapping"]["attributes"] == {"both": "box-3"}
    assert status["given"]["attributes"] == {"size": 4}


def test_result_is_no_variable_of_a_template_result(project, invoke):
    project.write(ensemble_yaml(_template("app", """
run: real
resultTemplate:
  attributes:
    ran: "{{ result }}"
""")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "'result' is undefined" in result.output
    assert project.local("app") != "ok"
    assert "attributes" not in project.status()["app"]


def test_a_dryrun_input_makes_a_template_dry_runnable(project, invoke):
    project.write(ensemble_yaml(_template("pretends", """
run: {mode: real}
dryrun: {mode: pretend}
""") + _template("cannot", """
run: {mode: real}
""")))
    head = project.commits()
    result = invoke("deploy", "--approve", "--dryrun")
    assert result.exit_code == 64
    assert "cannot Standard.configure: failed: could not run: dry run not supported" in \
        result.output
    assert "pretends Standard.configure: failed" not in result.output
    assert project.commits() == head  # a dry run records nothing
    project.write(ensemble_yaml(_template("pretends", """
run: {mode: real}
dryrun: {mode: pretend}
""")))
    assert invoke("deploy", "--approve", "--dryrun").exit_code == 0
