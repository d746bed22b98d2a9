"""Distributed execution: operations run on Celery workers, fed through a Redis broker.

The job process (the controller) keeps everything the local executor's job keeps: the
ensemble, the lock, the journal, git and every status decision. A worker only runs one
operation and sends back an :class:`OperationResult`. Requests and results travel as
JSON, never pickle, with secret strings marked so the other side wraps them again; the
task's arguments are never shown in Celery's logs.

Each node's operations go to its agent's queue (see routing.py). A worker that dies
mid-task is noticed by the controller (it stops answering pings): the task is sent again
(it may run on another worker serving the queue) up to ``lost_retries`` times, then
failed; the dead worker's unacknowledged message is marked superseded so that a later
redelivery (acks late, visibility timeout) does not run it twice. Nothing waits forever:
results are polled with timeouts, a queue no live worker serves fails its tasks after
``queue_timeout`` seconds, and a broker that stays unreachable fails what is in flight.

This module is also the Celery app: ``celery -A unfurl_lite.executors.celery worker``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from celery import Celery, signals
from celery.concurrency.thread import TaskPool as _CeleryThreadPool

from unfurl_lite.errors import JobError
from unfurl_lite.expr import REDACTED, Sensitive, Tainted
from unfurl_lite.operations.base import OperationRequest, OperationResult
from unfurl_lite.routing import DEFAULT_QUEUE

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
TASK_NAME = "unfurl_lite.run_operation"
SUPERSEDED_KEY = "unfurl-lite:superseded:"
WORKER_NAME_ENV = "UNFURL_WORKER_NAME"
REDACTED_ARGS = f"({REDACTED},)"
POLL_SECONDS = 0.1
PING_SECONDS = 2.0
LOST_AFTER_MISSED_PINGS = 2
BROKER_DOWN_SECONDS = 15.0

log = logging.getLogger(__name__)


# -- the wire format


def encode(value: Any) -> Any:
    """JSON-ready data; a secret becomes ``{"__sensitive__": text}`` (never plain text in
    a structure that could be mistaken for an ordinary value)."""
    if isinstance(value, Sensitive):
        return {"__sensitive__": str(value), "tainted": isinstance(value, Tainted)}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "__sensitive__" in value and set(value) <= {"__sensitive__", "tainted"}:
            cls = Tainted if value.get("tainted") else Sensitive
            return cls(value["__sensitive__"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def encode_request(request: OperationRequest) -> dict[str, Any]:
    return {f.name: encode(getattr(request, f.name)) for f in fields(request)}


def decode_request(data: dict[str, Any]) -> OperationRequest:
    known = {f.name for f in fields(OperationRequest)}
    return OperationRequest(**{k: decode(v) for k, v in data.items() if k in known})


def encode_result(result: OperationResult) -> dict[str, Any]:
    return {f.name: encode(getattr(result, f.name)) for f in fields(result)}


def decode_result(data: dict[str, Any]) -> OperationResult:
    known = {f.name for f in fields(OperationResult)}
    return OperationResult(**{k: decode(v) for k, v in data.items() if k in known})


# -- the Celery app (shared by the controller and the workers)


def broker_url(broker: str | None = None) -> str:
    return broker or os.environ.get("UNFURL_BROKER") or DEFAULT_BROKER


def visibility_timeout() -> float:
    return float(os.environ.get("UNFURL_VISIBILITY_TIMEOUT") or 3600)


def make_app(broker: str | None = None, backend: str | None = None) -> Celery:
    url = broker_url(broker)
    app = Celery("unfurl_lite", broker=url, backend=backend or url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,  # a message is acknowledged when its operation has finished
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        task_default_queue=DEFAULT_QUEUE,
        result_expires=3600,
        result_extended=False,
        worker_pool="unfurl_lite.executors.celery:ThreadPool",
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=3.0,
        broker_transport_options={
            "visibility_timeout": visibility_timeout(),
            "unacked_restore_interval": 5,
            "socket_connect_timeout": 3.0,
        },
        redis_socket_connect_timeout=3.0,
        redis_socket_timeout=10.0,
    )
    app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True)(
        _run_on_worker
    )
    return app


def worker_name(hostname: str | None) -> str:
    """What UNFURL_WORKER and the records call a worker: ``unfurl worker --name``."""
    return os.environ.get(WORKER_NAME_ENV) or (hostname or "celery")


_active: dict[str, str] = {}  # Celery task id -> the task's changeId, in this worker
_active_lock = threading.Lock()


def _run_on_worker(task: Any, payload: dict[str, Any]) -> dict[str, Any]:
    from unfurl_lite.operations import run_operation

    celery_id = str(task.request.id)
    worker = worker_name(task.request.hostname)
    with contextlib.suppress(Exception):
        if task.app.backend.client.get(SUPERSEDED_KEY + celery_id):
            return {"superseded": True, "worker": worker}
    request = decode_request(payload)
    request.env["UNFURL_WORKER"] = worker
    with _active_lock:
        _active[celery_id] = request.task_id
    try:
        result = run_operation(request)
    except Exception as exc:  # a bug or broken environment on this worker: the task fails
        result = OperationResult(success=False, modified=None, error=f"{type(exc).__name__}")
    finally:
        with _active_lock:
            _active.pop(celery_id, None)
    result.worker = worker
    return encode_result(result)


class ThreadPool(_CeleryThreadPool):
    """Celery's thread pool, with revoke(terminate=True) meaning: kill that task's command.

    Operations are subprocesses, so threads run them in parallel as the local executor's
    do; terminating one kills its command's process group (see the task_revoked handler).
    """

    def terminate_job(self, pid: int, signal: int | None = None) -> None:
        return None


@signals.task_revoked.connect
def _on_revoked(sender: Any = None, request: Any = None, terminated: bool = False,
                **kwargs: Any) -> None:
    if not terminated or request is None:
        return
    from unfurl_lite.operations import shell

    with _active_lock:
        change_id = _active.get(str(request.id))
    if change_id:
        shell.terminate_tasks({change_id})


@signals.after_setup_logger.connect
def _quiet_results(**kwargs: Any) -> None:
    """Celery logs a task's return value on success: ours may carry command output."""
    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)


app = make_app()


# -- the controller's side


def redacted_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:{REDACTED}@{parts.hostname}"
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def check_broker(url: str, timeout: float = 3.0) -> None:
    """Fail at job start, clearly, when the broker cannot be reached."""
    import redis

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise JobError(
            f"unsupported broker {redacted_url(url)!r}",
            hint="use a Redis URL such as redis://127.0.0.1:6379/0",
        )
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        client.ping()
        client.close()
    except redis.exceptions.RedisError as exc:
        raise JobError(
            f"cannot reach the broker at {redacted_url(url)}: {exc}",
            hint="start it (redis-server --port 6379) or pass --broker / set UNFURL_BROKER; "
            "see docs/distributed.md",
        ) from None


@dataclass
class _Flight:
    request: OperationRequest
    future: Future[OperationResult]
    payload: dict[str, Any]
    queue: str
    celery_id: str = ""
    sent_at: float = 0.0
    hostname: str | None = None  # the Celery node running it, once started
    started: bool = False
    lost: int = 0  # times its worker died under it
    lost_on: str | None = None  # the Celery node that last died under it
    withdrawn: bool = False  # soft cancel revoked it before a worker started it


class CeleryExecutor:
    name = "celery"

    def __init__(self, jobs: int = 0, **options: Any) -> None:
        """Options: broker, backend (default: the broker), queue_timeout (seconds a task
        may wait on a queue no live worker serves), lost_retries (sends after a worker
        died under the task); each also read from UNFURL_BROKER, UNFURL_QUEUE_TIMEOUT..."""
        url = broker_url(options.get("broker"))
        check_broker(url)
        self.app = make_app(url, options.get("backend"))
        self.queue_timeout = float(
            options.get("queue_timeout") or os.environ.get("UNFURL_QUEUE_TIMEOUT") or 300.0
        )
        lost = options.get("lost_retries")
        self.lost_retries = int(lost if lost is not None else os.environ.get(
            "UNFURL_LOST_RETRIES") or 1)
        self.on_started: Any = None
        self._flights: dict[str, _Flight] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._missed: dict[str, int] = {}
        self._serving: dict[str, set[str]] = {}  # queue -> live Celery nodes consuming it
        self._monitor = threading.Thread(target=self._watch, name="unfurl-celery", daemon=True)
        self._pinger = threading.Thread(target=self._ping, name="unfurl-ping", daemon=True)
        self._monitor.start()
        self._pinger.start()

    # -- Executor protocol

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        future: Future[OperationResult] = Future()
        flight = _Flight(request, future, encode_request(request), request.queue or DEFAULT_QUEUE)
        self._send(flight)
        return future

    def withdraw_pending(self) -> None:
        """Soft cancel: revoke the tasks still waiting on a queue, so no worker starts
        them; the ones already started finish. A task a worker picks up before the revoke
        arrives simply runs and reports as usual."""
        with self._lock:
            waiting = [f for f in self._flights.values() if not f.started]
            for flight in waiting:
                flight.withdrawn = True
        if waiting:
            self.app.control.revoke([f.celery_id for f in waiting])

    def kill_running(self) -> None:
        """Kill-cancel: revoke every task in flight; running ones are terminated."""
        with self._lock:
            ids = [f.celery_id for f in self._flights.values()]
        if ids:
            self.app.control.revoke(ids, terminate=True, signal="SIGTERM")

    def shutdown(self) -> None:
        self._stop.set()
        self._monitor.join(timeout=5)
        self._pinger.join(timeout=5)
        with self._lock:
            left = list(self._flights.values())
            self._flights.clear()
        for flight in left:
            _settle(flight, _failure(flight, "the job ended before the worker answered"))
        with contextlib.suppress(Exception):
            self.app.close()

    # -- sending and watching

    def _send(self, flight: _Flight) -> None:
        flight.celery_id = str(uuid.uuid4())
        flight.sent_at = time.monotonic()
        flight.hostname, flight.started = None, False
        with self._lock:
            self._flights[flight.celery_id] = flight
        try:
            self.app.send_task(
                TASK_NAME,
                args=[flight.payload],
                task_id=flight.celery_id,
                queue=flight.queue,
                argsrepr=REDACTED_ARGS,
                kwargsrepr="{}",
            )
        except Exception as exc:  # the broker went away between the check and now
            with self._lock:
                self._flights.pop(flight.celery_id, None)
            _settle(flight, _failure(flight, f"could not send to the broker: {exc}"))

    def _watch(self) -> None:
        down_since: float | None = None
        while not self._stop.wait(POLL_SECONDS):
            with self._lock:
                flights = list(self._flights.values())
            if not flights:
                continue
            try:
                metas = self._metas([f.celery_id for f in flights])
                down_since = None
            except Exception as exc:
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > BROKER_DOWN_SECONDS:
                    for flight in flights:
                        self._finish(flight, _failure(flight, f"lost the broker: {exc}"))
                continue
            for flight, meta in zip(flights, metas, strict=True):
                self._observe(flight, meta)

    def _metas(self, ids: list[str]) -> list[dict[str, Any] | None]:
        backend = self.app.backend
        values = backend.client.mget([backend.get_key_for_task(i) for i in ids])
        return [backend.decode_result(v) if v else None for v in values]

    def _observe(self, flight: _Flight, meta: dict[str, Any] | None) -> None:
        state = (meta or {}).get("status", "PENDING")
        if state == "STARTED" and not flight.started:
            flight.started = True
            flight.hostname = ((meta or {}).get("result") or {}).get("hostname")
            if self.on_started is not None:
                self.on_started(flight.request.task_id)
        elif state == "SUCCESS":
            data = (meta or {}).get("result") or {}
            if data.get("superseded"):
                return
            self._finish(flight, decode_result(data))
        elif state == "REVOKED" and flight.withdrawn and not flight.started:
            self._finish(flight, OperationResult(
                success=False, modified=False, worker="celery",
                error="cancelled before a worker started it"))
        elif state == "REVOKED":
            self._finish(flight, _failure(flight, "cancelled: the task was revoked"))
        elif state == "FAILURE":
            self._finish(flight, _failure(flight, "the worker could not run the operation"))
        elif (
            state == "PENDING"
            and time.monotonic() - flight.sent_at > self.queue_timeout
            and not self._serving.get(flight.queue)
        ):
            self._finish(
                flight,
                _failure(
                    flight,
                    (f"worker {_short(flight.lost_on)} was lost while running it and "
                     if flight.lost_on else "")
                    + f"no live worker serves queue {flight.queue!r} "
                    f"(waited {self.queue_timeout:g} s); start one with: "
                    f"unfurl worker --name {flight.queue} --queue {flight.queue}",
                ),
            )

    def _finish(self, flight: _Flight, result: OperationResult) -> None:
        with self._lock:
            if self._flights.pop(flight.celery_id, None) is None:
                return
        with contextlib.suppress(Exception):
            self.app.backend.forget(flight.celery_id)  # results may carry command output
        _settle(flight, result)

    def _ping(self) -> None:
        """Which nodes are alive and which queues they serve; resend what a dead one held."""
        while not self._stop.wait(PING_SECONDS):
            try:
                replies = self.app.control.inspect(timeout=1.0).active_queues() or {}
            except Exception:
                continue
            self._serving = {}
            for node, queues in replies.items():
                for queue in queues or []:
                    self._serving.setdefault(str(queue.get("name")), set()).add(node)
            alive = set(replies)
            with self._lock:
                running = [f for f in self._flights.values() if f.started and f.hostname]
            for flight in running:
                node = str(flight.hostname)
                if node in alive:
                    self._missed.pop(node, None)
                    continue
                self._missed[node] = self._missed.get(node, 0) + 1
                if self._missed[node] >= LOST_AFTER_MISSED_PINGS:
                    self._lost(flight, node)

    def _lost(self, flight: _Flight, node: str) -> None:
        with self._lock:
            if self._flights.pop(flight.celery_id, None) is None:
                return
        with contextlib.suppress(Exception):
            expiry = int(visibility_timeout() * 2 + 3600)
            self.app.backend.client.set(SUPERSEDED_KEY + flight.celery_id, "1", ex=expiry)
            self.app.control.revoke(flight.celery_id)
        flight.lost += 1
        flight.lost_on = node
        name = _short(node)
        if flight.lost > self.lost_retries:
            _settle(
                flight,
                _failure(
                    flight,
                    f"worker {name} was lost while running it "
                    f"({flight.lost} time{'s' if flight.lost > 1 else ''})",
                    worker=name,
                ),
            )
            return
        log.warning("worker %s was lost running %s; sending it again", name, flight.celery_id)
        self._send(flight)


def _failure(flight: _Flight, error: str, worker: str | None = None) -> OperationResult:
    return OperationResult(
        success=False,
        modified=None,
        error=error,
        worker=worker or _short(flight.hostname or flight.lost_on) or "celery",
    )


def _short(node: str | None) -> str:
    """``web-1@host`` -> ``web-1``: the name ``unfurl worker --name`` was given."""
    return (node or "").partition("@")[0]


def _settle(flight: _Flight, result: OperationResult) -> None:
    if not flight.future.done():
        flight.future.set_result(result)
