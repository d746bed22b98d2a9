"""An operation's ``outputs:`` mapping (TOSCA's attribute mapping): output name -> the
attribute it sets on the instance; ``null`` maps nothing. The outputs come from a Template's
``done: {outputs: ...}`` or a resultTemplate's ``outputs:`` (Unfurl 1.2.0:
tests/data/unfurl-cases/69-template-done-outputs)."""

from __future__ import annotations

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


def test_done_outputs_set_the_mapped_attributes(project: Project) -> None:
    project.write(ensemble_yaml(producer(
        "{address: 10.0.0.5, port: 8080, unmapped: kept}",
        "{address: ip_address, port: port, unmapped: null}")))
    proc = run_in_process(project.root, *JOB)
    assert proc.returncode == 0, proc.stderr
    assert project.status()["producer"]["attributes"] == {"ip_address": "10.0.0.5",
                                                          "port": 8080}


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
