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
        history = run_unfurl(project.root, "history", "--json")  # the same command
        assert "finish it with `unfurl resume --force`" in json.loads(
            history.stdout)[0]["summary"], history.stdout

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


def _git_lingering_after_recording(bin_dir, marks):
    """git that, after committing a killed job's record, marks it and lingers."""
    import shutil

    real = shutil.which("git")
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'{real} "$@"; code=$?\n'
        'case "$*" in *"Recording interrupted job"*) '
        f'echo $$ > {marks}/recording; mv {marks}/recording {marks}/recorded; '
        'exec sleep 30;; esac\n'
        "exit $code\n")
    script.chmod(0o755)


@pytest.mark.slow
def test_a_resume_killed_after_recording_keeps_the_advice_and_plain_resume_converges(
    project, tmp_path
):
    """kill -9 a deploy while app's configure runs, then kill ``resume --force`` right after
    its "Recording interrupted job" commit: status (and the stale lock) still say to use
    --force; a plain resume leaves app failed (it was in flight), the next plain resume runs
    it, and a third has nothing left (issue 30 item 5: failed tasks go back to pending)."""
    import os

    (project.root / ".gitignore").write_text("jobs/*.log\nmarks/\n.unfurl-lite.lock\n")
    git(project.root, "add", ".gitignore")
    marks = project.root / "marks"
    marks.mkdir()
    app = shell_node("app", f"'{WAITING}'", operation="configure")
    app = app.replace("  interfaces:", "  requirements:\n    - dependency: db\n  interfaces:", 1)
    web = shell_node("web", "echo web", operation="configure")
    web = web.replace("  interfaces:", "  requirements:\n    - dependency: app\n  interfaces:", 1)
    project.write(ensemble_yaml(shell_node("db", "echo db") + app + web))
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: (marks / "app.started").exists(), job)
    kill9(job)
    (marks / "release").touch()

    _git_lingering_after_recording(tmp_path / "bin", marks)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    import subprocess
    import sys

    from tests.conftest import ROOT
    resume = subprocess.Popen([sys.executable, "-m", "unfurl_lite", "resume", "--force"],
                              cwd=project.root, env={**env, "PYTHONPATH": str(ROOT)},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (marks / "recorded").exists(), resume)
    kill9(resume)
    os.kill(int((marks / "recorded").read_text()), 9)  # the lingering git wrapper
    assert "Recording interrupted job" in git(project.root, "log", "-1", "--format=%s")

    status = run_unfurl(project.root, "status")
    assert "finish it with: unfurl resume --force" in status.stdout, status.stdout
    assert "app Standard.configure" in status.stdout
    refused = run_unfurl(project.root, "deploy", "--approve")
    assert refused.returncode == 1 and "unfurl resume --force" in refused.stderr

    first = run_unfurl(project.root, "resume")  # plain: app was in flight, it stays failed
    assert first.returncode == 64, first.stdout + first.stderr
    assert project.local("app") != "ok"  # web, which only depends on it, may run (as Unfurl)
    second = run_unfurl(project.root, "resume")  # app is a failed task now: it runs
    assert second.returncode == 0, second.stdout + second.stderr
    assert {name: project.local(name) for name in ("db", "app", "web")} == dict.fromkeys(
        ("db", "app", "web"), "ok")
    third = run_unfurl(project.root, "resume")
    assert third.returncode == 1 and "no failed, cancelled or killed job" in third.stderr
    assert "interrupted" not in run_unfurl(project.root, "status").stdout
