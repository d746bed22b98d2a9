"""Distributed execution's use cases: serve operations as a Celery worker, and list (or
start) the workers an ensemble's agent queues need, as Cloudify's install_new_agents does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unfurl_lite.errors import JobError

START_WAIT_SECONDS = 30.0


def _celery() -> Any:
    try:
        from unfurl_lite.run.executors import celery as distributed
    except ImportError as exc:
        raise JobError(
            f"distributed execution needs Celery: {exc}",
            hint="pip install 'unfurl-lite[distributed]'",
        ) from None
    return distributed


def serve_worker(name: str | None = None, queues: tuple[str, ...] = (),
                 concurrency: int | None = None, broker: str | None = None,
                 loglevel: str = "INFO", project_mode: str | None = None,
                 cache_dir: str | None = None) -> None:
    """Run a Celery worker for this project's operations in this process, until stopped.

    Each operation it runs sees UNFURL_WORKER=NAME, and the job's records name it; it runs
    each task in the job's project at the job's commit, and never passes the broker's URL
    to an operation. This process's environment is set for it (it is the worker's).
    """
    from unfurl_lite.run.executors import checkout

    distributed = _celery()
    name = name or socket.gethostname()
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    os.environ[distributed.WORKER_NAME_ENV] = name
    if project_mode:
        os.environ[checkout.PROJECT_MODE_ENV] = project_mode
    if cache_dir:
        os.environ[checkout.CACHE_ENV] = str(Path(cache_dir).resolve())
    app = distributed.make_app(url)
    argv = [
        "worker",
        "--hostname", f"{name}@{socket.gethostname()}",
        "--queues", ",".join(queues or [distributed.DEFAULT_QUEUE]),
        "--concurrency", str(concurrency or os.cpu_count() or 2),
        "--without-gossip",
        "--without-mingle",
        "--loglevel", loglevel,
    ]
    app.worker_main(argv)


def live_queues(app: Any, timeout: float = 1.0) -> dict[str, list[str]]:
    """Each queue some live worker consumes, with those workers' Celery node names."""
    replies = app.control.inspect(timeout=timeout).active_queues() or {}
    serving: dict[str, list[str]] = {}
    for node, queues in sorted(replies.items()):
        for queue in queues or []:
            serving.setdefault(str(queue.get("name")), []).append(node)
    return serving


def start_worker(root: Path, name: str, queue: str, broker: str,
                 concurrency: int | None) -> subprocess.Popen[bytes]:
    """A detached ``unfurl worker`` for one queue; its log is jobs/worker-NAME.log."""
    log_path = root / "jobs" / f"worker-{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "unfurl_lite", "worker", "--name", name, "--queue", queue,
            "--broker", broker]
    if concurrency:
        args += ["--concurrency", str(concurrency)]
    with log_path.open("ab") as log:
        return subprocess.Popen(args, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def agents(ensemble: str | Path | None = None, broker: str | None = None, start: bool = False,
           concurrency: int | None = None) -> Agents:
    """The agent queues the ensemble's nodes name, each with its nodes and the live workers
    serving it (name and version); ``start`` first starts a local worker for each queue no
    live worker serves (a JobError if one does not come up)."""
    from unfurl_lite.api.jobs import load
    from unfurl_lite.run import routing

    distributed = _celery()
    ens = load(ensemble)
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    app = distributed.make_app(url)
    wanted = routing.agent_queues(ens.topology)
    serving = live_queues(app)
    versions = _versions(distributed, url)
    started: dict[str, int] = {}
    if start:
        for queue in wanted:
            if serving.get(queue):
                continue
            name = "management" if queue == routing.DEFAULT_QUEUE else queue
            started[queue] = start_worker(ens.project_root, name, queue, url, concurrency).pid
        if started:
            serving = _wait_for(app, set(started), serving)
            versions = _versions(distributed, url)
    rows: list[dict[str, Any]] = [
        {
            "queue": queue,
            "nodes": nodes,
            "workers": [n.partition("@")[0] for n in serving.get(queue, [])],
            "versions": {n.partition("@")[0]: versions.get(n, _UNKNOWN)
                         for n in serving.get(queue, [])},
            **({"started": started[queue]} if queue in started else {}),
        }
        for queue, nodes in wanted.items()
    ]
    app.close()
    missing = [r["queue"] for r in rows if not r["workers"]] if start else []
    return Agents(rows, distributed.PROTOCOL, missing)


@dataclass
class Agents:
    """Each agent queue: ``{queue, nodes, workers, versions, started?}``; ``missing``: the
    queues no worker came up for after ``start``."""

    rows: list[dict[str, Any]]
    protocol: int  # the protocol this version speaks
    missing: list[str]

    def problem(self) -> JobError | None:
        if not self.missing:
            return None
        return JobError(f"no worker came up for {', '.join(self.missing)}",
                        hint="see jobs/worker-NAME.log")


_UNKNOWN: dict[str, Any] = {"version": None, "protocol": None}


def _versions(distributed: Any, url: str) -> dict[str, dict[str, Any]]:
    """Each live worker's unfurl-lite version and protocol, from its heartbeat."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3.0, socket_timeout=3.0)
    try:
        return {node: {"version": info.get("version"), "protocol": info.get("protocol")}
                for node, info in distributed.live_workers(client).items()}
    finally:
        client.close()


def _wait_for(app: Any, queues: set[str], serving: dict[str, list[str]]) -> dict[str, list[str]]:
    deadline = time.monotonic() + START_WAIT_SECONDS
    while time.monotonic() < deadline:
        serving = live_queues(app)
        if all(serving.get(q) for q in queues):
            break
        time.sleep(0.5)
    return serving
