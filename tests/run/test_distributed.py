"""Distributed execution on real Celery workers and a real redis-server (one per session).

Each test starts its workers as subprocesses (``unfurl worker``) on a fresh Redis
database and kills every one of them at teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ROOT, Project, ensemble_yaml, git, run_unfurl, shell_node
from tests.execution_helpers import start_unfurl, wait_for
from tests.run.conftest import (
    PASSWORD,
    free_port,
    kill_group,
    redis_client,
    start_redis,
)
from unfurl_lite.record.journal import list_journals

pytestmark = [pytest.mark.redis, pytest.mark.slow]

def node(name: str, command: str, extra: str = "", host: str | None = None) -> str:
    requirements = f"\n          requirements:\n            - host: {host}" if host else ""
    return f"""
        {name}:
          type: tosca.nodes.Root{extra}{requirements}
          interfaces:
            Standard:
              operations:
                create: {json.dumps(command)}
                delete: "true"
"""


def ensemble(*nodes: str) -> str:
    return ("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
            "    topology_template:\n      node_templates:" + "".join(nodes))


def mark(name: str) -> str:
    return f"mkdir -p ran && echo $UNFURL_WORKER > ran/{name}"


def prepare(project: Project, text: str) -> None:
    (project.root / ".gitignore").write_text("jobs/*.log\nran/\n")
    git(project.root, "add", ".gitignore")
    project.write(text)


def job_tasks(project: Project) -> dict[str, dict]:
    """The last job's task entries, by target instance."""
    newest = sorted((project.root / "jobs").glob("job*.yaml"))[-1]
    docs = YAML(typ="safe").load(newest.read_text())
    entries = docs["changes"]
    return {
        str(e["target"]).lstrip(":"): e for e in entries if isinstance(e, dict) and "target" in e
    }


def deploy(project: Project, broker: str, *extra: str, timeout: float = 120):
    return run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                      "--broker", broker, *extra, timeout=timeout)


def fifty_nodes() -> str:
    """Two hosts with an agent each, 24 nodes on each, and 2 nodes for the default queue."""
    nodes = [
        node("host-a", mark("host-a"), "\n          metadata: {agent: agent-a}"),
        node("host-b", mark("host-b"), "\n          properties: {agent: agent-b}"),
    ]
    nodes += [node(f"a{i}", mark(f"a{i}"), host="host-a") for i in range(23)]
    nodes += [node(f"b{i}", mark(f"b{i}"), host="host-b") for i in range(23)]
    nodes += [node(f"m{i}", mark(f"m{i}")) for i in range(2)]
    return ensemble(*nodes)


def test_fifty_nodes_run_on_the_agents_their_hosts_name(project, broker, workers):
    prepare(project, fifty_nodes())
    workers("worker-a", "agent-a", "unfurl.management")
    workers("worker-b", "agent-b")
    result = deploy(project, broker, "--jobs", "8")
    assert result.returncode == 0, result.stdout + result.stderr
    ran = {p.name: p.read_text().strip() for p in (project.root / "ran").iterdir()}
    assert len(ran) == 50
    expected = {"host-a": "worker-a", "host-b": "worker-b", "m0": "worker-a", "m1": "worker-a"}
    expected |= {f"a{i}": "worker-a" for i in range(23)}
    expected |= {f"b{i}": "worker-b" for i in range(23)}
    assert ran == expected
    tasks = job_tasks(project)
    assert {name: tasks[name]["worker"] for name in expected} == expected
    assert all(project.local(name) == "ok" for name in expected)

    listed = run_unfurl(project.root, "agents", "--broker", broker, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["queue"]: r for r in json.loads(listed.stdout)}
    assert rows["agent-a"]["workers"] == ["worker-a"]
    assert rows["agent-b"]["workers"] == ["worker-b"]
    assert rows["unfurl.management"]["nodes"] == ["m0", "m1"]
    assert len(rows["agent-a"]["nodes"]) == 24


def test_records_equal_a_local_run(project, broker, workers, tmp_path):
    text = ensemble(*(node(f"n{i}", f"echo hello {i}") for i in range(5)),
                    node("app", "echo app", "\n          metadata: {agent: web}"))
    prepare(project, text)
    workers("w1", "unfurl.management", "web")
    result = deploy(project, broker)
    assert result.returncode == 0, result.stderr
    local_root = tmp_path / "local"
    shutil.copytree(project.root, local_root)
    git(local_root, "reset", "-q", "--hard", "HEAD~1")
    local = Project(local_root)
    shutil.rmtree(local_root / "jobs", ignore_errors=True)
    ok = run_unfurl(local_root, "deploy", "--approve")
    assert ok.returncode == 0, ok.stderr
    remote_tasks, local_tasks = job_tasks(project), job_tasks(local)
    assert {t["worker"] for t in remote_tasks.values()} == {"w1"}
    assert {t["worker"] for t in local_tasks.values()} == {"local"}
    ignored = {"worker", "changeId", "startTime", "endTime", "previousId", "outputs", "result"}
    def strip(entry: dict) -> dict:
        return {k: v for k, v in entry.items() if k not in ignored}
    assert {n: strip(e) for n, e in remote_tasks.items()} == {
        n: strip(e) for n, e in local_tasks.items()
    }
    def strip_status(status: dict) -> dict:
        return {n: {k: v for k, v in i.items() if k not in ("lastStateChange", "lastConfigChange",
                                                           "created")}
                for n, i in status.items()}
    assert strip_status(project.status()) == strip_status(local.status())


def test_a_worker_killed_mid_task_is_replaced_by_another(project, broker, workers):
    slow = "mkdir -p ran && touch ran/slow.started && sleep 3 && echo $UNFURL_WORKER > ran/slow"
    prepare(project, ensemble(node("slow", slow)))
    first = workers("first", "unfurl.management", concurrency=1)
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker)
    try:
        wait_for(lambda: (project.root / "ran" / "slow.started").exists(), job, limit=60)
        kill_group(first)
        workers("second", "unfurl.management")
        out, err = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, out + err
    assert (project.root / "ran" / "slow").read_text().strip() == "second"
    assert job_tasks(project)["slow"]["worker"] == "second"
    assert job_tasks(project)["slow"]["result"]["runs"] == ["first", "second"]  # every run
    assert project.local("slow") == "ok"


def test_a_lost_worker_with_no_replacement_fails_the_task(project, broker, workers):
    slow = "mkdir -p ran && touch ran/slow.started && sleep 30"
    after = "\n          requirements:\n            - dependency: slow"
    prepare(project, ensemble(node("slow", slow), node("after", "true", after)))
    only = workers("only", "unfurl.management", concurrency=1)
    env = {"UNFURL_QUEUE_TIMEOUT": "3", "UNFURL_LOST_RETRIES": "1"}
    job = subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", "deploy", "--approve", "--executor", "celery",
         "--broker", broker], cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    try:
        wait_for(lambda: (project.root / "ran" / "slow.started").exists(), job, limit=60)
        kill_group(only)
        out, err = job.communicate(timeout=90)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 64, out + err
    tasks = job_tasks(project)
    assert "worker only was lost while running it and no live worker serves queue " \
        "'unfurl.management'" in str(tasks["slow"])
    assert tasks["slow"]["worker"] == "only"
    # a dependency only orders the two (as Unfurl): `after` is tried and no worker runs it
    assert tasks["after"]["state"] == "failed"
    assert "did not run" in tasks["after"]["message"]


def test_cancel_reaches_running_tasks_on_workers(project, broker, workers):
    long = "mkdir -p ran && touch ran/long.started && sleep 60 && touch ran/long.done"
    prepare(project, ensemble(node("long", long)))
    workers("w", "unfurl.management")
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker)
    try:
        wait_for(lambda: (project.root / "ran" / "long.started").exists(), job, limit=60)
        cancelled = run_unfurl(project.root, "cancel", "--kill")
        assert cancelled.returncode == 0, cancelled.stderr
        out, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert not (project.root / "ran" / "long.done").exists()
    assert job.returncode == 64, out + err
    entry = job_tasks(project)["long"]
    assert entry["state"] == "failed"
    assert entry["worker"] == "w"
    assert "Cancelling" in out + err or "cancel" in (out + err).lower()


def test_a_soft_cancelled_task_a_worker_receives_after_the_revoke_is_dropped(
    project, broker, workers
):
    """The revoke reaches only the workers alive when it is sent: a worker that starts
    later still receives the message, finds the task given up and drops it unrun. The job
    does not wait for it: no copy had started, so it did not run."""
    prepare(project, ensemble(node("x", "mkdir -p ran && touch ran/x")))
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker)
    try:
        wait_for(lambda: queued(broker, "unfurl.management") > 0, job, limit=60)
        cancelled = run_unfurl(project.root, "cancel")
        assert cancelled.returncode == 0, cancelled.stderr
        out, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 64, out + err
    assert "before a worker started it" in job_tasks(project)["x"]["message"]
    workers("late", "unfurl.management", concurrency=1)
    client = redis_client(broker)
    wait_for(lambda: any(b"dropped" in (client.get(k) or b"")
                         for k in client.scan_iter("celery-task-meta-*")), limit=30)
    assert not (project.root / "ran" / "x").exists()


def celery_queue(queue: str) -> str:
    """The Celery queue that carries an agent queue's tasks for this version."""
    from unfurl_lite import __version__
    from unfurl_lite.run.executors.celery.flights import celery_queue as versioned

    return versioned(queue, __version__)


def queued(broker: str, queue: str) -> int:
    """Messages waiting on a queue (Celery's redis transport keeps each queue as a list)."""
    import redis

    return int(redis.Redis.from_url(broker).llen(celery_queue(queue)))


def test_a_soft_cancel_revokes_tasks_still_waiting_on_the_queue(project, broker, workers):
    def slow(name: str) -> str:  # runs until the test opens the gate
        return (f"mkdir -p ran && touch ran/{name}.started && "
                f"while [ ! -e ran/gate ]; do sleep 0.05; done && touch ran/{name}.done")

    prepare(project, ensemble(*(node(n, slow(n)) for n in ("x", "y", "z"))))
    workers("w", "unfurl.management", concurrency=1)
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker, "--jobs", "3")
    try:
        wait_for(lambda: any((project.root / "ran").glob("*.started"))
                 if (project.root / "ran").exists() else False, job, limit=60)
        cancelled = run_unfurl(project.root, "cancel")
        assert cancelled.returncode == 0, cancelled.stderr
        wait_for(lambda: "cancelling" in list_journals(project.root)[0].state, job)
        (project.root / "ran" / "gate").touch()
        out, err = job.communicate(timeout=60)
    finally:
        (project.root / "ran").mkdir(exist_ok=True)
        (project.root / "ran" / "gate").touch()
        if job.poll() is None:
            job.kill()
    assert job.returncode == 64, out + err
    assert len(list((project.root / "ran").glob("*.started"))) == 1  # the others never ran
    assert len(list((project.root / "ran").glob("*.done"))) == 1  # the running one finished
    entries = job_tasks(project)
    waiting = [e for e in entries.values() if e["state"] == "failed"]
    assert len(waiting) == 2
    assert all("before a worker started it" in e["message"] for e in waiting)
    assert all(project.local(n) != "error" for n in ("x", "y", "z"))


def test_a_down_broker_is_a_clear_error_at_job_start(project):
    prepare(project, ensemble(node("a", "true")))
    result = deploy(project, f"redis://127.0.0.1:{free_port()}/0", timeout=30)
    assert result.returncode == 1
    assert "cannot reach the broker" in result.stderr
    assert "hint:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project.root / "jobs").exists()


def test_secrets_travel_marked_and_come_back_wrapped() -> None:
    from unfurl_lite.run.executors.celery import decode_request, encode_request
    from unfurl_lite.run.operations.base import OperationRequest
    from unfurl_lite.security.taint import Sensitive, Tainted

    request = OperationRequest("id", "Shell", "", "t", "Standard.create",
                               inputs={"command": Tainted("echo s3cret"),
                                       "env": {"PASSWORD": Sensitive("s3cret")}})
    wire = json.dumps(encode_request(request))
    assert '"__sensitive__": "s3cret"' in wire
    back = decode_request(json.loads(wire))
    assert isinstance(back.inputs["env"]["PASSWORD"], Sensitive)
    assert type(back.inputs["command"]) is Tainted
    assert back == request


def test_worker_logs_never_show_arguments(project, broker, workers):
    prepare(project, ensemble(node("a", "echo $SECRET_MARK")))
    workers("quiet", "unfurl.management", loglevel="INFO")
    result = deploy(project, broker)
    assert result.returncode == 0, result.stderr
    log = (project.root.parent / "worker-quiet.log").read_text()
    assert "echo $SECRET_MARK" not in log
    assert "received" in log  # Celery did log the task, without its arguments


def test_resume_on_workers_after_the_controller_is_killed(project, broker, workers):
    chain = "\n          requirements:\n            - dependency: {}"
    slow = "mkdir -p ran && touch ran/b.started && sleep 2 && echo $UNFURL_WORKER > ran/b"
    prepare(project, ensemble(node("a", mark("a")), node("b", slow, chain.format("a")),
                              node("c", mark("c"), chain.format("b"))))
    workers("w", "unfurl.management")
    env = {"UNFURL_EXECUTOR": "celery", "UNFURL_BROKER": broker}
    job = subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", "deploy", "--approve"], cwd=project.root,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    wait_for(lambda: (project.root / "ran" / "b.started").exists(), job, limit=60)
    job.kill()
    job.communicate()
    resumed = run_unfurl(project.root, "resume", "--force", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert {n: project.local(n) for n in "abc"} == {"a": "ok", "b": "ok", "c": "ok"}
    assert (project.root / "ran" / "c").read_text().strip() == "w"
    assert job_tasks(project)["c"]["worker"] == "w"


def test_agents_start_a_worker_for_each_queue_without_one(project, broker, workers):
    prepare(project, ensemble(node("web", mark("web"), "\n          metadata: {agent: web-1}"),
                              node("db", mark("db"))))
    workers("mgmt", "unfurl.management")
    started = run_unfurl(project.root, "agents", "--start", "--broker", broker, "--json")
    rows = {r["queue"]: r for r in json.loads(started.stdout or "[]")}
    try:
        assert started.returncode == 0, started.stderr
        assert rows["web-1"]["workers"] == ["web-1"] and "started" in rows["web-1"]
        assert rows["unfurl.management"]["workers"] == ["mgmt"]
        assert "started" not in rows["unfurl.management"]
        result = deploy(project, broker)
        assert result.returncode == 0, result.stderr
        assert (project.root / "ran" / "web").read_text().strip() == "web-1"
        assert (project.root / "ran" / "db").read_text().strip() == "mgmt"
    finally:
        for row in rows.values():
            if "started" in row:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(row["started"], signal.SIGKILL)


def test_workers_get_evaluated_properties_and_inputs(project, broker, workers):
    """Expressions are evaluated by the controller (which has the environment and the
    inputs); a worker gets values, never ``{eval: ...}`` text."""
    (project.root / "lazyop.py").write_text(
        "def create(ctx):\n"
        "    with open('py.txt', 'w') as out:\n"
        "        out.write(str(ctx['properties']['region']))\n")
    git(project.root, "add", "lazyop.py")
    text = ensemble(node("sh", "echo {{ inputs.greeting }} {{ SELF.region }} > sh.txt"))
    text = text.replace(
        'create: "echo {{ inputs.greeting }} {{ SELF.region }} > sh.txt"',
        "create:\n                  implementation: {className: Shell}\n"
        "                  inputs:\n"
        "                    command: 'echo {{ inputs.greeting }} {{ SELF.region }} > sh.txt'\n"
        "                    greeting: 'hi {{ inputs.where }}'\n"
        "                    where: {eval: {get_env: LAZY_ONLY_ON_CONTROLLER}}")
    text = text.replace("type: tosca.nodes.Root", "type: tosca.nodes.Root\n          properties:"
                        "\n            region: {eval: {get_env: LAZY_ONLY_ON_CONTROLLER}}")
    text += ("\n        py:\n          type: tosca.nodes.Root\n          properties:\n"
             "            region: {eval: {get_env: LAZY_ONLY_ON_CONTROLLER}}\n"
             "          interfaces:\n            Standard:\n              operations:\n"
             "                create: {implementation: {className: 'lazyop:create'}}\n")
    prepare(project, text)
    workers("w1", "unfurl.management")
    result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                        "--broker", broker, env={"LAZY_ONLY_ON_CONTROLLER": "north"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project.root / "sh.txt").read_text() == "hi north north\n"
    assert (project.root / "py.txt").read_text() == "north"
    assert {t["worker"] for t in job_tasks(project).values()} == {"w1"}


# -- issue 20: a distributed mode one can leave running


def everything_in(url: str) -> str:
    """Every key and value of the broker's database, as text (lists, hashes, strings)."""
    client = redis_client(url)
    parts = []
    for key in client.scan_iter():
        kind = client.type(key).decode()
        parts.append(key.decode(errors="replace"))
        if kind == "string":
            parts.append(client.get(key).decode(errors="replace"))
        elif kind == "list":
            parts += [v.decode(errors="replace") for v in client.lrange(key, 0, -1)]
        elif kind == "hash":
            parts += [v.decode(errors="replace") for v in client.hgetall(key).values()]
        elif kind == "zset":
            parts += [v.decode(errors="replace") for v in client.zrange(key, 0, -1)]
    return "\n".join(parts)


def everything_recorded(project: Project) -> str:
    texts = [p.read_text(errors="replace") for p in project.root.rglob("*")
             if p.is_file() and ".git" not in p.parts]
    texts.append(git(project.root, "log", "-p", "--all"))
    return "\n".join(texts)


def test_operations_and_messages_never_carry_the_broker_credentials(project, broker, workers):
    prepare(project, ensemble(node("dump", "mkdir -p ran && env > ran/env.txt && env")))
    workers("w", "unfurl.management")
    result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                        env={"UNFURL_BROKER": broker, "UNFURL_BACKEND": broker})
    assert result.returncode == 0, result.stdout + result.stderr
    seen = (project.root / "ran" / "env.txt").read_text()
    assert "UNFURL_WORKER=w" in seen
    assert PASSWORD not in seen and "UNFURL_BROKER" not in seen
    assert PASSWORD not in everything_recorded(project)
    assert PASSWORD not in result.stdout + result.stderr

    from unfurl_lite.run.executors.celery import CeleryExecutor
    from unfurl_lite.run.operations.base import OperationRequest

    executor = CeleryExecutor(broker=broker)
    try:
        request = OperationRequest("id", "Shell", "", "t", "Standard.create",
                                   cwd=str(project.root),
                                   env={"UNFURL_BROKER": broker, "OTHER": f"x{broker}x",
                                        "PATH": "/bin"})
        assert PASSWORD not in json.dumps(executor._payload(request))
    finally:
        executor.shutdown()


def test_failed_operations_are_celery_failures_with_no_secret_stored(project, broker, workers):
    failing = shell_node("bad", "'echo \"the secret is $PW\" >&2; exit 1'",
                         "env: {PW: {eval: {sensitive: s3cret-hunter2}}}")
    prepare(project, ensemble_yaml(failing + shell_node("good", "'echo fine'")))
    workers("w", "unfurl.management")
    result = deploy(project, broker)
    assert result.returncode == 64, result.stdout + result.stderr
    tasks = job_tasks(project)
    assert tasks["bad"]["state"] == "failed" and tasks["good"]["state"] == "succeeded"
    stored = everything_in(broker)
    assert "s3cret-hunter2" not in stored
    client = redis_client(broker)
    states = sorted(json.loads(client.get(k))["status"]
                    for k in client.scan_iter("celery-task-meta-*"))
    assert states == ["FAILURE", "SUCCESS"]
    assert "<<REDACTED>>" in stored  # the failure's message, redacted before it was stored


def test_given_up_tasks_are_revoked_and_never_run_later(project, broker, workers):
    later = "\n          metadata: {agent: later}"
    prepare(project, ensemble(node("orphan", mark("orphan"), later), node("m", mark("m"))))
    workers("w", "unfurl.management")
    env = {"UNFURL_QUEUE_TIMEOUT": "2"}
    result = run_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                        "--broker", broker, env=env)
    assert result.returncode == 64, result.stdout + result.stderr
    assert "no live worker serves queue 'later'" in str(job_tasks(project)["orphan"])
    out = result.stdout + result.stderr
    assert not re.search(r"\] orphan: .* started", out)  # never started: never said to be
    assert re.search(r"\] m: .* started", out)
    client = redis_client(broker)
    assert queued(broker, "later") == 1  # still queued when the job gave up

    workers("late", "later")
    wait_for(lambda: queued(broker, "later") == 0 and not client.hlen("unacked"), limit=30)
    wait_for(lambda: any(b"dropped" in (client.get(k) or b"")
                         for k in client.scan_iter("celery-task-meta-*")), limit=30)
    assert not (project.root / "ran" / "orphan").exists()


def test_workers_report_versions_and_the_controller_refuses_another_protocol(
        project, broker, workers):
    prepare(project, ensemble(node("a", mark("a")), node("b", mark("b"),
                                                          "\n          metadata: {agent: old}")))
    workers("current", "unfurl.management")
    workers("skewed", "old", env={"UNFURL_WORKER_PROTOCOL": "1"})
    from unfurl_lite import __version__

    listed = run_unfurl(project.root, "agents", "--broker", broker, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["queue"]: r for r in json.loads(listed.stdout)}
    assert rows["unfurl.management"]["versions"]["current"] == {"version": __version__,
                                                               "protocol": 3}
    assert rows["old"]["versions"]["skewed"]["protocol"] == 1
    text = run_unfurl(project.root, "agents", "--broker", broker)
    assert "skewed (unfurl-lite" in text.stdout and "differs, refused" in text.stdout

    result = deploy(project, broker)
    assert result.returncode == 64, result.stdout + result.stderr
    tasks = job_tasks(project)
    assert tasks["a"]["state"] == "succeeded"
    assert tasks["b"]["state"] == "failed"
    assert "refused to send to queue 'old': worker skewed runs unfurl-lite" in str(tasks["b"])
    assert "protocol 1" in str(tasks["b"])
    assert not (project.root / "ran" / "b").exists()


PYTHON_NODE = """
        {name}:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create:
                  implementation: {{className: "myops:create"}}
"""


def python_project(root: Path, label: str, nodes: list[str]) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".git").exists():
        git(root, "init", "-q")
        git(root, "config", "user.email", "t@example.com")
        git(root, "config", "user.name", "t")
    (root / "myops.py").write_text(
        "import os\n\ndef create(ctx):\n"
        f"    return {{'outputs': {{'who': {label!r}, 'cwd': os.getcwd()}}}}\n")
    (root / ".gitignore").write_text("jobs/*.log\n")
    git(root, "add", "myops.py", ".gitignore")
    project = Project(root)
    project.write(ensemble(*(PYTHON_NODE.format(name=n) for n in nodes)))
    return project


def outputs(project: Project, name: str) -> dict:
    return job_tasks(project)[name]["result"]


def test_python_operations_run_their_own_projects_code_at_the_jobs_commit(
        project, broker, workers, tmp_path):
    a = python_project(tmp_path / "a", "A1", ["first"])
    b = python_project(tmp_path / "b", "B", ["other"])
    workers("w", "unfurl.management", concurrency=1, cwd=tmp_path)
    assert deploy(a, broker).returncode == 0
    assert outputs(a, "first")["who"] == "A1"
    result = deploy(b, broker)
    assert result.returncode == 0, result.stdout + result.stderr
    assert outputs(b, "other")["who"] == "B"
    assert Path(outputs(b, "other")["cwd"]).resolve() == b.root.resolve()

    python_project(a.root, "A2", ["first", "second"])  # edit the module and add a node
    result = deploy(a, broker)
    assert result.returncode == 0, result.stdout + result.stderr
    assert outputs(a, "second")["who"] == "A2"


def test_a_worker_on_another_machine_fetches_the_project_from_git(
        project, broker, workers, tmp_path):
    (project.root / "tool.sh").write_text("echo from-the-repository\n")
    git(project.root, "add", "tool.sh")
    where = tmp_path / "where"
    where.mkdir()
    command = (f"sh tool.sh > {where}/tool; pwd > {where}/pwd; echo $HOME > {where}/home; "
               f"git rev-parse HEAD > {where}/commit")
    prepare(project, ensemble(node("a", command)) + "\n")
    machine = tmp_path / "machine"
    (machine / "home").mkdir(parents=True)
    workers("remote", "unfurl.management", cwd=machine,
            env={"HOME": str(machine / "home"), "UNFURL_WORKER_CACHE": str(machine / "cache")},
            options=("--project", "git"))
    head = git(project.root, "rev-parse", "HEAD").strip()
    result = deploy(project, broker)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (where / "tool").read_text().strip() == "from-the-repository"
    ran_in = Path((where / "pwd").read_text().strip())
    assert ran_in.is_relative_to(machine / "cache") and ran_in.name == head
    assert (where / "home").read_text().strip() == str(machine / "home")
    assert (where / "commit").read_text().strip() == head
    assert job_tasks(project)["a"]["worker"] == "remote"


def test_a_message_delivered_again_while_it_runs_does_not_start_a_second_run(
        project, broker, workers):
    """The same message taken again while its task runs (a broker's redelivery, a copy
    put back) finds the task's lease held by its own run: it is dropped, unrun."""
    # the task runs until the copy has been dropped (not for a guessed time: a second
    # worker starting under load takes longer than any fixed sleep)
    slow = ("mkdir -p ran && echo $UNFURL_WORKER >> ran/runs && touch ran/slow.started && "
            "i=0; while [ ! -e ran/release ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done")
    prepare(project, ensemble(node("slow", slow)))

    def logs() -> str:
        return "".join(log.read_text() for w in ("one", "two")
                       if (log := project.root.parent / f"worker-{w}.log").exists())

    client = redis_client(broker)
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker)
    try:
        wait_for(lambda: queued(broker, "unfurl.management") == 1, job, limit=60)
        message = client.lindex(celery_queue("unfurl.management"), 0)
        workers("one", "unfurl.management", concurrency=1, loglevel="INFO")
        wait_for(lambda: (project.root / "ran" / "slow.started").exists(), job, limit=60)
        client.lpush(celery_queue("unfurl.management"), message)  # delivered again
        workers("two", "unfurl.management", concurrency=1, loglevel="INFO")
        wait_for(lambda: "not run: the same message was delivered again" in logs(), job,
                 limit=60)
        (project.root / "ran" / "release").touch()
        out, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, out + err
    assert logs().count("received") == 2  # the copy was taken (by either worker)...
    assert "not run: the same message was delivered again" in logs()  # ...and dropped
    assert (project.root / "ran" / "runs").read_text().split() == ["one"]
    assert project.local("slow") == "ok"


def test_a_killed_workers_command_dies_with_it(project, broker, workers):
    long = "mkdir -p ran && echo $$ > ran/pid && sleep 60; touch ran/after"
    prepare(project, ensemble(node("long", long)))
    victim = workers("victim", "unfurl.management", concurrency=1)
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker)
    try:
        pid_file = project.root / "ran" / "pid"
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), job, limit=60)
        group = int(pid_file.read_text())
        kill_group(victim)

        def gone() -> bool:
            try:
                os.killpg(group, 0)
                return False
            except ProcessLookupError:
                return True

        wait_for(gone, limit=20)
        job.kill()
        job.communicate()
    finally:
        if job.poll() is None:
            job.kill()
    assert not (project.root / "ran" / "after").exists()


def test_a_broker_restart_mid_job_is_survived(project, workers, tmp_path):
    """Redis restarts (losing everything: no persistence) while one task runs, one
    finishes and one is queued with no worker yet; a dependent is sent afterwards."""
    port = free_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    server = start_redis(port)
    try:
        def started(name: str) -> str:
            return f"mkdir -p ran && touch ran/{name}.started && "

        chain = "\n          requirements:\n            - dependency: running"
        prepare(project, ensemble(
            node("running", started("running") + "sleep 5 && " + mark("running")),
            node("finishing", started("finishing") + "sleep 1 && " + mark("finishing")),
            node("queued", mark("queued"), "\n          metadata: {agent: late}"),
            node("after", mark("after"), chain),
        ))
        worker = workers("w", "unfurl.management", concurrency=4, url=url)
        job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                           "--broker", url)
        try:
            ran = project.root / "ran"
            wait_for(lambda: (ran / "running.started").exists()
                     and (ran / "finishing.started").exists(), job, limit=60)
            server.kill()
            server.wait()
            wait_for(lambda: (ran / "finishing").exists(), job, limit=10)  # result waits
            server = start_redis(port)
            workers("late", "late", url=url)
            out, err = job.communicate(timeout=150)
        finally:
            if job.poll() is None:
                job.kill()
        assert job.returncode == 0, out + err
        assert {n: project.local(n) for n in ("running", "finishing", "queued", "after")} == {
            "running": "ok", "finishing": "ok", "queued": "ok", "after": "ok"}
        assert (ran / "queued").read_text().strip() == "late"
        assert worker.poll() is None  # the worker survived the restart
    finally:
        server.kill()
        server.wait()


def test_tasks_name_the_repository_without_its_password(project, monkeypatch) -> None:
    from unfurl_lite.run.executors.checkout import source_of

    git(project.root, "remote", "add", "origin", "https://deploy:tok3n@git.example.com/p.git")
    project.write(ensemble(node("a", "true")))
    source = source_of(str(project.root))
    assert source["repo"] == "https://deploy@git.example.com/p.git"
    assert source["commit"] == git(project.root, "rev-parse", "HEAD").strip()
    monkeypatch.setenv("UNFURL_REPOSITORY_URL", "ssh://git@example.com:2222/p.git")
    assert source_of(str(project.root))["repo"] == "ssh://git@example.com:2222/p.git"


def test_a_broker_that_stays_away_ends_the_job_in_bounded_time(project, workers):
    port = free_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    server = start_redis(port)
    try:
        long = "mkdir -p ran && touch ran/long.started && sleep 30"
        after = "\n          requirements:\n            - dependency: long"
        prepare(project, ensemble(node("long", long), node("after", mark("after"), after)))
        workers("w", "unfurl.management", url=url)
        job = subprocess.Popen(
            [sys.executable, "-m", "unfurl_lite", "deploy", "--approve", "--executor", "celery",
             "--broker", url], cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "UNFURL_BROKER_TIMEOUT": "2"},
        )
        try:
            wait_for(lambda: (project.root / "ran" / "long.started").exists(), job, limit=60)
            server.kill()
            server.wait()
            out, err = job.communicate(timeout=60)
        finally:
            if job.poll() is None:
                job.kill()
        assert job.returncode == 64, out + err
        tasks = job_tasks(project)
        assert "lost the broker for more than 2 s" in tasks["long"]["message"]
        assert PASSWORD not in tasks["long"]["message"]
        # a dependency only orders the two (as Unfurl): `after` is tried, nothing runs it
        assert tasks["after"]["state"] == "failed"
        assert not (project.root / "ran" / "after").exists()
    finally:
        server.kill()
        server.wait()
