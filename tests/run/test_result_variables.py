"""The variables a ``resultTemplate`` sees, as Unfurl 1.2.0 gives them (its
ShellConfigurator and TemplateConfigurator; tests/data/unfurl-cases/28-template-run-done
and 61-shell-result-variables): a Shell command's result (``cmd``, ``args``, ``stdout``,
``stderr``, ``returncode``, ``error``, ``timeout``) and ``success``; a Template's
``done: {result: ...}``, else its ``run`` when a mapping, else ``run`` and ``outputs``.
A name that is not among them fails the task, but ``done`` still says its status."""

from __future__ import annotations

import pytest

from tests.conftest import Project, ensemble_yaml, run_in_process

JOB = ("deploy", "--approve", "--dirty=ok")


def template_node(name: str, inputs: str) -> str:
    body = "\n".join(f"          {line}" for line in inputs.strip().splitlines())
    return (f"{name}:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
            f"      configure:\n        implementation: Template\n        inputs:\n{body}\n")


def rows(project: Project) -> dict[str, dict[str, str]]:
    found = {}
    for line in project.jobs_tsv():
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "target" in fields:
            found[fields["target"].lstrip(":")] = fields
    return found


def test_a_shell_result_template_sees_the_command_and_its_success(project: Project) -> None:
    project.write(ensemble_yaml("""\
probe:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      configure:
        implementation:
          className: Shell
        inputs:
          command: "echo out; echo err >&2"
          resultTemplate:
            attributes:
              success: "{{ success }}"
              cmd: "{{ cmd }}"
              out: "{{ stdout | trim }}"
              err: "{{ stderr | trim }}"
              code: "{{ returncode }}"
              nothing: "{{ error is none and timeout is none }}"
"""))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    attributes = project.status()["probe"]["attributes"]
    assert attributes == {"success": True, "cmd": "echo out; echo err >&2", "out": "out",
                          "err": "err", "code": 0, "nothing": True}


@pytest.mark.parametrize(("inputs", "expected"), [
    # done: {result} is all it sees
    ("run: {msg: hello}\ndone: {result: {msg: bye}}\n"
     "resultTemplate: {attributes: {got: '{{ msg }}'}}", "bye"),
    # no done.result: a mapping run's keys
    ("run: {msg: hello}\nresultTemplate: {attributes: {got: '{{ msg }}'}}", "hello"),
    # a run that is not a mapping: `run`, and done's outputs as `outputs`
    ("run: plain\ndone: {outputs: {o: 1}}\n"
     "resultTemplate: {attributes: {got: '{{ run }}-{{ outputs.o }}'}}", "plain-1"),
])
def test_a_template_result_template_sees_its_result(
    project: Project, inputs: str, expected: str
) -> None:
    project.write(ensemble_yaml(template_node("cfg", inputs)))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert project.status()["cfg"]["attributes"] == {"got": expected}


def test_result_is_not_a_template_variable_and_done_still_says_the_status(
    project: Project,
) -> None:
    """Case 28: `{{ result.msg }}` is a missing variable; the task fails, the job exits 64,
    but `done: {status: ok}` holds: the instance is ok, left `configuring`."""
    project.write(ensemble_yaml(template_node("cfg", """\
run: {msg: hello}
done:
  status: ok
  result: {msg: "{{ inputs.run.msg }}"}
resultTemplate:
  attributes: {echoed: "{{ result.msg }}"}
""")))
    proc = run_in_process(project.root, *JOB, "--jobexitcode", "error")
    assert proc.returncode == 64, proc.stdout + proc.stderr
    cfg = project.status()["cfg"]
    assert cfg["readyState"] == {"local": "ok", "state": "configuring"}
    assert "attributes" not in cfg
    assert rows(project)["cfg"]["status"] == "error"


def test_a_failed_result_template_without_done_leaves_the_status_unknown(
    project: Project,
) -> None:
    project.write(ensemble_yaml(template_node("cfg", """\
run: {msg: hello}
resultTemplate:
  attributes: {echoed: "{{ nosuch }}"}
""")))
    proc = run_in_process(project.root, *JOB, "--jobexitcode", "error")
    assert proc.returncode == 64
    assert project.status()["cfg"]["readyState"]["local"] == "unknown"
