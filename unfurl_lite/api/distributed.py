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
from urllib.parse import urlsplit

from unfurl_lite import __version__
from unfurl_lite.errors import GitError, JobError

START_WAIT_SECONDS = 30.0


def _celery() -> Any:
    try:
        # start-up: keeps run.executors.celery off distributed's import until _celery() runs
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
                 cache_dir: str | None = None, restart: bool = False) -> None:
    """Run a Celery worker for this project's operations in this process, until stopped.

    Each operation it runs sees UNFURL_WORKER=NAME, and the job's records name it; it runs
    each task in the job's project at the job's commit, and never passes the broker's URL
    to an operation. This process's environment is set for it (it is the worker's);
    ``restart`` (the CLI's): if its command line or environment shows the broker's
    password, the process first starts itself again without it (credentials.py).
    """
    # start-up: keeps run.executors.checkout off distributed's import until serve_worker() runs
    from unfurl_lite.run.executors import checkout
    from unfurl_lite.run.executors.celery import credentials

    distributed = _celery()
    name = name or socket.gethostname()
    url = distributed.broker_url(broker)
    if restart:  # nothing an operation can read may show the password
        credentials.restart_without(url)
    distributed.check_broker(url)
    os.environ[distributed.WORKER_NAME_ENV] = name
    if project_mode:
        os.environ[checkout.PROJECT_MODE_ENV] = project_mode
    if cache_dir:
        os.environ[checkout.CACHE_ENV] = str(Path(cache_dir).resolve())
    clone = _clone_here()
    if clone:  # started in a clone of a project: that project's tasks run in it
        os.environ[checkout.CLONE_ENV] = clone
    app = distributed.make_app(url)
    argv = [
        "worker",
        "--hostname", f"{name}@{socket.gethostname()}",
        "--queues", ",".join(queues or [distributed.DEFAULT_QUEUE]),
        "--concurrency", str(concurrency or distributed.default_concurrency()),
        "--without-gossip",
        "--without-mingle",
        "--loglevel", loglevel,
    ]
    app.worker_main(argv)


def _clone_here() -> str | None:
    from unfurl_lite.load import gitrepo  # start-up: keeps load.gitrepo off distributed's import

    try:
        return gitrepo.toplevel(os.getcwd()) or None
    except GitError:
        return None


def live_queues(url: str) -> dict[str, list[str]]:
    """Each agent queue some live worker serves, with those workers' Celery node names
    (from their heartbeats: a worker serves an agent queue through its version's queue)."""
    return {queue: sorted(nodes) for queue, nodes in _heartbeats(url)[1].items()}


def start_worker(root: Path, name: str, queue: str, broker: str,
                 concurrency: int | None) -> subprocess.Popen[bytes]:
    """A detached ``unfurl worker`` for one queue; its log is jobs/worker-NAME.log."""
    log_path = root / "jobs" / f"worker-{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # start-up: keeps celery.credentials off distributed's import until start_worker() runs
    from unfurl_lite.run.executors.celery import credentials

    args = [sys.executable, "-m", "unfurl_lite", "worker", "--name", name, "--queue", queue]
    if concurrency:
        args += ["--concurrency", str(concurrency)]
    read, write = os.pipe()  # the broker's URL: never on its command line or environment
    os.write(write, broker.encode())
    os.close(write)
    env = {k: v for k, v in os.environ.items() if k not in credentials.VARIABLES}
    env[credentials.FD_ENV] = str(read)
    try:
        with log_path.open("ab") as log:
            return subprocess.Popen(args, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    pass_fds=(read,), env=env)
    finally:
        os.close(read)


def agents(ensemble: str | Path | None = None, broker: str | None = None, start: bool = False,
           concurrency: int | None = None) -> Agents:
    """The agent queues the ensemble's nodes name, each with its nodes and the live workers
    serving it (name and version); ``start`` first starts a local worker for each queue no
    live worker serves (a JobError if one does not come up)."""
    # start-up: keeps api.jobs (108 modules) off distributed's import until agents() runs
    from unfurl_lite.api.jobs import load
    from unfurl_lite.model import routing

    distributed = _celery()
    ens = load(ensemble)
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    wanted = routing.agent_queues(ens.topology)
    workers, serving = _heartbeats(url)
    started: dict[str, int] = {}
    if start:
        for queue in wanted:
            if serving.get(queue):
                continue
            name = "management" if queue == routing.DEFAULT_QUEUE else queue
            started[queue] = start_worker(ens.project_root, name, queue, url, concurrency).pid
        if started:
            workers, serving = _wait_for(url, set(started))
    rows: list[dict[str, Any]] = [
        {
            "queue": queue,
            "nodes": nodes,
            "workers": [n.partition("@")[0] for n in sorted(serving.get(queue, ()))],
            "versions": {n.partition("@")[0]: _version_of(workers.get(n))
                         for n in sorted(serving.get(queue, ()))},
            **({"started": started[queue]} if queue in started else {}),
        }
        for queue, nodes in wanted.items()
    ]
    missing = [r["queue"] for r in rows if not r["workers"]] if start else []
    return Agents(rows, distributed.PROTOCOL, missing, __version__)


@dataclass
class Agents:
    """Each agent queue: ``{queue, nodes, workers, versions, started?}``; ``missing``: the
    queues no worker came up for after ``start``."""

    rows: list[dict[str, Any]]
    protocol: int  # the protocol this version speaks
    missing: list[str]
    version: str = ""  # this unfurl-lite's version: a worker of another is flagged

    def differs(self, version: dict[str, Any]) -> bool:
        """A worker this controller would not send to (another version or protocol)."""
        return version.get("protocol") != self.protocol or version.get("version") != self.version

    def problem(self) -> JobError | None:
        if not self.missing:
            return None
        return JobError(f"no worker came up for {', '.join(self.missing)}",
                        hint="see jobs/worker-NAME.log")


_UNKNOWN: dict[str, Any] = {"version": None, "protocol": None}


def _version_of(info: dict[str, Any] | None) -> dict[str, Any]:
    if not info:
        return _UNKNOWN
    return {"version": info.get("version"), "protocol": info.get("protocol")}


def _heartbeats(url: str) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    """The live workers (node -> what it says of itself) and the agent queues they serve."""
    import redis  # optional: redis (distributed extra, 144 modules), off distributed's import

    # start-up: keeps run.executors.celery.flights off distributed's import until _heartbeats() runs
    from unfurl_lite.run.executors.celery.flights import agent_queue

    distributed = _celery()
    client = redis.Redis.from_url(url, socket_connect_timeout=3.0, socket_timeout=3.0)
    try:
        workers = distributed.live_workers(client)
    finally:
        client.close()
    serving: dict[str, set[str]] = {}
    for node, info in workers.items():
        queues: list[Any] = info.get("queues") or []
        for queue in queues:
            serving.setdefault(agent_queue(str(queue)), set()).add(node)
    return workers, serving


def _wait_for(url: str, queues: set[str]) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    deadline = time.monotonic() + START_WAIT_SECONDS
    workers, serving = _heartbeats(url)
    while time.monotonic() < deadline and not all(serving.get(q) for q in queues):
        time.sleep(0.5)
        workers, serving = _heartbeats(url)
    return workers, serving


@dataclass
class ResumeExecutor:
    """How ``resume`` runs the rest of a job: its recorded executor and broker unless
    told otherwise. ``adopting``: the same lineage on Celery, so the dead job's copies of
    its tasks are adopted (never run twice), not stopped."""

    kind: str
    options: dict[str, Any]
    adopting: bool


def resume_executor(recorded: dict[str, Any], executor: str | None, broker: str | None,
                    in_flight: list[int], force: bool) -> ResumeExecutor:
    """The executor for resuming a job whose journal recorded ``recorded``."""
    kind = executor or str(recorded.get("executor") or "") \
        or os.environ.get("UNFURL_EXECUTOR", "local")
    if kind != "celery":
        return ResumeExecutor(kind, {}, False)
    url = broker or _with_password(str(recorded.get("broker") or "")) or None
    options: dict[str, Any] = {"broker": url} if url else {}
    adopting = recorded.get("executor") == "celery" and bool(recorded.get("lineage"))
    if adopting:
        options["lineage"] = recorded["lineage"]
        options["ended"] = [recorded["job"]] if recorded.get("job") else []
        options["adopt"] = in_flight
        options["force"] = force
    return ResumeExecutor(kind, options, adopting)


def _with_password(recorded: str) -> str:
    """The recorded broker URL (kept without its password) with the password of the
    broker this process is given (UNFURL_BROKER) when it is the same server."""
    if not recorded:
        return ""
    given = os.environ.get("UNFURL_BROKER") or ""
    theirs, ours = urlsplit(recorded), urlsplit(given)
    if given and (theirs.hostname, theirs.port) == (ours.hostname, ours.port) and ours.password:
        user = ours.username or ""
        netloc = f"{user}:{ours.password}@{ours.hostname}" + (f":{ours.port}" if ours.port
                                                               else "")
        return theirs._replace(netloc=netloc).geturl()
    return recorded


@dataclass
class AgentStatus:
    """One agent queue's workers, for a workflow that installs agents (Cloudify's
    ``install_new_agents``): each ``{name, version, protocol, compatible}``; ``started``
    the process id of the worker started for it, if one was."""

    queue: str
    workers: list[dict[str, Any]]
    started: int | None = None

    @property
    def ready(self) -> bool:
        """A worker that this controller sends tasks to serves the queue."""
        return any(w["compatible"] for w in self.workers)


def agent_status(queue: str, broker: str | None = None) -> AgentStatus:
    """Who serves ``queue`` now, and whether each runs this unfurl-lite version."""
    distributed = _celery()
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    workers, serving = _heartbeats(url)
    return AgentStatus(queue, _described(workers, serving.get(queue, set())))


def ensure_agent(queue: str, root: Path, broker: str | None = None, name: str | None = None,
                 concurrency: int | None = None, timeout: float | None = None) -> AgentStatus:
    """A compatible worker serves ``queue``: the live ones that do, else one started on
    this machine (its log in ROOT/jobs/worker-NAME.log), waited for until it beats (up to
    ``timeout`` seconds); a JobError if none comes up. Workers of another version are
    listed, not used."""
    distributed = _celery()
    url = distributed.broker_url(broker)
    distributed.check_broker(url)
    status = agent_status(queue, url)
    if status.ready:
        return status
    worker = start_worker(root, name or queue, queue, url, concurrency)
    deadline = time.monotonic() + (timeout or START_WAIT_SECONDS)
    while time.monotonic() < deadline:
        status = agent_status(queue, url)
        if status.ready:
            return AgentStatus(queue, status.workers, worker.pid)
        if worker.poll() is not None:
            break
        time.sleep(0.5)
    raise JobError(f"no worker came up for queue {queue!r}",
                   hint=f"see {root / 'jobs' / f'worker-{name or queue}.log'}")


def _described(workers: dict[str, dict[str, Any]], nodes: set[str]) -> list[dict[str, Any]]:
    distributed = _celery()
    return [{"name": n.partition("@")[0], "version": workers[n].get("version"),
             "protocol": workers[n].get("protocol"),
             "compatible": workers[n].get("version") == __version__
             and workers[n].get("protocol") == distributed.PROTOCOL}
            for n in sorted(nodes) if n in workers]
