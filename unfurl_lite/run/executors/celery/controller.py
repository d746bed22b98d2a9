"""The controller's side: the executor a job process uses to run operations on workers.

The job process keeps everything the local executor's job keeps: the ensemble, the lock,
the journal, git and every status decision. It waits on its lineage's reply list in Redis
(BLPOP, no polling) where workers push ``started``, the result, or why they dropped a
message. Celery's own result for the task is a redacted summary (FAILURE for a failed
operation), for Flower and ``celery inspect``.

Which copy of a task may run is decided in Redis by the scripts of :mod:`.lineage`, the
same for the controller and its workers. Nothing waits forever (docs/distributed.md lists
every failure and its bound): a queue no live worker serves fails its tasks after
``queue_timeout``; a started task whose lease lapses is sent again up to ``lost_retries``
times, unless another copy holds the lease, which is then adopted; after a broker restart
the tasks not yet started are sent again; a broker unreachable for ``BROKER_DOWN_SECONDS``
fails what is in flight. A job's ``alive`` key lapses within ``JOB_ALIVE_SECONDS`` of its
end however it ends, so no worker starts one of its tasks afterwards.
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
from typing import Any

import unfurl_lite.run.executors.celery.credentials as credentials
import unfurl_lite.run.executors.celery.lineage as lineage
from unfurl_lite.model.routing import DEFAULT_QUEUE
from unfurl_lite.run.executors.celery.application import (
    BROKER_DOWN_SECONDS,
    DEADLINE_SECONDS,
    JOB_ALIVE_SECONDS,
    LEASE_SECONDS,
    PING_SECONDS,
    PROTOCOL,
    SWEEP_SECONDS,
    SWITCH_INTERVAL,
    broker_url,
    check_broker,
    keep_seconds,
    redacted_url,
    without_broker,
)
from unfurl_lite.run.executors.celery.factory import make_app
from unfurl_lite.run.executors.celery.flights import (
    Flight,
    WorkerView,
    failure,
    not_run,
    settle,
    short,
)
from unfurl_lite.run.executors.celery.messages import publish
from unfurl_lite.run.executors.checkout import source_of, without_password
from unfurl_lite.run.executors.wire import decode_result, encode, encode_request
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.security.redaction import redact_text
from unfurl_lite.security.taint import Sensitive

log = logging.getLogger(__name__)
DROP_LIMIT = 3  # copies of one task workers may drop (job looked ended...) before it fails
NOTICE_SECONDS = 5.0  # how often a job waiting for a worker says so


class CeleryExecutor:
    name = "celery"
    capacity: int | None = None  # workers take what they can; the queue holds the rest
    starts_on_submit = False  # a worker says when it starts
    flushes_before_start = False  # sent from the job's thread: the job writes first
    before_start: Callable[[], None] | None = None

    def __init__(self, jobs: int = 0, **options: Any) -> None:
        """Options: broker, backend (default: the broker), queue_timeout (seconds a task
        may wait on a queue no live worker serves), lost_retries (sends after a worker
        died under the task), each also read from UNFURL_BROKER, UNFURL_QUEUE_TIMEOUT...;
        lineage, ended, adopt and force (a resumed job: its lineage, the job keys it takes
        over, and the tasks that were in flight when they died: adopted if a copy runs or
        left a result, sent if none ever started, and if one started and died, failed as
        interrupted unless ``force``)."""
        import redis  # optional: redis (distributed extra, 127 modules), off controller's import

        # start-up: __version__ reads the package's metadata when first asked
        from unfurl_lite import __version__

        url = self.url = broker_url(options.get("broker"))
        check_broker(url)
        if "command line" in credentials.exposed(url):
            log.warning("warning: the broker's password is on the command line, where every "
                        "user of this machine can read it (ps); set %s instead",
                        credentials.PASSWORD_FILE_ENV)
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.version = __version__
        self.app = make_app(url, options.get("backend"))  # for revoke (control commands)
        backend_url = str(self.app.conf.result_backend or url)
        self.client = redis.Redis.from_url(backend_url, socket_connect_timeout=2.0,
                                           socket_timeout=5.0)
        self._listener_client = redis.Redis.from_url(backend_url, socket_connect_timeout=2.0,
                                                     socket_timeout=5.0)
        self.scripts = lineage.Scripts(self.client)
        self.queue_timeout = float(
            options.get("queue_timeout") or os.environ.get("UNFURL_QUEUE_TIMEOUT") or 300.0
        )
        lost = options.get("lost_retries")
        self.lost_retries = int(lost if lost is not None else os.environ.get(
            "UNFURL_LOST_RETRIES") or 1)
        self.broker_down = float(os.environ.get("UNFURL_BROKER_TIMEOUT") or BROKER_DOWN_SECONDS)
        self.on_started: Callable[[str], None] | None = None
        self.on_notice: Callable[[str], None] | None = None
        self.secrets: set[str] = set()  # the job's, set by the job: redacted from results
        self.job_key = uuid.uuid4().hex
        self.lineage = str(options.get("lineage") or self.job_key)
        self.resumed = bool(options.get("lineage"))
        self.adopt = {int(n) for n in options.get("adopt") or ()}
        self.force = bool(options.get("force"))
        self._consumed: list[str] = []  # result keys taken: deleted on the next sweep
        self.reply_key = lineage.REPLIES_KEY + self.lineage
        self.record = {"executor": "celery", "broker": without_password(url),
                       "lineage": self.lineage, "job": self.job_key}
        self._sources: dict[str, dict[str, str]] = {}
        self._warned: set[str] = set()  # queues whose fresh-checkout workers were named
        self._flights: dict[int, Flight] = {}  # by task number
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.workers = WorkerView(self.client)
        self._run_id = self._server_run_id()
        self._alive_until = 0.0
        self._down_since: float | None = None
        self._keep_alive()
        for job in options.get("ended") or ():  # the dead jobs this one takes over
            with self.client.pipeline() as pipe:
                pipe.set(lineage.ENDED_KEY + str(job), "1", ex=keep_seconds())
                pipe.delete(lineage.ALIVE_KEY + str(job))
                pipe.execute()
        with contextlib.suppress(Exception):
            self.workers.refresh()
        self._threads = [
            threading.Thread(target=self._listen, name="unfurl-replies", daemon=True),
            threading.Thread(target=self._sweep, name="unfurl-sweep", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- Executor protocol

    def submit(self, request: OperationRequest) -> Future[OperationResult]:
        future: Future[OperationResult] = Future()
        flight = Flight(request, future, {}, request.queue or DEFAULT_QUEUE, request.number)
        flight.payload = self._payload(request)
        refusal = self.workers.refusal(flight.queue, self.version)
        if refusal:
            settle(flight, not_run(refusal))
            return future
        with self._lock:
            self._flights[flight.number] = flight
        self._send(flight, claim=self.resumed)
        self._warn_fresh_checkouts(flight)
        return future

    def _warn_fresh_checkouts(self, flight: Flight) -> None:
        """Once per queue: say which workers run the project in a fresh checkout, where
        what operations write in the project directory is not kept between jobs."""
        if flight.queue in self._warned or self.on_notice is None:
            return
        self._warned.add(flight.queue)
        names = self.workers.fresh_checkouts(flight.queue, flight.payload["meta"]["source"])
        if names:
            self.on_notice(
                f"worker(s) {', '.join(names)} of queue {flight.queue!r} run this project in "
                "a fresh checkout of each commit: files operations leave in the project "
                "directory there are not kept between jobs; start them in a clone of the "
                "project to keep them (docs/distributed.md, On several machines)")

    def withdraw_pending(self) -> None:
        """Soft cancel: the tasks still waiting on a queue are given up, so no worker
        starts them; the ones already started finish. A task a worker starts before the
        give-up reaches Redis simply runs and reports as usual."""
        with self._lock:
            waiting = [f for f in self._flights.values() if not f.started]
        for flight in waiting:
            flight.withdrawn = True
        for flight in self._given_up_unstarted(waiting):
            self._finish(flight, not_run("cancelled before a worker started it"))

    def kill_running(self) -> None:
        """Kill-cancel: revoke every task in flight; running ones are terminated."""
        with self._lock:
            ids = [f.celery_id for f in self._flights.values() if f.celery_id]
        if ids:
            with contextlib.suppress(Exception):
                self.app.control.revoke(ids, terminate=True, signal="SIGTERM")

    def shutdown(self) -> None:
        """The job has ended: no copy of its tasks may start from now on. If the broker
        cannot be told, wait until the job's ``alive`` key has lapsed by itself."""
        self._stop.set()
        with self._lock:
            left = list(self._flights.values())
            self._flights.clear()
        told = False
        with contextlib.suppress(Exception), self.client.pipeline() as pipe:
            if self._consumed:
                pipe.delete(*self._consumed)
            pipe.set(lineage.ENDED_KEY + self.job_key, "1", ex=keep_seconds())
            pipe.delete(lineage.ALIVE_KEY + self.job_key)
            pipe.rpush(self.reply_key, json.dumps({"id": "", "event": "stop"}))
            pipe.execute()
            told = True
        self._give_up(left)
        for flight in left:
            settle(flight, failure(flight, "the job ended before the worker answered"))
        for thread in self._threads:
            thread.join(timeout=6)
        with contextlib.suppress(Exception):
            self.client.delete(self.reply_key)  # a resumed job adopts through results
        if not told:
            wait = self._alive_until - time.time()
            if wait > 0:
                log.warning("the broker cannot be told that the job ended: waiting %.0f s "
                            "until no worker can start one of its tasks", wait)
                time.sleep(wait)
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
                "version": self.version,
                "job": self.job_key,
                "lineage": self.lineage,
                "number": request.number,
                "change": request.task_id,
                "reply": self.reply_key,
                "source": self._source(request.cwd),
                "secrets": encode([Sensitive(s) for s in sorted(self.secrets) if s in text]),
            },
        }

    def _source(self, cwd: str) -> dict[str, str]:
        """Where the job's project is, once per directory; its commit is published to
        the broker then, for workers that do not have it (see bundles.py)."""
        # start-up: keeps run.executors.celery.bundles off controller's import until _source() runs
        from unfurl_lite.run.executors.celery.bundles import publish

        if cwd not in self._sources:
            source = self._sources[cwd] = source_of(cwd)
            if source.get("commit") and source.get("root"):
                try:
                    warning = publish(self.client, source["top"], source["commit"],
                                      source["root"])
                except Exception as exc:  # workers may still fetch it from the URL
                    warning = f"could not publish the job's commit to the broker: {exc}"
                if warning and self.on_notice is not None:
                    self.on_notice(warning)
        return self._sources[cwd]

    def _send(self, flight: Flight, claim: bool = False) -> None:
        """Send a copy of the task. ``claim``: other copies may exist (a resumed job, a
        copy sent again): ask Redis first, which makes this copy the current one, or
        hands over the copy that runs (adopted) or the result that nobody took."""
        celery_id = str(uuid.uuid4())
        key = lineage.task_key(self.lineage, flight.number)
        if claim:
            try:
                adopting = flight.number in self.adopt  # in flight when its job died
                self.adopt.discard(flight.number)
                verdict, value = self.scripts.claim(
                    keys=[lineage.LEASE_KEY + key, lineage.CURRENT_KEY + key,
                          lineage.RESULT_KEY + key, lineage.STARTED_KEY + key],
                    args=[celery_id, "1" if adopting else "0", keep_seconds(),
                          "1" if adopting and not self.force else "0"])
            except Exception as exc:  # the broker is away: the sweep sends it when back
                log.warning("could not send task %s: %s", flight.number, exc)
                flight.sent, flight.unsent = False, True
                return
            verdict, value = lineage.text(verdict), lineage.text(value)
            if verdict == "running":
                return self._adopt(flight, value)
            if verdict == "lost":
                flight.lost = 1
                return self._finish(flight, failure(
                    flight, "interrupted: its worker stopped while the job was not running "
                    "(resume --force runs it again)"))
            if verdict == "result":
                message = json.loads(value)
                flight.celery_id = str(message.get("id") or "")
                self._mark_started(flight, str(message.get("node") or ""))
                return self._finish(flight, decode_result(message.get("result") or {}))
        flight.celery_id, flight.sent_at = celery_id, time.monotonic()
        flight.deadline = time.time() + max(DEADLINE_SECONDS, self.queue_timeout)
        flight.hostname, flight.started, flight.sent = None, False, False
        flight.lease_missing_since = flight.done_since = None
        flight.payload["meta"]["deadline"] = flight.deadline
        try:  # Celery's message, without kombu's producer (messages.py)
            publish(self.client, self.workers.celery_queue(flight.queue), celery_id,
                    flight.payload)
            flight.sent, flight.unsent = True, False
        except Exception as exc:  # the broker is away: the sweep sends it when it is back
            flight.unsent = True
            log.warning("could not send %s: %s", celery_id, exc)

    def _adopt(self, flight: Flight, holder: str) -> None:
        """A copy sent earlier (by a dead controller of this lineage, or before its worker
        looked lost) holds the lease: that run is this task's run."""
        celery_id, _, node = holder.partition(" ")
        flight.celery_id, flight.sent, flight.sent_at = celery_id, True, time.monotonic()
        flight.lease_missing_since = None
        self._mark_started(flight, node)

    def _given_up_unstarted(self, flights: list[Flight]) -> list[Flight]:
        """Give these up, and return those no copy of which had started: a copy that
        started before the give-up reached Redis holds the lease (the start is one
        atomic step), and runs on."""
        self._give_up(flights)
        if not flights:
            return []
        keys = [lineage.LEASE_KEY + lineage.task_key(self.lineage, f.number) for f in flights]
        try:
            held = self.client.mget(keys)
        except Exception:  # the broker is away: no copy can start either
            return flights
        unstarted: list[Flight] = []
        for flight, holder in zip(flights, held, strict=True):
            celery_id, _, node = lineage.text(holder).removesuffix(" done").partition(" ")
            if holder and celery_id == flight.celery_id:
                self._mark_started(flight, node)
            elif not flight.started:
                unstarted.append(flight)
        return unstarted

    def _give_up(self, flights: list[Flight]) -> None:
        """No copy of these tasks may start from now on (a worker that receives one finds
        it superseded and drops it), and Celery is told to revoke them."""
        if not flights:
            return
        with contextlib.suppress(Exception), self.client.pipeline() as pipe:
            for flight in flights:
                key = lineage.task_key(self.lineage, flight.number)
                pipe.set(lineage.CURRENT_KEY + key, lineage.NONE_WANTED, ex=keep_seconds())
            pipe.execute()
        ids = [f.celery_id for f in flights if f.celery_id]
        if ids:
            with contextlib.suppress(Exception):
                self.app.control.revoke(ids)

    # -- waiting

    def _listen(self) -> None:
        """Replies, as they come (BLPOP: no polling)."""
        while not self._stop.is_set():
            try:
                item = self._listener_client.blpop([self.reply_key], timeout=1)
            except Exception:  # the broker is away (any client error): listen again
                self._stop.wait(0.2)
                continue
            if not item:
                continue
            with contextlib.suppress(ValueError, TypeError, KeyError):
                self._reply(json.loads(item[1]))

    def _reply(self, message: dict[str, Any]) -> None:
        if message.get("n") is None:
            return
        with self._lock:
            flight = self._flights.get(int(message["n"]))
        if flight is None:
            return
        event, celery_id = message.get("event"), str(message.get("id") or "")
        if event == "started" and celery_id == flight.celery_id:
            self._mark_started(flight, str(message.get("node") or ""))
        elif event == "done":  # any copy's result is the task's, even a late one
            result = decode_result(message.get("result") or {})
            if not result.ran and celery_id != flight.celery_id:
                return  # an older copy that did not run: the current one may
            self._consumed.append(lineage.RESULT_KEY
                                  + lineage.task_key(self.lineage, flight.number))
            flight.celery_id = celery_id or flight.celery_id
            if result.ran:
                self._mark_started(flight, str(message.get("node") or ""))
            self._finish(flight, result)
        elif event == "dropped" and celery_id == flight.celery_id and not flight.started:
            self._dropped(flight, str(message.get("reason") or ""), str(message.get("node")))

    def _dropped(self, flight: Flight, reason: str, node: str) -> None:
        """A worker did not start this copy (the job looked ended to it, its deadline had
        passed, it could not reach the broker): send a fresh one, a few times."""
        flight.dropped += 1
        if flight.withdrawn or self._stop.is_set():
            return
        if flight.dropped > DROP_LIMIT:
            skew = " (is its clock ahead of this machine's?)" if reason == "deadline" else ""
            self._finish(flight, not_run(
                f"worker {short(node)} dropped it {flight.dropped} times: {reason}{skew}"))
            return
        self._send(flight, claim=True)

    def _mark_started(self, flight: Flight, node: str) -> None:
        if node and short(node) not in flight.nodes[-1:]:
            flight.nodes.append(short(node))
        flight.hostname = node or flight.hostname
        if flight.started:
            return
        flight.started = True
        if self.on_started is not None:
            self.on_started(flight.request.task_id)

    def _keep_alive(self) -> None:
        self.client.set(lineage.ALIVE_KEY + self.job_key, "1", px=int(JOB_ALIVE_SECONDS * 1000))
        self._alive_until = time.time() + JOB_ALIVE_SECONDS

    def _sweep(self) -> None:
        """Once a second: the job's alive key, broker restarts, unsent tasks, leases,
        queue timeouts, deadlines, and what workers serve."""
        last_ping = 0.0
        while not self._stop.wait(SWEEP_SECONDS):
            with self._lock:
                flights = list(self._flights.values())
            try:
                self._keep_alive()
                self._forget_consumed()
                run_id = self._server_run_id()
                if run_id != self._run_id:
                    self._run_id = run_id
                    self._restarted(flights)
                if time.monotonic() - last_ping >= PING_SECONDS:
                    last_ping = time.monotonic()
                    self.workers.refresh()
                if flights:
                    self._check(flights)
                self._down_since = None
            except Exception as exc:  # the broker is away: flights fail after broker_down
                self._down_since = self._down_since or time.monotonic()
                if time.monotonic() - self._down_since > self.broker_down:
                    for flight in flights:
                        self._finish(flight, failure(
                            flight, f"lost the broker for more than {self.broker_down:g} s: "
                            f"{redact_text(str(exc), {self.url})}"))

    def _forget_consumed(self) -> None:
        """Results this job has taken are no one else's to adopt (off the task's path:
        a resumed job adopts results only of tasks in flight when its job died)."""
        consumed, self._consumed = self._consumed, []
        if consumed:
            self.client.delete(*consumed)

    def _server_run_id(self) -> str:
        return str(self.client.info("server").get("run_id"))

    def _restarted(self, flights: list[Flight]) -> None:
        """The broker restarted: what was queued may be gone, so send it again (the first
        copy, if it survived, is no longer current and is dropped)."""
        log.warning("the broker restarted; sending again the tasks not yet started")
        self._keep_alive()
        for flight in flights:
            if not flight.started:
                self._send(flight, claim=True)

    def _check(self, flights: list[Flight]) -> None:
        now = time.monotonic()
        for flight in flights:
            if flight.unsent and not flight.started:
                self._send(flight, claim=True)
        started = [f for f in flights if f.started]
        if started:
            keys = [lineage.LEASE_KEY + lineage.task_key(self.lineage, f.number)
                    for f in started]
            for flight, held in zip(started, self.client.mget(keys), strict=True):
                self._check_lease(flight, lineage.text(held), now)
        waiting = [f for f in flights if not f.started and f.sent]
        for flight in waiting:
            self._check_waiting(flight, now)

    def _check_lease(self, flight: Flight, held: str, now: float) -> None:
        """A started task: alive while some copy holds its lease (the one that holds it
        is the one running: a message delivered again to another worker after its first
        worker died is adopted, never run a third time); lost when none has for
        LEASE_SECONDS; a done lease whose reply never came is read from its result."""
        if held and not held.endswith(" done"):
            flight.lease_missing_since = flight.done_since = None
            celery_id, _, node = held.partition(" ")
            if celery_id != flight.celery_id or node != flight.hostname:
                flight.celery_id = celery_id
                self._mark_started(flight, node)
            return
        if held:  # done: its reply is on its way, or was lost with a broker restart
            flight.done_since = flight.done_since or now
            if now - flight.done_since > LEASE_SECONDS:
                self._take_result(flight)
            return
        flight.lease_missing_since = flight.lease_missing_since or now
        if now - flight.lease_missing_since > LEASE_SECONDS:
            self._lost(flight, flight.hostname or "")

    def _take_result(self, flight: Flight) -> None:
        key = lineage.RESULT_KEY + lineage.task_key(self.lineage, flight.number)
        with self.client.pipeline() as pipe:
            pipe.get(key)
            pipe.delete(key)
            value, _ = pipe.execute()
        if value:
            self._reply(json.loads(value))
        else:
            self._finish(flight, failure(flight, "its worker ended it without a result"))

    def _check_waiting(self, flight: Flight, now: float) -> None:
        """A task sent and not yet started: say so every few seconds; fail it after the
        queue timeout if no live worker serves its queue; refresh it before its deadline
        if one does (a busy queue)."""
        waited = now - flight.sent_at
        serving = self.workers.serving(flight.queue)
        if waited > self.queue_timeout and not serving:
            if not self._given_up_unstarted([flight]):
                return  # a worker took it at the last moment: it runs
            lost = (f"worker {short(flight.lost_on)} was lost while running it and "
                    if flight.lost_on else "")
            message = (lost + f"no live worker serves queue {flight.queue!r} "
                       f"(waited {self.queue_timeout:g} s); start one with: "
                       f"{self.workers.start_hint(flight.queue)}")
            self._finish(flight, failure(flight, message))
            return
        if serving and time.time() > flight.deadline - max(30.0, self.queue_timeout / 2):
            self._send(flight, claim=True)
            return
        if waited >= NOTICE_SECONDS and now - flight.noticed_at >= NOTICE_SECONDS:
            flight.noticed_at = now
            if self.on_notice is not None:
                self.on_notice(self.workers.waiting_text(flight, waited, self.queue_timeout))

    def _finish(self, flight: Flight, result: OperationResult) -> None:
        with self._lock:
            if self._flights.get(flight.number) is not flight:
                return
            del self._flights[flight.number]
        if len(flight.nodes) > 1:
            runs = ", ".join(flight.nodes)
            result.outputs = {**result.outputs, "runs": flight.nodes}
            if result.error:
                result.error += f" (runs: {runs})"
        settle(flight, result)

    def _lost(self, flight: Flight, node: str) -> None:
        """No copy holds the lease of a started task: its worker died. Send it again (the
        script adopts a copy that took the lease meanwhile), up to lost_retries times."""
        with self._lock:
            if self._flights.get(flight.number) is not flight:
                return
        flight.lost += 1
        flight.lost_on = node
        name = short(node)
        if flight.lost > self.lost_retries:
            self._give_up([flight])
            self._finish(flight, failure(
                flight,
                f"worker {name} was lost while running it "
                f"({flight.lost} time{'s' if flight.lost > 1 else ''})",
                worker=name))
            return
        log.warning("worker %s was lost running task %s; sending it again", name,
                    flight.number)
        if self.on_notice is not None:
            self.on_notice(f"worker {name} was lost while running {flight.request.target}: "
                           f"{flight.request.operation}; sending it again")
        self._send(flight, claim=True)


__all__ = ["CeleryExecutor", "redacted_url"]  # redacted_url: for callers of this module
