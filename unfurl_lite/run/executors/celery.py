"""Distributed execution: operations run on Celery workers, fed through a Redis broker.

The job process (the controller) keeps everything the local executor's job keeps: the
ensemble, the lock, the journal, git and every status decision. A worker only runs one
operation and sends back an :class:`OperationResult`. Requests and results travel as
JSON, never pickle, with secret strings marked (wire.py); task arguments are never shown
in Celery's logs, and no message carries the broker's URL.

The controller waits on a reply list of its own in Redis (BLPOP, no polling): a worker
pushes ``started`` when it starts a task and the result when it ends. Celery's own result
for the task is a redacted summary (FAILURE for a failed operation), for Flower and
``celery inspect``. While it runs a task, a worker holds a lease on it in Redis; a copy
of the message delivered again while the lease is alive does not start a second run.

Nothing waits forever (docs/distributed.md lists every failure and its bound): a queue
no live worker serves fails its tasks after ``queue_timeout``; a started task whose lease
lapses (its worker died, or the broker restarted and nobody claims it) is sent again up
to ``lost_retries`` times, then failed; after a broker restart, tasks not yet started are
sent again; a broker that stays unreachable for ``BROKER_DOWN_SECONDS`` fails what is in
flight. Every task the controller stops waiting for is revoked and marked given up, and
when the job ends it is marked ended, so a worker that receives a message later drops it.

This module is also the Celery app: ``celery -A unfurl_lite.run.executors.celery worker``.
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
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from celery import Celery, signals
from celery.concurrency.thread import TaskPool as _CeleryThreadPool

from unfurl_lite import __version__
from unfurl_lite.errors import JobError
from unfurl_lite.run.executors.wire import (
    decode,
    decode_request,
    decode_result,
    encode,
    encode_request,
    encode_result,
)
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.routing import DEFAULT_QUEUE
from unfurl_lite.security.redaction import REDACTED, redact_text
from unfurl_lite.security.taint import Sensitive

__all__ = ["decode", "decode_request", "decode_result", "encode", "encode_request",
           "encode_result"]

#: bumped whenever the task message or the reply changes shape; a controller never sends
#: to a worker speaking another one
PROTOCOL = 2
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
TASK_NAME = "unfurl_lite.run_operation"
PREFIX = "unfurl-lite:"
SUPERSEDED_KEY = PREFIX + "superseded:"  # + Celery id: the controller gave up on it
ENDED_KEY = PREFIX + "ended:"  # + job key: the job has ended
LEASE_KEY = PREFIX + "lease:"  # + job key + changeId: held by the run in progress
WORKER_KEY = PREFIX + "worker:"  # + Celery node name: version, protocol, queues
WORKER_NAME_ENV = "UNFURL_WORKER_NAME"
PROTOCOL_ENV = "UNFURL_WORKER_PROTOCOL"  # a worker speaking another protocol (for tests)
BROKER_ENV = ("UNFURL_BROKER", "UNFURL_BACKEND", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
REDACTED_ARGS = f"({REDACTED},)"
SWEEP_SECONDS = 1.0
PING_SECONDS = 2.0
LOST_AFTER_MISSED_PINGS = 3
HEARTBEAT_SECONDS = 2.0
LEASE_SECONDS = 6.0
BROKER_DOWN_SECONDS = 30.0
REPLY_DELIVERY_SECONDS = 60.0
REPLY_TTL_SECONDS = 24 * 3600
#: a reply waits on a thread that wants the GIL: hand it over sooner than Python's 5 ms
SWITCH_INTERVAL = 0.0005

log = logging.getLogger(__name__)


# -- the Celery app (shared by the controller and the workers)


def _patch_kombu() -> None:
    """kombu's Redis channel, closed after the broker went away, raises AttributeError
    (not a connection error) when it is asked to ack or restore; Celery's consumer calls
    that unrecoverable and the worker exits. Make it the connection error it is, so the
    consumer reconnects (the message is restored or sent again: at least once)."""
    import redis
    from kombu.transport import redis as kombu_redis

    original = kombu_redis.Channel._connparams
    if getattr(original, "_unfurl_patched", False):
        return

    def _connparams(self: Any, asynchronous: bool = False) -> Any:
        if getattr(self.connection, "client", None) is None:
            raise redis.exceptions.ConnectionError("the broker connection was closed")
        return original(self, asynchronous)

    _connparams._unfurl_patched = True  # type: ignore[attr-defined]
    kombu_redis.Channel._connparams = _connparams  # type: ignore[method-assign]


_patch_kombu()


def broker_url(broker: str | None = None) -> str:
    return broker or os.environ.get("UNFURL_BROKER") or DEFAULT_BROKER


def visibility_timeout() -> float:
    return float(os.environ.get("UNFURL_VISIBILITY_TIMEOUT") or 3600)


def protocol() -> int:
    return int(os.environ.get(PROTOCOL_ENV) or PROTOCOL)


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
        task_track_started=False,  # the worker tells the controller itself (reply list)
        task_default_queue=DEFAULT_QUEUE,
        result_expires=3600,
        result_extended=False,
        worker_pool="unfurl_lite.run.executors.celery:ThreadPool",
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_send_task_events=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        broker_connection_timeout=3.0,
        broker_transport_options={
            "visibility_timeout": visibility_timeout(),
            # kombu scans for messages past the visibility timeout every interval x
            # throttle seconds: every few seconds, so the timeout means what it says
            "unacked_restore_interval": max(1, min(5, int(visibility_timeout() / 2))),
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": 3.0,
            "retry_on_timeout": True,
        },
        redis_socket_connect_timeout=3.0,
        redis_socket_timeout=10.0,
        redis_retry_on_timeout=True,
        redis_backend_health_check_interval=5,
    )
    app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
             throws=(OperationFailed,))(
        _run_on_worker
    )
    return app


def worker_name(hostname: str | None) -> str:
    """What UNFURL_WORKER and the records call a worker: ``unfurl worker --name``."""
    return os.environ.get(WORKER_NAME_ENV) or (hostname or "celery")


def without_broker(env: dict[str, str], url: str | None) -> dict[str, str]:
    """``env`` without the broker's settings or anything that contains its URL or password."""
    secrets = {s for s in (url, urlsplit(url).password if url else None) if s}
    return {k: v for k, v in env.items()
            if k not in BROKER_ENV and not any(s in str(v) for s in secrets)}


# -- the worker's side

_worker_broker: str | None = None  # set by ``unfurl worker`` / the worker_init handler
_watchdog: Any = None
_clients: dict[str, Any] = {}


class OperationFailed(Exception):
    """A failed operation, as Celery sees it (FAILURE); the message is redacted."""


def _client(url: str) -> Any:
    import redis

    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(
            url, socket_connect_timeout=3.0, socket_timeout=10.0, retry_on_timeout=True,
            health_check_interval=5)
    return client


def _run_on_worker(task: Any, payload: dict[str, Any]) -> dict[str, Any]:
    meta = payload.get("meta") or {}
    celery_id = str(task.request.id)
    node = str(task.request.hostname or socket.gethostname())
    worker = worker_name(task.request.hostname)
    client = _client(str(task.app.conf.result_backend or task.app.conf.broker_url))
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
        result = _run_here(request, meta.get("source") or {}, worker)
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


def _run_here(request: OperationRequest, source: dict[str, str], worker: str) -> OperationResult:
    from unfurl_lite.run.executors import checkout
    from unfurl_lite.run.operations import run_operation

    try:
        request.cwd = checkout.project_dir(source, request.cwd)
    except JobError as exc:
        return OperationResult(success=False, modified=False,
                               error=f"worker {worker} cannot get the project: {exc.message}")
    request.env = without_broker(request.env, _worker_broker)
    for name in ("HOME", "PATH", "USER", "LOGNAME", "TMPDIR", "SHELL"):  # this machine's
        if name in os.environ:
            request.env[name] = os.environ[name]
    request.env["UNFURL_WORKER"] = worker
    try:  # Python operations too run in a process of their own, importing from request.cwd
        return run_operation(request)
    except Exception as exc:  # a bug or broken environment on this worker: the task fails
        return OperationResult(success=False, modified=None, error=f"{type(exc).__name__}")


def _watch(pid: int, running: bool) -> None:
    if _watchdog is not None:
        _watchdog.watch(pid, running)


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


@signals.task_revoked.connect
def _on_revoked(sender: Any = None, request: Any = None, terminated: bool = False,
                **kwargs: Any) -> None:
    if not terminated or request is None:
        return
    from unfurl_lite.run.operations import shell

    with contextlib.suppress(Exception):
        payload = (request.args or [{}])[0]
        change_id = ((payload.get("request") or {}).get("task_id"))
        if change_id:
            shell.terminate_tasks({str(change_id)})


@signals.worker_init.connect
def _on_worker_init(sender: Any = None, **kwargs: Any) -> None:
    """Keep the broker's URL out of every operation; start the watchdog."""
    global _worker_broker, _watchdog
    from unfurl_lite.run.executors.watchdog import Watchdog
    from unfurl_lite.run.operations import shell

    _worker_broker = _worker_broker or broker_url()
    sys.setswitchinterval(SWITCH_INTERVAL)
    for name in BROKER_ENV:
        os.environ.pop(name, None)
    _watchdog = Watchdog()
    shell.watch_processes = _watch


@signals.worker_ready.connect
def _on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    """Tell controllers and ``unfurl agents`` who we are, every few seconds."""
    with contextlib.suppress(Exception):
        node = str(sender.hostname)
        queues = sorted(q.name for q in sender.task_consumer.queues)
        client = _client(str(sender.app.conf.result_backend or sender.app.conf.broker_url))
        info = json.dumps({"node": node, "name": worker_name(node.partition("@")[0]),
                           "version": __version__, "protocol": protocol(), "queues": queues})

        def beat() -> None:
            while True:
                with contextlib.suppress(Exception):
                    client.set(WORKER_KEY + node, info, ex=int(HEARTBEAT_SECONDS * 3))
                time.sleep(HEARTBEAT_SECONDS)

        threading.Thread(target=beat, daemon=True, name="unfurl-heartbeat").start()


@signals.after_setup_logger.connect
def _quiet_results(**kwargs: Any) -> None:
    """Celery logs a task's return value on success: ours may carry command output."""
    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)


app = make_app()


def live_workers(client: Any) -> dict[str, dict[str, Any]]:
    """Celery node name -> what the worker said of itself (version, protocol, queues)."""
    keys = list(client.scan_iter(match=WORKER_KEY + "*", count=1000))
    workers: dict[str, dict[str, Any]] = {}
    for _key, value in zip(keys, client.mget(keys) if keys else [], strict=True):
        with contextlib.suppress(ValueError, TypeError):
            info = json.loads(value)
            workers[str(info["node"])] = info
    return workers


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
            f"cannot reach the broker at {redacted_url(url)}: "
            f"{redact_text(str(exc), {url, urlsplit(url).password or url})}",
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
    sent: bool = False  # the broker took the message
    hostname: str | None = None  # the Celery node running it, once started
    started: bool = False
    lease_missing_since: float | None = None
    lost: int = 0  # times its worker died under it
    lost_on: str | None = None  # the Celery node that last died under it
    withdrawn: bool = False  # soft cancel revoked it before a worker started it
    nodes: list[str] = field(default_factory=list)  # every node that started a run of it


class CeleryExecutor:
    name = "celery"

    def __init__(self, jobs: int = 0, **options: Any) -> None:
        """Options: broker, backend (default: the broker), queue_timeout (seconds a task
        may wait on a queue no live worker serves), lost_retries (sends after a worker
        died under the task); each also read from UNFURL_BROKER, UNFURL_QUEUE_TIMEOUT..."""
        import redis

        url = self.url = broker_url(options.get("broker"))
        check_broker(url)
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.app = make_app(url, options.get("backend"))
        backend_url = str(self.app.conf.result_backend or url)
        self.client = redis.Redis.from_url(backend_url, socket_connect_timeout=2.0,
                                           socket_timeout=5.0)
        self._listener_client = redis.Redis.from_url(backend_url, socket_connect_timeout=2.0,
                                                     socket_timeout=5.0)
        self.queue_timeout = float(
            options.get("queue_timeout") or os.environ.get("UNFURL_QUEUE_TIMEOUT") or 300.0
        )
        lost = options.get("lost_retries")
        self.lost_retries = int(lost if lost is not None else os.environ.get(
            "UNFURL_LOST_RETRIES") or 1)
        self.broker_down = float(os.environ.get("UNFURL_BROKER_TIMEOUT") or BROKER_DOWN_SECONDS)
        self.on_started: Any = None
        self.secrets: set[str] = set()  # the job's, set by the job: redacted from results
        self.job_key = uuid.uuid4().hex
        self.reply_key = PREFIX + "replies:" + self.job_key
        self._sources: dict[str, dict[str, str]] = {}
        self._flights: dict[str, _Flight] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._missed: dict[str, int] = {}
        self._workers: dict[str, dict[str, Any]] = {}
        self._serving: dict[str, set[str]] = {}  # queue -> live Celery nodes consuming it
        self._run_id = self._server_run_id()
        self._down_since: float | None = None
        with contextlib.suppress(Exception):
            self._refresh_workers()
        self._threads = [
            threading.Thread(target=self._listen, name="unfurl-replies", daemon=True),
            threading.Thread(target=self._sweep, name="unfurl-sweep", daemon=True),
            threading.Thread(target=self._ping, name="unfurl-ping", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- Executor protocol

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        future: Future[OperationResult] = Future()
        flight = _Flight(request, future, self._payload(request), request.queue or DEFAULT_QUEUE)
        refusal = self._refusal(flight.queue)
        if refusal:
            _settle(flight, OperationResult(success=False, modified=False, worker="celery",
                                            error=refusal))
            return future
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
            self._give_up([f.celery_id for f in waiting])

    def kill_running(self) -> None:
        """Kill-cancel: revoke every task in flight; running ones are terminated."""
        with self._lock:
            ids = [f.celery_id for f in self._flights.values()]
        if ids:
            with contextlib.suppress(Exception):
                self.app.control.revoke(ids, terminate=True, signal="SIGTERM")

    def shutdown(self) -> None:
        self._stop.set()
        with self._lock:
            left = list(self._flights.values())
            self._flights.clear()
        with contextlib.suppress(Exception):
            self.client.set(ENDED_KEY + self.job_key, "1", ex=int(visibility_timeout() * 2 + 3600))
        if left:
            self._give_up([f.celery_id for f in left])
        for flight in left:
            _settle(flight, _failure(flight, "the job ended before the worker answered"))
        with contextlib.suppress(Exception):  # wake the listener from its BLPOP
            self.client.rpush(self.reply_key, json.dumps({"id": "", "event": "stop"}))
        for thread in self._threads:
            thread.join(timeout=6)
        with contextlib.suppress(Exception):
            self.client.delete(self.reply_key)
        with contextlib.suppress(Exception):
            self.app.close()

    # -- sending

    def _payload(self, request: OperationRequest) -> dict[str, Any]:
        request.env = without_broker(request.env, self.url)
        encoded = encode_request(request)
        text = json.dumps(encoded)
        return {
            "request": encoded,
            "meta": {
                "protocol": PROTOCOL,
                "version": __version__,
                "job": self.job_key,
                "change": request.task_id,
                "reply": self.reply_key,
                "source": self._source(request.cwd),
                "secrets": encode([Sensitive(s) for s in sorted(self.secrets) if s in text]),
            },
        }

    def _source(self, cwd: str) -> dict[str, str]:
        from unfurl_lite.run.executors import checkout

        if cwd not in self._sources:
            self._sources[cwd] = checkout.source_of(cwd)
        return self._sources[cwd]

    def _refusal(self, queue: str) -> str | None:
        others = [w for n in self._serving.get(queue, ()) if (w := self._workers.get(n))
                  and w.get("protocol") != PROTOCOL]
        if not others:
            return None
        worker = others[0]
        return (f"refused to send to queue {queue!r}: worker {worker.get('name')} runs "
                f"unfurl-lite {worker.get('version')} (protocol {worker.get('protocol')}), "
                f"this controller {__version__} (protocol {PROTOCOL}); "
                f"run the same unfurl-lite version on the controller and its workers")

    def _send(self, flight: _Flight) -> None:
        with self._lock:
            self._flights.pop(flight.celery_id, None)
            flight.celery_id = str(uuid.uuid4())
            flight.sent_at = time.monotonic()
            flight.hostname, flight.started, flight.sent = None, False, False
            flight.lease_missing_since = None
            self._flights[flight.celery_id] = flight
        try:
            self.app.send_task(
                TASK_NAME,
                args=[flight.payload],
                task_id=flight.celery_id,
                queue=flight.queue,
                argsrepr=REDACTED_ARGS,
                kwargsrepr="{}",
                retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
            )
            flight.sent = True
        except Exception as exc:  # the broker is away: the sweep sends it when it is back
            log.warning("could not send %s: %s", flight.celery_id, exc)

    def _give_up(self, ids: list[str]) -> None:
        """Revoke tasks the controller no longer waits for; a worker receiving one of
        them later (it missed the revoke) finds it marked and drops it."""
        expiry = int(visibility_timeout() * 2 + 3600)
        with contextlib.suppress(Exception), self.client.pipeline() as pipe:
            for celery_id in ids:
                pipe.set(SUPERSEDED_KEY + celery_id, "1", ex=expiry)
            pipe.execute()
        with contextlib.suppress(Exception):
            self.app.control.revoke(ids)

    # -- waiting

    def _listen(self) -> None:
        """Replies, as they come (BLPOP: no polling)."""
        while not self._stop.is_set():
            try:
                item = self._listener_client.blpop([self.reply_key], timeout=1)
            except Exception:
                self._stop.wait(0.2)
                continue
            if not item:
                continue
            with contextlib.suppress(ValueError, TypeError, KeyError):
                self._reply(json.loads(item[1]))

    def _reply(self, message: dict[str, Any]) -> None:
        with self._lock:
            flight = self._flights.get(str(message["id"]))
        if flight is None:
            return
        if message.get("event") == "started":
            self._mark_started(flight, str(message.get("node") or ""))
        elif message.get("event") == "done":
            self._mark_started(flight, str(message.get("node") or ""))
            self._finish(flight, decode_result(message.get("result") or {}))

    def _mark_started(self, flight: _Flight, node: str) -> None:
        if flight.started:
            return
        flight.started, flight.hostname = True, node or flight.hostname
        flight.nodes.append(_short(node))
        if self.on_started is not None:
            self.on_started(flight.request.task_id)

    def _sweep(self) -> None:
        """Once a second: broker restarts, unsent tasks, lapsed leases, queue timeouts."""
        while not self._stop.wait(SWEEP_SECONDS):
            with self._lock:
                flights = list(self._flights.values())
            try:
                run_id = self._server_run_id()
                if run_id != self._run_id:
                    self._run_id = run_id
                    self._restarted(flights)
                if flights:
                    self._check(flights)
                self._down_since = None
            except Exception as exc:
                self._down_since = self._down_since or time.monotonic()
                if time.monotonic() - self._down_since > self.broker_down:
                    for flight in flights:
                        self._finish(flight, _failure(
                            flight, f"lost the broker for more than {self.broker_down:g} s: "
                            f"{redact_text(str(exc), {self.url})}"))

    def _server_run_id(self) -> str:
        return str(self.client.info("server").get("run_id"))

    def _restarted(self, flights: list[_Flight]) -> None:
        """The broker restarted: what was queued may be gone, so send it again (a worker
        drops the first copy, if it survived, by its lease)."""
        log.warning("the broker restarted; sending again the tasks not yet started")
        for flight in flights:
            if not flight.started:
                self._give_up([flight.celery_id])
                self._send(flight)

    def _check(self, flights: list[_Flight]) -> None:
        now = time.monotonic()
        for flight in flights:
            if not flight.sent:
                self._send(flight)
        started = [f for f in flights if f.started]
        if started:
            keys = [LEASE_KEY + self.job_key + ":" + f.request.task_id for f in started]
            for flight, held in zip(started, self.client.mget(keys), strict=True):
                if held and not _text(held).endswith(" done"):  # done: its reply is due
                    flight.lease_missing_since = None
                    continue
                flight.lease_missing_since = flight.lease_missing_since or now
                if now - flight.lease_missing_since > LEASE_SECONDS:
                    self._lost(flight, flight.hostname or "")
        waiting = [f for f in flights if not f.started and f.sent]
        if not waiting:
            return
        backend = self.app.backend
        values = self.client.mget([backend.get_key_for_task(f.celery_id) for f in waiting])
        for flight, value in zip(waiting, values, strict=True):
            state = (backend.decode_result(value) if value else {}).get("status", "PENDING")
            if state == "REVOKED" and flight.withdrawn:
                self._finish(flight, OperationResult(
                    success=False, modified=False, worker="celery",
                    error="cancelled before a worker started it"))
            elif state == "REVOKED":
                self._finish(flight, _failure(flight, "cancelled: the task was revoked"))
            elif state == "FAILURE":
                self._finish(flight, _failure(flight, "the worker could not run the operation"))
            elif (state == "PENDING" and now - flight.sent_at > self.queue_timeout
                  and not self._serving.get(flight.queue)):
                self._give_up([flight.celery_id])
                self._finish(flight, _failure(
                    flight,
                    (f"worker {_short(flight.lost_on)} was lost while running it and "
                     if flight.lost_on else "")
                    + f"no live worker serves queue {flight.queue!r} "
                    f"(waited {self.queue_timeout:g} s); start one with: "
                    f"unfurl worker --name {flight.queue} --queue {flight.queue}"))

    def _finish(self, flight: _Flight, result: OperationResult) -> None:
        with self._lock:
            if self._flights.pop(flight.celery_id, None) is None:
                return
        if len(flight.nodes) > 1:
            runs = ", ".join(flight.nodes)
            result.outputs = {**result.outputs, "runs": flight.nodes}
            if result.error:
                result.error += f" (runs: {runs})"
        _settle(flight, result)

    def _refresh_workers(self) -> None:
        self._workers = live_workers(self.client)
        serving: dict[str, set[str]] = {}
        for node, info in self._workers.items():
            for queue in info.get("queues") or []:
                serving.setdefault(str(queue), set()).add(node)
        self._serving = serving

    def _ping(self) -> None:
        """Which workers are alive (their heartbeats) and what they serve; resend what a
        dead one held."""
        while not self._stop.wait(PING_SECONDS):
            try:
                self._refresh_workers()
            except Exception:
                continue
            alive = set(self._workers)
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
            if self._flights.get(flight.celery_id) is not flight:
                return
        self._give_up([flight.celery_id])
        flight.lost += 1
        flight.lost_on = node
        name = _short(node)
        if flight.lost > self.lost_retries:
            with self._lock:
                self._flights.pop(flight.celery_id, None)
            _settle(flight, _failure(
                flight,
                f"worker {name} was lost while running it "
                f"({flight.lost} time{'s' if flight.lost > 1 else ''})",
                worker=name))
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


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _short(node: str | None) -> str:
    """``web-1@host`` -> ``web-1``: the name ``unfurl worker --name`` was given."""
    return (node or "").partition("@")[0]


def _settle(flight: _Flight, result: OperationResult) -> None:
    if not flight.future.done():
        flight.future.set_result(result)
