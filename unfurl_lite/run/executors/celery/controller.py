"""The controller's side: the executor a job process uses to run operations on workers.

The job process keeps everything the local executor's job keeps: the ensemble, the lock,
the journal, git and every status decision. It waits on a reply list of its own in Redis
(BLPOP, no polling) where workers push ``started`` and the result. Celery's own result for
the task is a redacted summary (FAILURE for a failed operation), for Flower and ``celery
inspect``.

Nothing waits forever (docs/distributed.md lists every failure and its bound): a queue
no live worker serves fails its tasks after ``queue_timeout``; a started task whose lease
lapses (its worker died, or the broker restarted and nobody claims it) is sent again up
to ``lost_retries`` times, then failed; after a broker restart, tasks not yet started are
sent again; a broker that stays unreachable for ``BROKER_DOWN_SECONDS`` fails what is in
flight. Every task the controller stops waiting for is revoked and marked given up, and
when the job ends it is marked ended, so a worker that receives a message later drops it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from unfurl_lite import __version__
from unfurl_lite.run.executors.celery.application import (
    BROKER_DOWN_SECONDS,
    ENDED_KEY,
    LEASE_KEY,
    LEASE_SECONDS,
    LOST_AFTER_MISSED_PINGS,
    PING_SECONDS,
    PREFIX,
    PROTOCOL,
    REDACTED_ARGS,
    SUPERSEDED_KEY,
    SWEEP_SECONDS,
    SWITCH_INTERVAL,
    TASK_NAME,
    broker_url,
    check_broker,
    live_workers,
    visibility_timeout,
    without_broker,
)
from unfurl_lite.run.executors.celery.factory import make_app
from unfurl_lite.run.executors.wire import decode_result, encode, encode_request
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.routing import DEFAULT_QUEUE
from unfurl_lite.security.redaction import redact_text
from unfurl_lite.security.taint import Sensitive

log = logging.getLogger(__name__)


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
    capacity: int | None = None  # workers take what they can; the queue holds the rest

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
        self.on_started: Callable[[str], None] | None = None
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

    def abandon(self) -> None:
        """Force-cancel: the job stops waiting; what workers run goes on, and the tasks
        not yet started are given up (as at the end of any job)."""
        self.shutdown()

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
        from unfurl_lite.run.executors.checkout import source_of  # git: only for a first cwd

        if cwd not in self._sources:
            self._sources[cwd] = source_of(cwd)
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
            meta = backend.decode_result(value) if value else {}
            state = meta.get("status", "PENDING")
            # a worker that received the message before the revoke drops it unrun (it is
            # marked given up): Celery records that as a success with no reply of ours
            dropped = state == "SUCCESS" and isinstance(meta.get("result"), dict) \
                and "dropped" in meta["result"]
            if (state == "REVOKED" or dropped) and flight.withdrawn:
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
