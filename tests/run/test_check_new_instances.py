"""`check` and `discover` of a topology never deployed, as Unfurl 1.2.0 records them (run
side by side in this sitting): a check that finds the instance ok leaves it `started`, one
that finds it absent leaves it `absent` (state `initial`; a discover sets no state); the
first change of an instance is always saved as `lastConfigChange`; a template without the
operation gets a `pending` instance, recorded with the others."""

from __future__ import annotations

import pytest

from tests.conftest import Project, ensemble_yaml, run_in_process


def spec(operation: str) -> str:
    return ensemble_yaml(f"""\
found:
  type: tosca.nodes.Root
  interfaces:
    Install:
      {operation}:
        implementation: Template
        inputs: {{done: {{status: ok}}}}
gone:
  type: tosca.nodes.Root
  interfaces:
    Install:
      {operation}:
        implementation: Template
        inputs: {{done: {{status: absent}}}}
without:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: echo hi
""")


@pytest.mark.parametrize("workflow", ["check", "discover"])
def test_a_never_deployed_topology_is_recorded_as_found(project: Project, workflow) -> None:
    project.write(spec(workflow))
    proc = run_in_process(project.root, workflow, "--dirty=ok")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status = project.status()
    state = {"check": ({"state": "started"}, {"state": "initial"}), "discover": ({}, {})}
    assert status["found"]["readyState"] == {"local": "ok", **state[workflow][0]}
    assert status["gone"]["readyState"] == {"local": "absent", **state[workflow][1]}
    assert status["without"]["readyState"] == {"local": "pending"}
    for name in ("found", "gone"):
        assert "lastStateChange" not in status[name]
        assert status[name]["lastConfigChange"].startswith(project.jobs_tsv()[0][:8])
    assert "lastConfigChange" not in status["without"]


def test_a_later_check_moves_the_status_and_records_no_change(project: Project) -> None:
    project.write(spec("check"))
    assert run_in_process(project.root, "check", "--dirty=ok").returncode == 0
    first = project.status()["found"]["lastConfigChange"]
    text = project.ensemble.read_text().replace("{done: {status: ok}}",
                                                "{done: {status: degraded}}", 1)
    project.write(text)
    assert run_in_process(project.root, "check", "--dirty=ok").returncode == 0
    found = project.status()["found"]
    # as Unfurl 1.2.0 (tests/data/unfurl120/28-check-findings/later-check): the status
    # moves, and no change is recorded: no lastStateChange, lastConfigChange the first's
    assert found["lastConfigChange"] == first and "lastStateChange" not in found
    assert found["readyState"]["local"] == "degraded"
    assert "previousId=\t" in project.jobs_tsv()[-1] + "\t"
