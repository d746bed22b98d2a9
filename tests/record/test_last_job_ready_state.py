"""lastJob.readyState as Unfurl 1.2.0 writes it (tests/data/unfurl-cases/24-failing-create):
``local`` is the job's own status, ok when it ran to its end even with failed tasks;
``effective`` the tasks' aggregate, written when it differs. jobs.tsv's job line, history
and status show the aggregate."""

from __future__ import annotations

import pytest

from tests.conftest import Project, ensemble_yaml, run_in_process, safe_load


def node(name: str, command: str, done: str = "") -> str:
    inputs = f"\n        inputs: {{done: {done}}}" if done else ""
    return (f"{name}:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
            f"      create:\n        implementation: {command}{inputs}\n")


@pytest.mark.parametrize(("nodes", "ready"), [
    (node("a", "echo ok"), {"local": "ok"}),
    (node("a", "echo ok") + node("b", "exit 3"), {"effective": "error", "local": "ok"}),
    # as Unfurl (unfurl-cases/122): a task that left its instance degraded is itself ok
    (node("a", "'true'", "{status: degraded}"), {"local": "ok"}),
])
def test_last_job_says_its_own_status_and_its_tasks(project: Project, nodes, ready):
    project.write(ensemble_yaml(nodes))
    run_in_process(project.root, "deploy", "--approve", "--dirty=ok", "--jobexitcode", "never")
    last = safe_load(project.ensemble.read_text())["lastJob"]
    assert last["readyState"] == ready
    status = ready.get("effective", "ok")
    assert f"\tstatus={status}\t" in project.jobs_tsv()[0] + "\t"
    shown = run_in_process(project.root, "status").stdout
    assert f"deploy {status} at" in shown
    history = run_in_process(project.root, "history").stdout.splitlines()[1].split()
    assert status in history
