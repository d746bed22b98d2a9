"""The worker's side: the task body that runs one operation, its lease, the heartbeat
that tells controllers the worker is alive, and kill on revoke.

A worker only runs an operation and sends back an :class:`OperationResult`: it pushes
``started`` to the controller's reply list when it starts a task and the result when it
ends. While it runs a task it holds a lease on it in Redis; a copy of the message
delivered again while the lease is alive does not start a second run. Each task it runs
has its own table of commands, so ``revoke(terminate=True)`` kills that task's command
and no other (a worker runs tasks of many jobs at once).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from celery import signals
from celery.concurrency.thread import TaskPool as _CeleryThreadPool

from unfurl_lite import __version__
from unfurl_lite.errors import JobError
from unfurl_lite.run.executors.celery.application import (
    BROKER_ENV,
    ENDED_KEY,
    HEARTBEAT_SECONDS,
    LEASE_KEY,
    LEASE_SECONDS,
    REPLY_DELIVERY_SECONDS,
    REPLY_TTL_SECONDS,
    SUPERSEDED_KEY,
    SWITCH_INTERVAL,
    TASK_NAME,
    WORKER_KEY,
    protocol,
    visibility_timeout,
    without_broker,
    worker_name,
)
from unfurl_lite.run.executors.wire import decode, decode_request, encode_result
from unfurl_lite.run.operations import ProcessTable
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.security.redaction import redact_text
from unfurl_lite.security.taint import Sensitive

log = logging.getLogger(__name__)


class OperationFailed(Exception):
    """A failed operation, as Celery sees it (FAILURE); the message is redacted."""


@dataclass
class WorkerState:
    """What one worker process keeps while it serves: kept on its Celery app."""

    broker: str  # its URL never reaches an operation
    watchdog: Any = None
    tasks: dict[str, ProcessTable] = field(default_factory=dict)  # Celery id -> its commands
    clients: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def watch(self, pid: int, running: bool) -> None:
        if self.watchdog is not None:
            self.watchdog.watch(pid, running)

    @contextlib.contextmanager
    def commands_of(self, celery_id: str) -> Any:
        table = ProcessTable(watch=self.watch)
        with self.lock:
            self.tasks[celery_id] = table
        try:
            yield table
        finally:
            with self.lock:
                self.tasks.pop(celery_id, None)

    def terminate(self, celery_id: str) -> None:
        with self.lock:
            table = self.tasks.get(celery_id)
        if table is not None:
            table.terminate(set(table.task_ids()))

    def client(self, url: str) -> Any:
        import redis

        found = self.clients.get(url)
        if found is None:
            found = self.clients[url] = redis.Redis.from_url(
                url, socket_connect_timeout=3.0, socket_timeout=10.0, retry_on_timeout=True,
                health_check_interval=5)
        return found


def state_of(app: Any) -> WorkerState:
    return app.unfurl_worker  # type: ignore[no-any-return, unused-ignore]


def install(app: Any, broker: str) -> None:
    """Make ``app`` able to serve as a worker: the task, its state, the signal handlers."""
    app.unfurl_worker = WorkerState(broker)
    app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
             throws=(OperationFailed,))(run_on_worker)
    signals.task_revoked.connect(_on_revoked, weak=False, dispatch_uid="unfurl-revoked")
    signals.worker_init.connect(_on_worker_init, weak=False, dispatch_uid="unfurl-init")
    signals.worker_ready.connect(_on_worker_ready, weak=False, dispatch_uid="unfurl-ready")
    signals.after_setup_logger.connect(_quiet_results, weak=False, dispatch_uid="unfurl-log")


def run_on_worker(task: Any, payload: dict[str, Any]) -> dict[str, Any]:
    state = state_of(task.app)
    meta = payload.get("meta") or {}
    celery_id = str(task.request.id)
    node = str(task.request.hostname or socket.gethostname())
    worker = worker_name(task.request.hostname)
    client = state.client(str(task.app.conf.result_backend or task.app.conf.broker_url))
    reply = str(meta.get("reply") or "")
    if meta.get("protocol") != protocol():
        error = (f"worker {worker} speaks protocol {protocol()} (unfurl-lite {__version__}), "
                 f"the controller {meta.get('protocol')}: run the same unfurl-lite version "
                 "on the controller and its workers")
        refused = OperationResult(success=False, modified=False, error=error, worker=worker)
        _push(client, reply, {"id": celery_id, "event": "done", "node": node,
                              "result": encode_result(refused)})
        raise OperationFailed(error)
    job = str(meta.get("job") or "")
    lease = _Lease(client, LEASE_KEY + job + ":" + str(meta.get("change")), f"{celery_id} {node}")
    # one round trip: has the job ended or given it up, and may this copy run?
    started = json.dumps({"id": celery_id, "event": "started", "node": node})
    acquired = lease.try_first(ENDED_KEY + job, SUPERSEDED_KEY + celery_id, reply, started)
    if acquired == "dropped":
        return {"dropped": "its job ended or gave up on it", "worker": worker}
    if acquired is None and not lease.acquire(celery_id):
        return {"dropped": "a run of it is still alive", "worker": worker}
    request = decode_request(payload.get("request") or {})
    secrets = {str(s) for s in decode(meta.get("secrets") or [])}
    try:
        if acquired is None:  # told only once this copy runs
            _push(client, reply, json.loads(started), once=True)
        with state.commands_of(celery_id) as processes:
            result = _run_here(request, meta.get("source") or {}, worker, state, processes)
        result.worker = worker
        result = redact_result(result, secrets)
        _push(client, reply, {"id": celery_id, "event": "done", "node": node,
                              "result": encode_result(result)})
    finally:
        lease.release()
    if not result.success:
        raise OperationFailed(result.error or "the operation failed")
    return {"success": True, "worker": worker, "status": result.status,
            "modified": result.modified}


def _run_here(request: OperationRequest, source: dict[str, str], worker: str,
              state: WorkerState, processes: ProcessTable) -> OperationResult:
    from unfurl_lite.run.executors.checkout import project_dir
    from unfurl_lite.run.operations import run_operation

    try:
        request.cwd = project_dir(source, request.cwd)
    except JobError as exc:
        return OperationResult(success=False, modified=False,
                               error=f"worker {worker} cannot get the project: {exc.message}")
    request.env = without_broker(request.env, state.broker)
    for name in ("HOME", "PATH", "USER", "LOGNAME", "TMPDIR", "SHELL"):  # this machine's
        if name in os.environ:
            request.env[name] = os.environ[name]
    request.env["UNFURL_WORKER"] = worker
    try:  # Python operations too run in a process of their own, importing from request.cwd
        return run_operation(request, processes)
    except Exception as exc:  # a bug or broken environment on this worker: the task fails
        return OperationResult(success=False, modified=None, error=f"{type(exc).__name__}")


def redact_result(result: OperationResult, secrets: set[str]) -> OperationResult:
    """The result with every known secret out of its text (Sensitive values stay marked)."""
    if not secrets:
        return result

    def scrub(value: Any) -> Any:
        if isinstance(value, Sensitive):
            return value
        if isinstance(value, str):
            return redact_text(value, secrets)
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    result.outputs = scrub(result.outputs)
    result.attributes = scrub(result.attributes)
    result.error = scrub(result.error)
    return result


def _push(client: Any, key: str, message: dict[str, Any], once: bool = False) -> None:
    """Deliver to the controller's reply list, retrying through a broker restart."""
    if not key:
        return
    text = json.dumps(message)
    deadline = time.monotonic() + (0 if once else REPLY_DELIVERY_SECONDS)
    while True:
        try:
            with client.pipeline() as pipe:
                pipe.rpush(key, text).expire(key, REPLY_TTL_SECONDS).execute()
            return
        except Exception as exc:
            if time.monotonic() > deadline:
                log.warning("could not deliver %s for %s: %s", message.get("event"),
                            message.get("id"), exc)
                return
            time.sleep(0.5)


class _Lease:
    """This run's claim on its task, refreshed while it runs (and after a broker restart)."""

    def __init__(self, client: Any, key: str, holder: str) -> None:
        self.client, self.key, self.holder = client, key, holder
        self._stop = threading.Event()

    def try_first(self, ended: str, given_up: str, reply: str, started: str) -> str | None:
        """The common case in one round trip: "dropped" (the job ended or gave the task
        up), "run" (the lease is ours and the controller told it started), else None."""
        try:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.exists(ended, given_up)
                pipe.set(self.key, self.holder, nx=True, ex=int(LEASE_SECONDS))
                dropped, taken = pipe.execute()
                if dropped:
                    if taken:
                        self.client.delete(self.key)
                    return "dropped"
                if not taken:
                    return None
        except Exception:  # the broker is restarting: the slow path retries
            return None
        self._start_refreshing()
        if reply:
            _push(self.client, reply, json.loads(started), once=True)
        return "run"

    def _start_refreshing(self) -> None:
        threading.Thread(target=self._refresh, daemon=True, name="unfurl-lease").start()

    def acquire(self, celery_id: str) -> bool:
        deadline = time.monotonic() + REPLY_DELIVERY_SECONDS
        while True:
            try:
                with self.client.pipeline(transaction=False) as pipe:
                    taken, held_bytes = pipe.set(
                        self.key, self.holder, nx=True, ex=int(LEASE_SECONDS)
                    ).get(self.key).execute()
                if taken:
                    break
                held = (held_bytes or b"").decode()
                if held.partition(" ")[0] == celery_id:
                    return False  # the same message, delivered again: its first run is
                    # alive, or it has ended
                if held.endswith(" done"):  # an earlier copy ended; this one was sent again
                    self.client.set(self.key, self.holder, ex=int(LEASE_SECONDS))
                    break
                # a copy sent again after its worker was lost: wait until that run has ended
                if self.client.exists(SUPERSEDED_KEY + celery_id):
                    return False
            except Exception:  # the broker is restarting: run anyway (at least once)
                if time.monotonic() > deadline:
                    break
            time.sleep(0.5)
        self._start_refreshing()
        return True

    def _refresh(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 4):
            with contextlib.suppress(Exception):
                self.client.set(self.key, self.holder, ex=int(LEASE_SECONDS))

    def release(self) -> None:
        """Keep the lease, marked done, as long as a copy could still be redelivered."""
        self._stop.set()
        with contextlib.suppress(Exception):
            if (self.client.get(self.key) or b"").decode() == self.holder:
                self.client.set(self.key, f"{self.holder} done",
                                ex=int(visibility_timeout() * 2 + 3600))


class ThreadPool(_CeleryThreadPool):
    """Celery's thread pool, with revoke(terminate=True) meaning: kill that task's command.

    Operations are subprocesses, so threads run them in parallel as the local executor's
    do; terminating one kills its command's process group (see the task_revoked handler).
    """

    def terminate_job(self, pid: int, signal: int | None = None) -> None:
        return None



def _on_revoked(sender: Any = None, request: Any = None, terminated: bool = False,
                **kwargs: Any) -> None:
    if not terminated or request is None:
        return
    with contextlib.suppress(Exception):
        state_of(sender.app if sender is not None else request.app).terminate(str(request.id))


def _on_worker_init(sender: Any = None, **kwargs: Any) -> None:
    """Keep the broker's URL out of every operation; start the watchdog."""
    from unfurl_lite.run.executors.watchdog import Watchdog

    sys.setswitchinterval(SWITCH_INTERVAL)
    for name in BROKER_ENV:
        os.environ.pop(name, None)
    state_of(sender.app).watchdog = Watchdog()


def _on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    """Tell controllers and ``unfurl agents`` who we are, every few seconds."""
    with contextlib.suppress(Exception):
        node = str(sender.hostname)
        queues = sorted(q.name for q in sender.task_consumer.queues)
        client = state_of(sender.app).client(
            str(sender.app.conf.result_backend or sender.app.conf.broker_url))
        info = json.dumps({"node": node, "name": worker_name(node.partition("@")[0]),
                           "version": __version__, "protocol": protocol(), "queues": queues})

        def beat() -> None:
            while True:
                with contextlib.suppress(Exception):
                    client.set(WORKER_KEY + node, info, ex=int(HEARTBEAT_SECONDS * 3))
                time.sleep(HEARTBEAT_SECONDS)

        threading.Thread(target=beat, daemon=True, name="unfurl-heartbeat").start()


def _quiet_results(**kwargs: Any) -> None:
    """Celery logs a task's return value on success: ours may carry command output."""
    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
