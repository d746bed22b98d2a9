"""Distributed execution on real Celery workers and a real redis-server (one per session).

Each test starts its workers as subprocesses (``unfurl worker``) on a fresh Redis
database and kills every one of them at teardown.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ROOT, Project, git, run_unfurl
from tests.execution_helpers import start_unfurl, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]

REDIS = shutil.which("redis-server") or ("/usr/bin/redis-server"
                                         if Path("/usr/bin/redis-server").exists() else None)
_databases = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    if REDIS is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    process = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)

    def up() -> bool:
        try:
            return bool(client.ping())
        except redis.exceptions.ConnectionError:
            return False

    try:
        wait_for(up, limit=10)
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def broker(redis_server: str) -> str:
    """A Redis database of its own for each test."""
    import redis

    url = f"{redis_server}/{next(_databases) % 16}"
    redis.Redis.from_url(url).flushdb()
    return url


Workers = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def workers(project: Project, broker: str) -> Iterator[Workers]:
    """Start ``unfurl worker`` subprocesses; they are all killed at teardown."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, *queues: str, concurrency: int = 2,
              loglevel: str = "WARNING") -> subprocess.Popen[bytes]:
        args = [sys.executable, "-m", "unfurl_lite", "worker", "--name", name,
                "--concurrency", str(concurrency), "--broker", broker, "--loglevel", loglevel]
        for queue in queues:
            args += ["--queue", queue]
        log = (project.root.parent / f"worker-{name}.log").open("ab")
        process = subprocess.Popen(
            args, cwd=project.root, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        started.append(process)
        wait_for(lambda: name in serving(broker), limit=30)
        return process

    try:
        yield start
    finally:
        for process in started:
            kill_group(process)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def serving(broker: str) -> dict[str, list[str]]:
    """Live worker name -> the queues it consumes."""
    from unfurl_lite.executors.celery import make_app

    app = make_app(broker)
    try:
        replies = app.control.inspect(timeout=0.5).active_queues() or {}
    finally:
        app.close()
    return {node.partition("@")[0]: [q["name"] for q in qs] for node, qs in replies.items()}


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
    assert tasks["after"]["state"] == "blocked"


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


def test_a_soft_cancel_revokes_tasks_still_waiting_on_the_queue(project, broker, workers):
    def slow(name: str) -> str:
        return (f"mkdir -p ran && touch ran/{name}.started && sleep 2 && touch ran/{name}.done")

    prepare(project, ensemble(*(node(n, slow(n)) for n in ("x", "y", "z"))))
    workers("w", "unfurl.management", concurrency=1)
    job = start_unfurl(project.root, "deploy", "--approve", "--executor", "celery",
                       "--broker", broker, "--jobs", "3")
    try:
        wait_for(lambda: any((project.root / "ran").glob("*.started"))
                 if (project.root / "ran").exists() else False, job, limit=60)
        cancelled = run_unfurl(project.root, "cancel")
        assert cancelled.returncode == 0, cancelled.stderr
        out, err = job.communicate(timeout=60)
    finally:
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
    from unfurl_lite.executors.celery import decode_request, encode_request
    from unfurl_lite.expr import Sensitive, Tainted
    from unfurl_lite.operations.base import OperationRequest

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
