"""Issue 31 on a real Redis with real workers: nothing recorded that did not run, never two
runs of a task at once (across a killed controller and its resume), nothing late, version
skew that blocks nobody."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_unfurl
from tests.execution_helpers import wait_for
from tests.run.conftest import PASSWORD, free_port, kill_group, start_redis
from tests.run.test_distributed import ensemble, job_tasks, mark, node, prepare, queued

pytestmark = [pytest.mark.redis, pytest.mark.slow]

AGENT = "\n          metadata: {{agent: {}}}"
AFTER = "\n          requirements:\n            - dependency: {}"


def check_node(name: str) -> str:
    """A node whose check would find it absent, if the check ran."""
    return f"""
        {name}:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create: "true"
                delete: "true"
            Install:
              operations:
                check:
                  implementation: {{className: Shell}}
                  inputs:
                    command: "true"
                    done: {{status: absent}}
"""


def controller(project, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", *args], cwd=project.root,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def runs(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_a_check_no_worker_ran_changes_nothing_and_fails(project, broker):
    prepare(project, ensemble(check_node("db"), check_node("app")))
    deployed = run_unfurl(project.root, "deploy", "--approve")
    assert deployed.returncode == 0, deployed.stderr
    before = project.status()
    head = git(project.root, "rev-parse", "HEAD")
    checked = run_unfurl(project.root, "check", "--executor", "celery", "--broker", broker,
                         env={"UNFURL_QUEUE_TIMEOUT": "7"})
    out = checked.stdout + checked.stderr
    assert checked.returncode == 64, out
    assert {n: project.status()[n] for n in ("db", "app")} == {n: before[n] for n in ("db", "app")}
    assert {project.local("db"), project.local("app")} == {"ok"}
    assert "did not run: no live worker serves queue 'unfurl.management'" in out
    assert "2 not run)" in out and "check failed" in out
    # while it waited it said so, with the way out
    assert "for a worker on queue 'unfurl.management'" in out
    assert "start one with: unfurl worker --name management --queue unfurl.management" in out
    tasks = job_tasks(project)
    assert all(t["message"].startswith("did not run: ") for t in tasks.values())
    assert git(project.root, "rev-parse", "HEAD") != head  # the failed job is recorded
    undeployed = run_unfurl(project.root, "undeploy", "--approve")
    assert undeployed.returncode == 0, undeployed.stderr
    assert len(job_tasks(project)) == 2  # both deletes ran: nothing was taken for absent


def test_a_killed_controller_and_its_resume_never_run_a_task_twice(project, broker, workers):
    """The controller dies (kill -9) while b runs on a worker and q waits on a queue no
    worker serves yet; the resume (its executor and broker from the journal) adopts b's
    run instead of starting another, and q runs once, late worker or not."""
    slow = ("mkdir -p ran && echo start-$UNFURL_WORKER >> ran/b && touch ran/b.started && "
            "sleep 4 && echo end-$UNFURL_WORKER >> ran/b")
    prepare(project, ensemble(
        node("a", mark("a")), node("b", slow, AFTER.format("a")),
        node("c", "mkdir -p ran && echo $UNFURL_WORKER >> ran/c", AFTER.format("b")),
        node("q", "mkdir -p ran && echo $UNFURL_WORKER >> ran/q", AGENT.format("later"))))
    workers("w1", "unfurl.management")
    workers("w2", "unfurl.management")
    env = {"UNFURL_BROKER": broker}
    job = controller(project, "deploy", "--approve", "--executor", "celery", env=env)
    wait_for(lambda: (project.root / "ran" / "b.started").exists(), job, limit=60)
    wait_for(lambda: queued(broker, "later") == 1, job, limit=30)
    job.kill()
    job.communicate()
    resumed = controller(project, "resume", env=env)  # no --executor: the journal's
    try:
        workers("late", "later")
        out, err = resumed.communicate(timeout=120)
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert resumed.returncode == 0, out + err
    b_runs = runs(project.root / "ran" / "b")
    assert len(b_runs) == 2 and b_runs[0].startswith("start-") and b_runs[1].startswith("end-")
    assert runs(project.root / "ran" / "q") == ["late"]
    assert len(runs(project.root / "ran" / "c")) == 1
    assert {n: project.local(n) for n in "abcq"} == dict.fromkeys("abcq", "ok")
    tasks = job_tasks(project)
    assert tasks["b"]["worker"] == b_runs[0].removeprefix("start-")  # the adopted run
    assert tasks["q"]["worker"] == "late"


def test_no_task_runs_after_its_job_ended_when_the_broker_was_away_at_its_end(
        project, workers, tmp_path):
    """A persistent Redis goes away while one task runs and another is queued; the job
    fails (broker lost) and ends without being able to tell the broker. When Redis is
    back with the queued message, no worker runs it: the job's alive key has lapsed."""
    port = free_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    data = tmp_path / "redis-data"
    data.mkdir()
    persistent = ("--appendonly", "yes", "--appendfsync", "always", "--dir", str(data))
    server = start_redis(port, *persistent)
    try:
        long = "mkdir -p ran && touch ran/long.started && sleep 30"
        prepare(project, ensemble(node("long", long),
                                  node("queued", mark("queued"), AGENT.format("later"))))
        workers("w", "unfurl.management", url=url)
        job = controller(project, "deploy", "--approve", "--executor", "celery",
                         "--broker", url, env={"UNFURL_BROKER_TIMEOUT": "2"})
        try:
            wait_for(lambda: (project.root / "ran" / "long.started").exists(), job, limit=60)
            wait_for(lambda: queued(url, "later") == 1, job, limit=30)
            server.send_signal(signal.SIGKILL)
            server.wait()
            out, err = job.communicate(timeout=90)
        finally:
            if job.poll() is None:
                job.kill()
        assert job.returncode == 64, out + err
        server = start_redis(port, *persistent)
        assert queued(url, "later") == 1  # the message survived
        workers("late", "later", url=url)
        wait_for(lambda: queued(url, "later") == 0, limit=30)
        import redis

        client = redis.Redis.from_url(url)
        wait_for(lambda: any(b"dropped" in (client.get(k) or b"")
                             for k in client.scan_iter("celery-task-meta-*")), limit=30)
        assert not (project.root / "ran" / "queued").exists()
        assert job_tasks(project)["queued"]["message"].startswith("did not run: ")
    finally:
        server.kill()
        server.wait()


def test_a_visibility_timeout_shorter_than_lost_worker_detection_runs_twice_not_three_times(
        project, broker, workers):
    slow = ("mkdir -p ran && echo $UNFURL_WORKER >> ran/runs && touch ran/slow.started && "
            "sleep 3")
    prepare(project, ensemble(node("slow", slow)))
    quick = {"UNFURL_VISIBILITY_TIMEOUT": "1"}
    first = workers("first", "unfurl.management", concurrency=1, env=quick)
    job = controller(project, "deploy", "--approve", "--executor", "celery", "--broker", broker,
                     env=quick)
    try:
        wait_for(lambda: (project.root / "ran" / "slow.started").exists(), job, limit=60)
        kill_group(first)
        workers("second", "unfurl.management", concurrency=1, env=quick)
        out, err = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, out + err
    assert runs(project.root / "ran" / "runs") == ["first", "second"]
    assert job_tasks(project)["slow"]["result"]["runs"] == ["first", "second"]


def test_a_worker_of_another_version_on_a_queue_blocks_no_compatible_worker(
        project, broker, workers):
    prepare(project, ensemble(*(node(f"n{i}", mark(f"n{i}")) for i in range(6))))
    workers("old", "unfurl.management", env={"UNFURL_WORKER_PROTOCOL": "2"})
    workers("other", "unfurl.management", env={"UNFURL_WORKER_VERSION": "9.9.9"})
    workers("current", "unfurl.management")
    result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                        "--broker", broker)
    assert result.returncode == 0, result.stdout + result.stderr
    ran = {p.name: p.read_text().strip() for p in (project.root / "ran").iterdir()}
    assert ran == {f"n{i}": "current" for i in range(6)}
    listed = run_unfurl(project.root, "agents", "--broker", broker)
    assert listed.returncode == 0, listed.stderr
    line = listed.stdout
    assert "old (unfurl-lite" in line and "other (unfurl-lite 9.9.9, protocol 3: differs" in line
    assert "current (unfurl-lite" in line
    assert line.count("differs, refused") == 2


def test_resume_runs_where_the_job_ran_unless_told(project, broker, workers, tmp_path):
    flaky = "mkdir -p ran && test -e ran/fixed && echo $UNFURL_WORKER > ran/x"
    prepare(project, ensemble(node("x", flaky)))
    workers("w", "unfurl.management")
    env = {"UNFURL_BROKER": broker}
    failed = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery", env=env)
    assert failed.returncode == 64, failed.stdout + failed.stderr
    journal = json.loads(json.dumps(_journal(project)))
    assert journal["executor"]["executor"] == "celery"
    assert PASSWORD not in json.dumps(journal)
    (project.root / "ran" / "fixed").touch()
    resumed = run_unfurl(project.root, "resume", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (project.root / "ran" / "x").read_text().strip() == "w"

    (project.root / "ran" / "fixed").unlink()
    (project.root / "ran" / "x").unlink()
    prepare(project, ensemble(node("x", flaky), node("y", flaky.replace("/x", "/y"))))
    failed = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery", env=env)
    assert failed.returncode == 64
    (project.root / "ran" / "fixed").touch()
    local = run_unfurl(project.root, "resume", "--executor", "local", env=env)
    assert local.returncode == 0, local.stdout + local.stderr
    assert (project.root / "ran" / "y").read_text().strip() == "local"


def _journal(project) -> dict:
    from unfurl_lite.record.journal import list_journals

    return list_journals(project.root)[0].data


def test_a_worker_in_its_own_clone_on_another_machine_needs_no_shared_files(
        project, broker, workers, tmp_path):
    """docs/distributed.md, "On several machines", step by step: the worker runs in a
    clone of its own (made before the job's commits, with no remote it could fetch
    from), so each job's commit reaches it through the broker; its tasks run in that
    clone, where files they leave stay between jobs."""
    (project.root / "tool.sh").write_text("echo v1\n")
    git(project.root, "add", "tool.sh")
    prepare(project, ensemble(node("a", "true")))
    machine = tmp_path / "machine"
    machine.mkdir()
    clone = machine / "project"
    git(machine, "clone", "-q", str(project.root), str(clone))
    git(clone, "remote", "remove", "origin")  # nothing to fetch from: only the broker
    home = machine / "home"
    home.mkdir()
    workers("far", "unfurl.management", cwd=clone,
            env={"HOME": str(home), "UNFURL_WORKER_CACHE": str(machine / "cache")})

    (project.root / "tool.sh").write_text("echo v2\n")  # a commit the clone does not have
    git(project.root, "add", "tool.sh")
    command = ("mkdir -p state && sh tool.sh >> state/seen && pwd > state/where && "
               "git rev-parse HEAD > state/commit")
    prepare(project, ensemble(node("a", command)))
    head = git(project.root, "rev-parse", "HEAD").strip()
    result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                        "--broker", broker)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (clone / "state" / "where").read_text().strip() == str(clone)
    assert (clone / "state" / "commit").read_text().strip() == head
    assert (clone / "state" / "seen").read_text() == "v2\n"
    assert not (project.root / "state").exists()  # nothing ran in the controller's files

    (project.root / "tool.sh").write_text("echo v3\n")
    git(project.root, "add", "tool.sh")
    prepare(project, ensemble(node("a", command + " && cat state/seen > state/kept"),
                              node("b", "true")))
    again = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker)
    assert again.returncode == 0, again.stdout + again.stderr
    # the second job's commit came through the broker too, and the first job's file stayed
    assert (clone / "state" / "kept").read_text() == "v2\nv3\n"
    assert job_tasks(project)["b"]["worker"] == "far"


def test_a_worker_without_a_clone_prunes_its_worktrees(project, broker, workers, tmp_path):
    machine = tmp_path / "machine"
    machine.mkdir()
    cache = machine / "cache"
    workers("far", "unfurl.management", cwd=machine, options=("--project", "git"),
            env={"UNFURL_WORKER_CACHE": str(cache)})
    for i in range(6):
        prepare(project, ensemble(*(node(f"n{j}", "pwd > /dev/null") for j in range(i + 1))))
        result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                            "--broker", broker, env={"UNFURL_REPOSITORY_URL": "/nowhere"})
        assert result.returncode == 0, result.stdout + result.stderr
        assert "worker(s) far of queue 'unfurl.management' run this project in a fresh " \
            "checkout" in result.stderr
    trees = [t for t in (cache / "trees").glob("*/*") if t.is_dir()]
    assert 1 <= len(trees) <= 3


@pytest.mark.parametrize("how", ["environment", "command line", "password file"])
def test_operations_cannot_read_the_broker_password_from_their_worker(
        project, broker, workers, tmp_path, how):
    dump = ("mkdir -p ran && cat /proc/$PPID/environ /proc/$PPID/cmdline | tr '\\0' '\\n' "
            "> ran/parent && env > ran/env")
    prepare(project, ensemble(node("dump", dump)))
    bare = broker.replace(f":{PASSWORD}@", "@")
    secret = tmp_path / "secret"
    secret.write_text(PASSWORD + "\n")
    if how == "environment":
        started = workers("w", "unfurl.management")  # UNFURL_BROKER has the password
    elif how == "command line":
        started = workers("w", "unfurl.management", options=("--broker", broker), url=broker)
    else:
        started = workers("w", "unfurl.management",
                          env={"UNFURL_BROKER": bare, "UNFURL_BROKER_PASSWORD_FILE": str(secret)})
    result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                        "--broker", bare, env={"UNFURL_BROKER_PASSWORD_FILE": str(secret)})
    assert result.returncode == 0, result.stdout + result.stderr
    seen = (project.root / "ran" / "parent").read_text() + \
        (project.root / "ran" / "env").read_text()
    assert "worker" in seen  # it did read its parent's (the worker's) command line
    assert PASSWORD not in seen and str(secret) not in seen
    assert PASSWORD not in Path(f"/proc/{started.pid}/cmdline").read_text()
    assert PASSWORD not in Path(f"/proc/{started.pid}/environ").read_bytes().decode(
        errors="replace")
