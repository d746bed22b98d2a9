"""The examples are read as documentation: what each says it does, it does."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_in_process

IDENTITY = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"}


@pytest.fixture
def init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)

    def make(example: str) -> Path:
        assert run_in_process(tmp_path, "init", example, "--from", example).returncode == 0
        return tmp_path / example

    return make


def _deploy(root: Path, *args: str, env: dict[str, str] | None = None):
    result = run_in_process(root, "deploy", "--approve", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result


def test_three_tier_web_configures_its_own_file_not_apps(init):
    root = init("three-tier")
    _deploy(root)
    assert (root / "state" / "app").read_text() == "app\nport=8080\n"
    assert (root / "state" / "web").read_text() == "web\nport=8080\n"
    assert (root / "state" / "db").read_text() == "database\n"


def test_the_secrets_password_comes_from_db_password(init):
    root = init("secrets")
    password = "from-the-environment-7731"
    result = _deploy(root, env={"DB_PASSWORD": password, "DEMO_TOKEN": "tok-12345"})
    expected = hashlib.sha256(f"{password}\n".encode()).hexdigest()
    assert (root / "state" / "db.hash").read_text().split()[0] == expected
    assert (root / "state" / "token.length").read_text().strip() == str(len("tok-12345") + 1)
    recorded = subprocess.run(["grep", "-r", password, ".", "--exclude-dir=state"], cwd=root,
                              capture_output=True, text=True)
    assert recorded.stdout == ""  # not in jobs.tsv, jobs/, changes/, ensemble.yaml, .git
    assert password not in result.stdout + result.stderr
    assert password not in git(root, "log", "-p")


def test_the_secrets_demo_default_applies_without_db_password(init, monkeypatch):
    root = init("secrets")
    monkeypatch.delenv("DB_PASSWORD", raising=False)
    result = run_in_process(root, "deploy", "--approve")
    assert result.returncode == 0, result.stderr
    expected = hashlib.sha256(b"demo-password-123\n").hexdigest()
    assert (root / "state" / "db.hash").read_text().split()[0] == expected


def test_relationships_tell_the_app_about_its_database_connection(init):
    root = init("relationships")
    _deploy(root)
    assert run_in_process(root, "undeploy", "--approve").returncode == 0
    events = (root / "events.log").read_text().splitlines()
    assert events.index("app: configuring connection to db") < events.index("app configured")
    assert events.index("app: connected to db") > events.index("app configured")
    assert events.index("app: disconnected from db") < events.index("app deleted")


def test_scaled_web_runs_three_instances_on_one_host_and_heals(init):
    root = init("scaled-web")
    _deploy(root)
    assert sorted(p.name for p in (root / "state").iterdir()) == [
        "host", "web", "web_1", "web_2"]
    (root / "state" / "web_1").unlink()
    healed = run_in_process(root, "heal", "web_1", "--approve")
    assert healed.returncode == 0, healed.stderr
    assert (root / "state" / "web_1").exists()
    ran = [line for line in (healed.stdout + healed.stderr).splitlines()
           if line.endswith(" succeeded")]
    assert any("web_1: Lifecycle.heal" in line for line in ran), healed.stdout
    # the host and the other webs pass their checks: nothing is reinstalled
    assert not any("Standard.delete" in line or ("Lifecycle.heal" in line and "web_1" not in line)
                   for line in ran), healed.stdout


def test_check_discover_reports_a_volume_that_undeploy_leaves_alone(init):
    root = init("check-discover")
    _deploy(root)
    assert run_in_process(root, "discover").returncode == 0
    status = run_in_process(root, "status").stdout
    assert "data-volume" in status and "discovered" in status
    undeploy = run_in_process(root, "undeploy", "--approve")
    assert undeploy.returncode == 0
    assert "data-volume: skipped: discovered" in undeploy.stdout + undeploy.stderr
    assert not (root / "state" / "server").exists()
