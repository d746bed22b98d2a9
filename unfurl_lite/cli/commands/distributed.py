"""``unfurl worker`` and ``unfurl agents``: the Celery side of distributed execution."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from unfurl_lite.cli.commands.common import ENSEMBLE_ARG, echo_json, show

BROKER_OPTION = click.option(
    "--broker",
    default=None,
    help="The Celery broker (default: $UNFURL_BROKER or redis://127.0.0.1:6379/0).",
)
START_WAIT_SECONDS = 30.0


def _celery() -> Any:
    from unfurl_lite.errors import JobError

    try:
        from unfurl_lite.run.executors import celery as distributed
    except ImportError as exc:
        raise JobError(
            f"distributed execution needs Celery: {exc}",
            hint="pip install 'unfurl-lite[distributed]'",
        ) from None
    return distributed


@click.command()
@click.option("--name", default=None, help="The worker's name (default: this host's name).")
@click.option(
    "--queue",
    "-Q",
    "queues",
    multiple=True,
    help="A queue to serve (repeatable; default: the default queue, unfurl.management).",
)
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help="Operations run at once (default: the number of cores).")
@BROKER_OPTION
@click.option("--loglevel", "-l", default="INFO", show_default=True, help="Celery's log level.")
@click.option("--project", "project_mode", type=click.Choice(["auto", "git"]), default=None,
              help="Where tasks run: auto (default) runs in the controller's directory when "
              "this machine has it at the job's commit, else in a worktree of the job's "
              "commit fetched from its repository; git always fetches.")
@click.option("--cache", "cache_dir", default=None, type=click.Path(file_okay=False),
              help="Where fetched repositories and worktrees are kept "
              "(default: $UNFURL_WORKER_CACHE or ~/.cache/unfurl-lite/worker).")
def worker(name: str | None, queues: tuple[str, ...], concurrency: int | None,
           broker: str | None, loglevel: str, project_mode: str | None,
           cache_dir: str | None) -> None:
    """Start a Celery worker that runs this project's operations (runs until stopped).

    Each operation it runs sees UNFURL_WORKER=NAME, and the job's records name it. It
    runs each task in the job's project at the job's commit, and never passes the broker's
    URL to an operation.
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


@click.command()
@ENSEMBLE_ARG
@BROKER_OPTION
@click.option("--start", is_flag=True, help="Start a local worker for each queue that has none.")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help="Concurrency of the workers --start starts.")
@click.option("--json", "as_json", is_flag=True, help="Print the queues as JSON.")
def agents(ensemble: str | None, broker: str | None, start: bool, concurrency: int | None,
           as_json: bool) -> None:
    """List the agent queues this ensemble's nodes name and the live workers serving each.

    Like Cloudify's install_new_agents, --start brings up a worker (on this machine) for
    every queue that no live worker serves.
    """
    from unfurl_lite import api
    from unfurl_lite.run import routing

    distributed = _celery()
    ens = api.load(ensemble)
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
    if as_json:
        echo_json(rows)
    else:
        for row in rows:
            workers = ", ".join(
                f"{w} ({_version_text(row['versions'][w], distributed.PROTOCOL)})"
                for w in row["workers"]) or "none"
            note = f" (started pid {row['started']})" if "started" in row else ""
            show(f"{row['queue']}: {len(row['nodes'])} node(s) [{', '.join(row['nodes'])}]; "
                 f"workers: {workers}{note}")
    app.close()
    missing = [r["queue"] for r in rows if not r["workers"]]
    if missing and start:
        from unfurl_lite.errors import JobError

        raise JobError(f"no worker came up for {', '.join(missing)}",
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


def _version_text(version: dict[str, Any], protocol: int) -> str:
    if version.get("protocol") is None:
        return "version unknown: older than protocol 2, refused"
    text = f"unfurl-lite {version['version']}, protocol {version['protocol']}"
    return text if version["protocol"] == protocol else f"{text}: differs, refused"


def _wait_for(app: Any, queues: set[str], serving: dict[str, list[str]]) -> dict[str, list[str]]:
    deadline = time.monotonic() + START_WAIT_SECONDS
    while time.monotonic() < deadline:
        serving = live_queues(app)
        if all(serving.get(q) for q in queues):
            break
        time.sleep(0.5)
    return serving
