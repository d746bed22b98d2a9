"""After ``kill -9`` of a job, ``status`` says the job was interrupted and how to finish it,
and the stale-lock error names ``unfurl resume --force`` when tasks were in flight (a plain
resume records them failed)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ensemble_yaml, git, run_unfurl, shell_node
from tests.execution_helpers import kill9, start_unfurl, wait_for
from unfurl_lite.record.interrupted import Interrupted

WAITING = "touch marks/app.started; while [ ! -f marks/release ]; do sleep 0.05; done"


@pytest.mark.slow
def test_status_and_the_stale_lock_say_how_to_finish_a_killed_job(project):
    (project.root / ".gitignore").write_text("jobs/*.log\nmarks/\n.unfurl-lite.lock\n")
    git(project.root, "add", ".gitignore")
    (project.root / "marks").mkdir()
    app = shell_node("app", f"'{WAITING}'", operation="configure")
    app = app.replace("  interfaces:", "  requirements:\n    - dependency: db\n  interfaces:", 1)
    project.write(ensemble_yaml(shell_node("db", "echo db") + app))  # db ends before app
    job = start_unfurl(project.root, "deploy", "--approve")
    try:
        wait_for(lambda: (project.root / "marks" / "app.started").exists(), job)
        kill9(job)

        status = run_unfurl(project.root, "status")
        assert status.returncode == 0, status.stderr
        assert "was interrupted" in status.stdout
        assert "finish it with: unfurl resume --force" in status.stdout
        assert "app Standard.configure" in status.stdout
        report = json.loads(run_unfurl(project.root, "status", "--json").stdout)
        assert report["interrupted"]["resume"] == "unfurl resume --force"
        assert report["interrupted"]["inFlight"] == ["app Standard.configure"]

        refused = run_unfurl(project.root, "deploy", "--approve")
        assert refused.returncode == 1
        assert "stale lock" in refused.stderr
        assert "unfurl resume --force" in refused.stderr
        cancel = run_unfurl(project.root, "cancel")
        assert cancel.returncode == 1 and "unfurl resume --force" in cancel.stderr
    finally:
        (project.root / "marks" / "release").touch()  # lets the orphaned operation end

    resumed = run_unfurl(project.root, "resume", "--force")
    assert resumed.returncode == 0, resumed.stderr
    after = run_unfurl(project.root, "status")
    assert "interrupted" not in after.stdout
    assert json.loads(run_unfurl(project.root, "status", "--json").stdout)["interrupted"] is None
    assert project.local("app") == "ok"


def test_the_advice_is_a_plain_resume_when_nothing_was_in_flight():
    idle = Interrupted("A6BN1oKL0000", "deploy", 123, ())
    assert idle.command == "unfurl resume"
    assert idle.advice() == "finish it with: unfurl resume"
    busy = Interrupted("A6BN1oKL0000", "deploy", 123, ("app Standard.create",))
    assert busy.command == "unfurl resume --force"
    assert "records it failed" in busy.advice()
