"""Cloudify's install_new_agents on our workers: every selected node instance that names an
agent gets a live worker on its queue (the one already there, version checked, or a new
one), reported per instance; old workers keep running."""

from __future__ import annotations

import contextlib
import json
import os
import signal

import pytest

from tests.conftest import run_in_process, run_unfurl
from tests.run.conftest import heartbeat
from tests.run.test_distributed import deploy, ensemble, mark, node, prepare

AGENTS = (node("web", mark("web"), "\n          metadata: {agent: web-1}"),
          node("web2", mark("web2"), "\n          metadata: {agent: web-1}"),
          node("api", mark("api"), "\n          properties: {agent: api-1}"),
          node("app", mark("app"), host="web"),
          node("db", mark("db")))


def _deployed(project) -> None:
    prepare(project, ensemble(*AGENTS))
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0


def _started(result_json: dict) -> list[int]:
    return [t["outputs"]["started"] for t in result_json["tasks"]
            if (t.get("outputs") or {}).get("started")]


@pytest.mark.redis
@pytest.mark.slow
def test_install_new_agents_starts_or_registers_a_worker_per_instance(project, broker, workers):
    _deployed(project)
    old = workers("api-old", "api-1")  # an agent already there: registered, left running
    result = run_unfurl(project.root, "install-new-agents", "--approve", "--broker", broker,
                        "--json", "--executor", "celery")
    data = json.loads(result.stdout or "{}")
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        tasks = {t["target"]: t for t in data["tasks"]}
        assert set(tasks) == {"web", "web2", "api"}  # app runs on web's agent, db has none
        assert tasks["web"]["outputs"]["queue"] == "web-1" and tasks["web"]["outputs"]["started"]
        assert tasks["web2"]["outputs"]["workers"] == ["web-1"]
        assert not tasks["web2"]["outputs"]["started"]  # the one web's task started serves it
        assert tasks["api"]["outputs"]["workers"] == ["api-old"]
        assert not tasks["api"]["outputs"]["started"] and old.poll() is None
        notes = {n["target"]: n["message"] for n in data["notes"]}
        assert "no agent of its own" in notes["app"] and "web-1" in notes["app"]
        assert "no agent of its own" in notes["db"]
        assert heartbeat(broker, "web-1")
        ran = deploy(project, broker, "--force", "-i", "web")
        assert ran.returncode == 0, ran.stderr
        assert (project.root / "ran" / "web").read_text().strip() == "web-1"
        again = run_unfurl(project.root, "install-new-agents", "--approve", "--broker", broker,
                           "--json", "--node-ids", "web")
        assert again.returncode == 0, again.stderr
        [task] = json.loads(again.stdout)["tasks"]
        assert task["target"] == "web" and not task["outputs"]["started"]
        assert "already served by web-1" in run_unfurl(
            project.root, "install-new-agents", "--approve", "--broker", broker,
            "-p", "node_instance_ids=[web2]").stdout
    finally:
        for pid in _started(data):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


@pytest.mark.redis
@pytest.mark.slow
def test_a_worker_of_another_version_is_left_running_and_a_new_one_started(
        project, broker, workers):
    _deployed(project)
    skewed = workers("skewed", "api-1", env={"UNFURL_WORKER_PROTOCOL": "1"})
    result = run_unfurl(project.root, "install-new-agents", "--approve", "--broker", broker,
                        "--json", "--node-ids", "api")
    data = json.loads(result.stdout or "{}")
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        [task] = data["tasks"]
        assert task["outputs"]["started"] and task["outputs"]["workers"] == ["api-1"]
        assert task["outputs"]["otherVersions"] == ["skewed"]
        assert skewed.poll() is None  # the old agent is not uninstalled
    finally:
        for pid in _started(data):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def test_install_agent_timeout_and_filters_are_checked_before_anything_runs(project):
    _deployed(project)
    bad = run_in_process(project.root, "install-new-agents", "--approve",
                         "--install-agent-timeout", "soon")
    assert bad.returncode == 1 and "install_agent_timeout" in bad.stderr
    missing = run_in_process(project.root, "install-new-agents", "--approve",
                             "-p", "node_ids=[nope]")
    assert missing.returncode == 1 and "no node template named 'nope'" in missing.stderr
    unknown = run_in_process(project.root, "install-new-agents", "-p", "stop_old_agent=true")
    assert unknown.returncode == 2 and "unknown parameter" in unknown.stderr
    plan = run_in_process(project.root, "install-new-agents", "--dryrun", "--approve",
                          "--install-agent-timeout", "5m", "--node-ids", "web,api")
    assert "Agent.install" in plan.stdout


@pytest.mark.redis
@pytest.mark.slow
def test_a_dry_run_starts_no_worker_and_says_what_it_would_do(project, broker):
    """Cloudify's dry_run simulates every task: install_new_agents --dry-run installs no
    agent, it says which queue would get a worker."""
    _deployed(project)
    result = run_unfurl(project.root, "install-new-agents", "--dry-run", "--approve",
                        "--broker", broker, "--json")
    data = json.loads(result.stdout or "{}")
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        assert {t["target"] for t in data["tasks"]} == {"web", "web2", "api"}
        assert _started(data) == []
        assert not heartbeat(broker, "web-1") and not heartbeat(broker, "api-1")
        assert not list((project.root / "jobs").glob("worker-*.log"))
    finally:
        for pid in _started(data):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
