"""Instances a resultTemplate creates, as Unfurl 1.2.0 (cases 153, 154): one without a
readyState goes through its own lifecycle in the same deploy job (its check, then its
install steps for the reason ``missing``), is created by its own first operation and
deleted by undeploy; one with a readyState is its creator's (a skipped reconfigure that
takes a changeId number, no record) and undeploy leaves it."""

from __future__ import annotations

import pytest

from tests.conftest import SERVICE_HEAD

HEAD = SERVICE_HEAD + """\
    node_types:
      test.Made:
        derived_from: tosca.nodes.Root
        interfaces:
          defaults:
            implementation: Template
          Install:
            check:
          Standard:
{steps}
            delete:
    topology_template:
      node_templates:
        made:
          type: test.Made
          directives: [dependent]
        installer:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure:
                implementation: Template
                inputs:
                  resultTemplate:
                    - name: managed
                      template: made
                      readyState: ok
                    - name: unmanaged
                      template: made
"""


def _rows(project) -> list[tuple[str, str, str]]:
    """(changeId's task number, target, operation) of each task row of the last job."""
    lines = project.jobs_tsv()
    job = max(i for i, line in enumerate(lines) if line.split("\t")[0].endswith("0000"))
    fields = [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
              | {"id": line.split("\t")[0]} for line in lines[job + 1:]]
    return [(f["id"][-4:], f["target"], f["operation"]) for f in fields]


@pytest.mark.parametrize(("steps", "made"), [
    (["configure"], ["check", "configure"]),
    (["create", "configure"], ["check", "create", "configure"]),
])
def test_an_unmanaged_instance_runs_its_lifecycle_and_undeploy_deletes_it(
        project, invoke, steps, made):
    project.write(HEAD.format(steps="\n".join(f"            {s}:" for s in steps)))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    rows = _rows(project)
    # 0001 the installer, 0002 the managed one's skipped reconfigure (no row)
    assert rows == [("0001", "::installer", "configure")] + [
        (f"{n:04d}", "::unmanaged", op) for n, op in enumerate(made, 3)]
    status = project.status()
    unmanaged, managed = status["unmanaged"], status["managed"]
    assert unmanaged["readyState"] == {"local": "ok", "state": "configured"}
    # as Unfurl: its configure creates it (a create that finds it unknown changes nothing)
    assert unmanaged["created"].endswith(f"{len(made) + 2:04d}")
    assert managed["created"] == "::installer" and managed["readyState"] == {"local": "ok"}
    job = project.jobs_tsv()[0]
    assert f"{len(made) + 2} tasks" in job and "1 skipped" in job

    assert invoke("deploy", "--approve").exit_code == 0  # nothing left to do for them
    assert project.status()["unmanaged"] == unmanaged

    result = invoke("undeploy", "--approve")
    assert result.exit_code == 0, result.output
    assert [row[1:] for row in _rows(project)] == [("::unmanaged", "delete")]
    status = project.status()
    assert status["unmanaged"]["readyState"] == {"local": "absent", "state": "deleted"}
    assert status["managed"]["readyState"] == {"local": "ok"}  # its creator's
