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

from unfurl_lite.commands.common import ENSEMBLE_ARG, echo_json, show

BROKER_OPTION = click.option(
    "--broker",
    default=None,
    help="The Celery broker (default: $UNFURL_BROKER or redis://127.0.0.1:6379/0).",
)
START_WAIT_SECONDS = 30.0


def _celery() -> Any:
    from unfurl_lite.errors import JobError

    try:
        from unfurl_lite.executors import celery as distributed
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
def worker(name: str | None, queues: tuple[str, ...], concurrency: int | None,
           broker: str | None, loglevel: str) -> None:
    """Start a Celery worker that runs this project's operations (runs until stopped).

    Each operation it runs sees UNFURL_WORKER=NAME, and the job's records name it.
    """
    distributed = _celery()
    name = name or socket.gethostname()
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    os.environ[distributed.WORKER_NAME_ENV] = name
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
    from unfurl_lite import api, routing

    distributed = _celery()
    ens = api.load(ensemble)
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    app = distributed.make_app(url)
    wanted = routing.agent_queues(ens.topology)
    serving = live_queues(app)
    started: dict[str, int] = {}
    if start:
        for queue in wanted:
            if serving.get(queue):
                continue
            name = "management" if queue == routing.DEFAULT_QUEUE else queue
            started[queue] = start_worker(ens.project_root, name, queue, url, concurrency).pid
        if started:
            serving = _wait_for(app, set(started), serving)
    rows: list[dict[str, Any]] = [
        {
            "queue": queue,
            "nodes": nodes,
            "workers": [n.partition("@")[0] for n in serving.get(queue, [])],
            **({"started": started[queue]} if queue in started else {}),
        }
        for queue, nodes in wanted.items()
    ]
    if as_json:
        echo_json(rows)
    else:
        for row in rows:
            workers = ", ".join(row["workers"]) or "none"
            note = f" (started pid {row['started']})" if "started" in row else ""
            show(f"{row['queue']}: {len(row['nodes'])} node(s) [{', '.join(row['nodes'])}]; "
                 f"workers: {workers}{note}")
    app.close()
    missing = [r["queue"] for r in rows if not r["workers"]]
    if missing and start:
        from unfurl_lite.errors import JobError

        raise JobError(f"no worker came up for {', '.join(missing)}",
                       hint="see jobs/worker-NAME.log")


def _wait_for(app: Any, queues: set[str], serving: dict[str, list[str]]) -> dict[str, list[str]]:
    deadline = time.monotonic() + START_WAIT_SECONDS
    while time.monotonic() < deadline:
        serving = live_queues(app)
        if all(serving.get(q) for q in queues):
            break
        time.sleep(0.5)
    return serving
