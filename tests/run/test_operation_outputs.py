"""An operation's ``outputs:`` mapping (TOSCA's attribute mapping): output name -> the
attribute it sets on the instance; ``null`` maps nothing. The outputs come from a Template's
``done: {outputs: ...}`` or a resultTemplate's ``outputs:`` (Unfurl 1.2.0:
tests/data/unfurl-cases/69-template-done-outputs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Project, ensemble_yaml, examples, run_in_process

JOB = ("deploy", "--approve", "--dirty=ok")


def producer(outputs: str, mapping: str, through: str = "done") -> str:
    inputs = (f"done:\n              status: ok\n              outputs: {outputs}"
              if through == "done"
              else f"resultTemplate:\n              outputs: {outputs}")
    return f"""\
producer:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      configure:
        implementation: Template
        inputs:
          {inputs}
        outputs: {mapping}
"""


@pytest.mark.parametrize(("mapping", "expected"), [
    ("{address: ip_address, port: port, unmapped: null}",
     {"ip_address": "10.0.0.5", "port": 8080}),
    # TOSCA's list form (unfurl-cases 300): the attribute, not the list's text
    ("{address: [SELF, endpoint], port: replicas}", {"endpoint": "10.0.0.5", "replicas": 8080}),
])
def test_done_outputs_set_the_mapped_attributes(
        project: Project, mapping: str, expected: dict[str, object]) -> None:
    project.write(ensemble_yaml(producer("{address: 10.0.0.5, port: 8080, unmapped: kept}",
                                         mapping)))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stderr
    assert project.status()["producer"]["attributes"] == expected


def test_result_template_outputs_set_the_mapped_attributes(project: Project) -> None:
    project.write(ensemble_yaml(producer("{name: from-template}", "{name: label}",
                                         through="resultTemplate")))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stderr
    assert project.status()["producer"]["attributes"] == {"label": "from-template"}


def test_an_output_not_produced_sets_nothing(project: Project) -> None:
    project.write(ensemble_yaml(producer("{other: 1}", "{missing: attr}")))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stderr
    assert "attributes" not in project.status()["producer"]


NAMES = st.from_regex(r"o_[a-z0-9_]{0,8}", fullmatch=True)  # never a function's name


@settings(max_examples=examples(15))
@given(st.dictionaries(NAMES, st.one_of(NAMES, st.none()), min_size=1, max_size=4))
def test_each_mapped_output_lands_in_its_attribute(tmp_path_factory, mapping) -> None:
    import subprocess

    root = tmp_path_factory.mktemp("outputs")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / ".git" / "config").open("a").write("[user]\n\temail = t@e.st\n\tname = t\n")
    outputs = {name: f"value-of-{name}" for name in mapping}
    flow = "{" + ", ".join(f"{k}: {v}" for k, v in outputs.items()) + "}"
    wanted = "{" + ", ".join(f"{k}: {v if v else 'null'}" for k, v in mapping.items()) + "}"
    (root / "ensemble.yaml").write_text(ensemble_yaml(producer(flow, wanted)))
    proc = run_in_process(root, *JOB, "--no-commit")
    assert proc.returncode == 0, proc.stderr
    project = Project(root)
    expected = {attr: outputs[name] for name, attr in mapping.items() if attr}
    assert project.status()["producer"].get("attributes", {}) == expected


def test_done_outputs_map_even_when_the_result_template_fails(project: Project) -> None:
    """Unfurl maps ``done``'s outputs before the resultTemplate renders: a resultTemplate
    that fails fails the task, the mapped attribute is set all the same (unfurl-cases 300)."""
    project.write(ensemble_yaml("""\
reader:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      configure:
        implementation: Template
        inputs:
          run: {seen: 2}
          done:
            outputs: {level: high}
          resultTemplate:
            attributes:
              copied: "{{ outputs.level }}"
        outputs:
          level: level_attr
"""))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 64, proc.stdout
    assert project.status()["reader"]["attributes"] == {"level_attr": "high"}


def test_outputs_mapped_to_state_and_status(project: Project) -> None:
    """``.state`` sets the node state (the step's own end state then does not apply);
    ``.status`` is replaced by the status the deploy step ends with, as in Unfurl 1.2.0
    (unfurl-cases 314)."""
    project.write(ensemble_yaml(producer("{health: degraded, phase: started}",
                                         "{health: .status, phase: .state}")))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stderr
    record = project.status()["producer"]
    assert record["readyState"] == {"local": "ok", "state": "started"}
    assert "attributes" not in record


def test_a_mapping_unfurl_cannot_apply_is_refused_at_validate(project: Project) -> None:
    project.write(ensemble_yaml(producer("{ip: 1}", "{ip: [HOST, public_ip]}")))
    proc = run_in_process(project.root, "validate")
    assert proc.returncode == 1
    assert "operation output 'ip'" in proc.stderr and "not supported" in proc.stderr
    assert "Traceback" not in proc.stderr
