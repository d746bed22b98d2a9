"""Work a job does per task is counted, not timed: what no task needs is not done per task.

A deploy of N ``true`` operations is mostly the operations' own start-up; everything the
job adds per task is multiplied by N. These tests count the calls that used to be made
for every task and are now made once per job, or only for the tasks that need them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, shell_node


def _counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[object]:
    calls: list[object] = []
    real = getattr(module, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_the_working_directory_is_confined_once_per_job(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unfurl_lite.run.operations import shell

    nodes = "".join(shell_node(f"n{i}", "pwd > out-$UNFURL_CHANGEID") for i in range(6))
    project.write(ensemble_yaml(nodes))
    confined = _counting(monkeypatch, shell, "confine")
    result = invoke("deploy", "--approve", "--jobs", "3")
    assert result.exit_code == 0, result.output
    assert len(confined) == 1
    outputs = sorted(project.root.glob("out-*"))
    assert len(outputs) == 6  # every task ran, in the project directory
    assert {p.read_text().strip() for p in outputs} == {str(project.root.resolve())}


def test_a_cwd_that_escapes_fails_every_task_that_names_it(
    project: Project, invoke: Invoke, tmp_path: Path
) -> None:
    """What was confined is remembered; what was refused is refused each time."""
    nodes = "".join(shell_node(f"n{i}", "exit 0", "cwd: ../..") for i in range(3))
    project.write(ensemble_yaml(nodes + shell_node("ok", "exit 0")))
    result = invoke("deploy", "--approve", "--jobs", "1", "--jobexitcode", "never")
    assert result.exit_code == 0, result.output
    failed = [line for line in result.output.splitlines()
              if "failed" in line and "escapes the project directory" in line]
    assert {name for line in failed for name in re.findall(r"\bn\d\b", line)} == {
        "n0", "n1", "n2"}
    assert project.local("ok") == "ok"


def test_no_evaluation_context_is_built_for_an_operation_with_plain_inputs(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unfurl_lite.run import requests

    plain = "".join(shell_node(f"p{i}", "exit 0") for i in range(4))
    with_done = shell_node("d", "echo hello",
                           "resultTemplate: {attributes: {said: '{{ stdout }}'}}")
    project.write(ensemble_yaml(plain + with_done))
    contexts = _counting(monkeypatch, requests, "make_context")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    per_target = [call[2] for call in contexts]  # make_context(topology, instances, target)
    # plain inputs need none; the task whose result is read needs its own
    assert [t for t in per_target if t != "d"] == []
    assert per_target.count("d") >= 2
    assert project.status()["d"]["attributes"]["said"].strip() == "hello"


SECRET_INPUT = "in-put-s3cret-value"
SECRET_PROPERTY = "pro-perty-s3cret-value"


def test_plain_inputs_still_redact_the_secrets_the_topology_declares(
    project: Project, invoke: Invoke
) -> None:
    """No evaluation context is built for plain inputs, yet what the topology declares
    sensitive (an input, a template's property) is still redacted from what the task
    prints and from its records."""
    node = shell_node("app", f"echo {SECRET_INPUT} {SECRET_PROPERTY}").replace(
        "type: tosca.nodes.Root", f"type: App\n  properties: {{token: {SECRET_PROPERTY}}}")
    head = (
        "    node_types:\n      App:\n        derived_from: tosca.nodes.Root\n"
        "        properties:\n          token: {type: string, metadata: {sensitive: true}}\n"
        "    topology_template:\n      inputs:\n"
        f"        pw: {{type: string, metadata: {{sensitive: true}}, default: {SECRET_INPUT}}}\n"
    )
    text = ensemble_yaml(node).replace("    topology_template:\n", head, 1)
    project.write(text)
    result = invoke("deploy", "--approve", "-v")
    assert result.exit_code == 0, result.output
    records = [p.read_text() for p in (project.root / "jobs").rglob("*") if p.is_file()]
    assert records and any("<<REDACTED>>" in r for r in records)
    for shown in (result.output, *records):
        assert SECRET_INPUT not in shown and SECRET_PROPERTY not in shown


def test_starting_a_command_does_not_wake_the_job_thread(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spawning thread adds a started command's pipes to the epoll the job's thread
    waits in: the job's thread wakes for output and ends, never to be told of a start
    (the wake-up pipe is for cancels, other threads' results and starts that failed)."""
    from unfurl_lite.run.executors import commands

    if not commands.available():
        pytest.skip("commands are watched from the job's thread only with pidfd_open")
    nodes = "".join(shell_node(f"n{i}", "echo out; echo err >&2") for i in range(6))
    project.write(ensemble_yaml(nodes))
    wakes = _counting(monkeypatch, commands.Commands, "wake")
    result = invoke("deploy", "--approve", "--jobs", "2")
    assert result.exit_code == 0, result.output
    assert [project.local(f"n{i}") for i in range(6)] == ["ok"] * 6
    assert wakes == []
