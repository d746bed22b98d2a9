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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from celery import signals
from celery.concurrency.thread import TaskPool as _CeleryThreadPool
from celery.utils.nodenames import worker_direct

import unfurl_lite.run.executors.celery.lineage as lineage
from unfurl_lite.errors import JobError
from unfurl_lite.model.narrow import YAMLValue, new_dict, new_list
from unfurl_lite.run.executors.celery.application import (
    BROKER_ENV,
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    REPLY_DELIVERY_SECONDS,
    REPLY_TTL_SECONDS,
    SWITCH_INTERVAL,
    TASK_NAME,
    WORKER_KEY,
    keep_seconds,
    protocol,
    without_broker,
    worker_name,
    worker_version,
)
from unfurl_lite.run.executors.watchdog import Watchdog
from unfurl_lite.run.executors.wire import decode, decode_request, encode_result
from unfurl_lite.run.operations import ProcessTable, run_operation
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.operations.shell import Places
from unfurl_lite.security.redaction import redact_text
from unfurl_lite.security.taint import Sensitive

log = logging.getLogger(__name__)
RESULT_PREFIX = "celery-task-meta-"  # Celery's Redis result backend's keys
RESULT_EXPIRES = 3600  # the app's result_expires
KEEP_JOBS = 16  # jobs whose confined working directories a worker keeps


class OperationFailed(Exception):
    """A failed operation, as Celery sees it (FAILURE); the message is redacted.
    ``stored``: its FAILURE is already in the result backend (see :func:`run_task`)."""

    def __init__(self, message: str, stored: bool = False) -> None:
        super().__init__(message)
        self.stored = stored


@dataclass
class WorkerState:
    """What one worker process keeps while it serves: kept on its Celery app."""

    broker: str  # its URL never reaches an operation
    backend: str = ""  # where results and leases are kept (the broker unless told)
    watchdog: Any = None
    tasks: dict[str, ProcessTable] = field(default_factory=new_dict)  # Celery id -> its commands
    clients: dict[str, Any] = field(default_factory=new_dict)
    _scripts: dict[int, lineage.Scripts] = field(default_factory=new_dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    leases: dict[int, _Lease] = field(default_factory=new_dict)  # held, renewed by one thread
    _renewing: threading.Thread | None = None
    queues: list[str] = field(default_factory=new_list)  # the Celery queues its consumer takes
    _places: dict[str, Places] = field(default_factory=new_dict)  # by job, the newest last
    #: called with Celery's consumer when the worker is ready, before it says so (consumer.py)
    on_ready: list[Callable[[Any], None]] = field(default_factory=new_list)

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
            table.terminate()  # (and a command its task starts as it is revoked)

    def scripts(self, client: Any) -> lineage.Scripts:
        found = self._scripts.get(id(client))
        if found is None:
            found = self._scripts[id(client)] = lineage.Scripts(client)
        return found

    def hold(self, lease: _Lease) -> None:
        """Renew ``lease`` until it is let go: one thread renews every lease the worker
        holds (a thread per task cost more than the task's own Redis calls)."""
        with self.lock:
            self.leases[id(lease)] = lease
            if self._renewing is None:
                self._renewing = threading.Thread(target=self._renew, daemon=True,
                                                  name="unfurl-leases")
                self._renewing.start()

    def let_go(self, lease: _Lease) -> None:
        with self.lock:
            self.leases.pop(id(lease), None)

    def _renew(self) -> None:
        """Every lease held, renewed in one round trip (pipelined), so a slow or absent
        broker delays every lease by one attempt, not by one attempt per lease."""
        while True:
            time.sleep(LEASE_SECONDS / 4)
            with self.lock:
                held = list(self.leases.values())
            if held:
                with contextlib.suppress(Exception), \
                        held[0].client.pipeline(transaction=False) as pipe:
                    for lease in held:
                        lease.refresh(pipe)
                    pipe.execute()

    def places(self, job: str) -> Places:
        """The working directories a job's tasks have been confined to, as the local
        executor keeps them for its job: resolved once per job, not once per task (and
        again for the next job). The few newest jobs are kept."""
        with self.lock:
            found = self._places.pop(job, None) or Places()
            self._places[job] = found
            while len(self._places) > KEEP_JOBS:
                del self._places[next(iter(self._places))]
        return found

    def client(self, url: str) -> Any:
        import redis  # optional: redis (distributed extra, 96 modules), off worker's import

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
    app.unfurl_worker = WorkerState(broker, str(app.conf.result_backend or broker))
    app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
             throws=(OperationFailed,))(run_on_worker)
    signals.task_revoked.connect(_on_revoked, weak=False, dispatch_uid="unfurl-revoked")
    signals.worker_init.connect(_on_worker_init, weak=False, dispatch_uid="unfurl-init")
    signals.celeryd_after_setup.connect(_on_after_setup, weak=False, dispatch_uid="unfurl-queues")
    signals.worker_ready.connect(_on_worker_ready, weak=False, dispatch_uid="unfurl-ready")
    signals.after_setup_logger.connect(_quiet_results, weak=False, dispatch_uid="unfurl-log")


def run_on_worker(task: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """Celery's task body, for a message Celery's own consumer delivers (a worker's own
    consumer, consumer.py, runs :func:`run_task` itself)."""
    return run_task(state_of(task.app), payload, str(task.request.id),
                    str(task.request.hostname or socket.gethostname()))


def run_task(state: WorkerState, payload: dict[str, Any], celery_id: str, node: str,
             store: bool = False) -> dict[str, Any]:
    """Run one copy of a task if it may run: Celery's SUCCESS summary, or OperationFailed.
    ``store``: a copy that ran stores its outcome in Celery's result backend in the
    lease's last step (the caller stores the others: a summary with ``dropped``, or an
    OperationFailed not ``stored``)."""
    meta: dict[str, Any] = payload.get("meta") or {}
    worker = worker_name(node)
    client = state.client(state.backend)
    reply = str(meta.get("reply") or "")
    number = meta.get("number")
    base = {"id": celery_id, "n": number, "node": node}
    error = refusal(meta, worker)
    if error:
        refused = OperationResult(success=False, modified=False, error=error, worker=worker,
                                  ran=False)
        _push(client, reply, {**base, "event": "done", "result": encode_result(refused)})
        raise OperationFailed(error)
    deadline = float(meta.get("deadline") or 0)
    if deadline and time.time() > deadline:  # this machine's clock: no broker needed
        _push(client, reply, {**base, "event": "dropped", "reason": "deadline"}, once=True)
        return {"dropped": "its deadline passed before a worker took it", "worker": worker}
    lease = _Lease(client, state.scripts(client), meta, celery_id, node)
    verdict = lease.start(reply, json.dumps({**base, "event": "started"}))
    if verdict != "run":
        if verdict in ("ended", "unreachable"):  # the controller decides what comes next
            _push(client, reply, {**base, "event": "dropped", "reason": verdict}, once=True)
        return {"dropped": DROPPED.get(verdict, verdict), "worker": worker}
    state.hold(lease)
    request = decode_request(payload.get("request") or {})
    secrets = {str(s) for s in decode(meta.get("secrets") or [])}
    result = OperationResult(success=False, modified=None, worker=worker,
                             error="the worker stopped while running it")
    try:
        with state.commands_of(celery_id) as processes:
            result = _run_here(request, meta.get("source") or {}, worker, state, processes,
                               client, state.places(str(meta.get("job") or "")))
        result.worker = worker
        result = redact_result(result, secrets)
    finally:
        state.let_go(lease)
        stored = store and result.ran
        lease.finish(reply, json.dumps({**base, "event": "done",
                                        "result": encode_result(result)}), ran=result.ran,
                     outcome=outcome_record(celery_id, *_outcome(result, worker))
                     if stored else "")
    if not result.success:
        raise OperationFailed(result.error or "the operation failed", stored=stored)
    return _outcome(result, worker)[1]


def _outcome(result: OperationResult, worker: str) -> tuple[str, Any]:
    """Celery's status and result for a copy that ran."""
    if not result.success:
        return "FAILURE", exception_record(result.error or "the operation failed")
    return "SUCCESS", {"success": True, "worker": worker, "status": result.status,
                       "modified": result.modified}


def outcome_record(celery_id: str, status: str, result: Any) -> str:
    """A task's outcome as Celery's result backend keeps it (``AsyncResult(id).state``)."""
    return json.dumps({"status": status, "result": result, "traceback": None, "children": [],
                       "date_done": datetime.now(UTC).isoformat(), "task_id": celery_id})


def exception_record(message: str, kind: str = "OperationFailed",
                     module: str = __name__) -> dict[str, Any]:
    return {"exc_type": kind, "exc_message": [message], "exc_module": module}


DROPPED = {
    "ended": "its job has ended",
    "superseded": "the controller sent another copy of it",
    "duplicate": "the same message was delivered again",
    "unreachable": "the broker could not be reached to claim it",
}


def refusal(meta: dict[str, Any], worker: str) -> str | None:
    """A message from a controller of another protocol or unfurl-lite version."""
    theirs = (meta.get("protocol"), meta.get("version"))
    if theirs == (protocol(), worker_version()):
        return None
    return (f"worker {worker} runs unfurl-lite {worker_version()} (protocol {protocol()}), "
            f"the controller {theirs[1]} (protocol {theirs[0]}): run the same unfurl-lite "
            "version on the controller and its workers")


def _run_here(request: OperationRequest, source: dict[str, str], worker: str,
              state: WorkerState, processes: ProcessTable, client: Any,
              places: Places | None = None) -> OperationResult:
    # start-up: keeps run.executors.celery.bundles off worker's import until _run_here() runs
    import unfurl_lite.run.executors.celery.bundles as bundles
    import unfurl_lite.run.executors.checkout as checkout

    def fetch(repository: Path, commit: str) -> bool:
        return bundles.fetch(client, repository, commit, source.get("root") or "")

    try:
        with checkout.project_for(source, request.cwd, fetch) as directory:
            request.cwd = directory
            request.env = without_broker(request.env, state.broker)
            for name in ("HOME", "PATH", "USER", "LOGNAME", "TMPDIR", "SHELL"):  # this machine's
                if name in os.environ:
                    request.env[name] = os.environ[name]
            request.env["UNFURL_WORKER"] = worker
            try:  # Python operations run in a process of their own, importing from cwd
                return run_operation(request, processes, places)
            except Exception as exc:  # a bug or broken environment here: the task fails
                return OperationResult(success=False, modified=None,
                                       error=f"{type(exc).__name__}")
    except JobError as exc:
        return OperationResult(success=False, modified=False, ran=False,
                               error=f"worker {worker} did not run it: {exc.message}")


def redact_result(result: OperationResult, secrets: set[str]) -> OperationResult:
    """The result with every known secret out of its text (Sensitive values stay marked)."""
    if not secrets:
        return result

    def scrub(value: YAMLValue) -> Any:
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
        except Exception as exc:  # the broker is away: retried until the deadline
            if time.monotonic() > deadline:
                log.warning("could not deliver %s for %s: %s", message.get("event"),
                            message.get("id"), exc)
                return
            time.sleep(0.5)


class _Lease:
    """This run's claim on its task in its lineage (see lineage.py), renewed while it runs
    (and taken again after a broker restart that lost it) by the worker's renewing thread."""

    def __init__(self, client: Any, scripts: lineage.Scripts, meta: dict[str, Any],
                 celery_id: str, node: str) -> None:
        job = str(meta.get("job") or "")
        key = lineage.task_key(str(meta.get("lineage") or job), int(meta.get("number") or 0))
        self.client, self.scripts = client, scripts
        self.keys = [lineage.ALIVE_KEY + job, lineage.ENDED_KEY + job,
                     lineage.CURRENT_KEY + key, lineage.LEASE_KEY + key,
                     lineage.STARTED_KEY + key]
        self.result_key = lineage.RESULT_KEY + key
        self.celery_id = celery_id
        self.holder = f"{celery_id} {node}"

    def start(self, reply: str, started: str) -> str:
        """"run" (the lease is ours and the controller was told), or why not: another
        copy runs (wait for it: never two at once), or the broker is away (retried)."""
        deadline = time.monotonic() + REPLY_DELIVERY_SECONDS
        while True:
            try:
                verdict = lineage.text(self.scripts.start(
                    keys=self.keys, args=[self.celery_id, self.holder,
                                          int(LEASE_SECONDS * 1000), reply, started,
                                          REPLY_TTL_SECONDS, keep_seconds()]))
            except Exception:  # the broker is restarting: try again, never run unclaimed
                if time.monotonic() > deadline:
                    return "unreachable"
                time.sleep(0.5)
                continue
            if verdict != "busy":
                break
            time.sleep(0.5)
        return verdict

    def refresh(self, pipe: Any) -> None:
        """Keep the lease: queued on ``pipe`` by the worker's renewing thread."""
        self.scripts.refresh(keys=self.keys[3:4], args=[self.holder, int(LEASE_SECONDS * 1000)],
                             client=pipe)

    def finish(self, reply: str, done: str, ran: bool = True, outcome: str = "") -> None:
        """Mark the lease done (kept as long as a copy could still be delivered again),
        keep the result for a controller that has not seen it, reply, and store
        ``outcome`` (Celery's record of it) if given: one step, retried through a broker
        restart. An operation that never started (``ran`` False) gives the lease back
        instead: the task may be sent again."""
        keep = keep_seconds()
        deadline = time.monotonic() + REPLY_DELIVERY_SECONDS
        while True:
            try:
                if not ran:
                    self.scripts.unclaim(keys=[self.keys[3], self.keys[4]],
                                         args=[self.holder, reply, done, REPLY_TTL_SECONDS])
                    return
                self.scripts.finish(keys=[self.keys[3], self.result_key,
                                          RESULT_PREFIX + self.celery_id],
                                    args=[self.holder, done, done, keep, REPLY_TTL_SECONDS,
                                          reply, outcome, RESULT_EXPIRES])
                return
            except Exception as exc:  # the broker is away: retried until the deadline
                if time.monotonic() > deadline:
                    log.warning("could not deliver the result of %s: %s", self.celery_id, exc)
                    return
                time.sleep(0.5)


class ThreadPool(_CeleryThreadPool):
    """Celery's thread pool, with revoke(terminate=True) meaning: kill that task's command.

    Operations are subprocesses, so threads run them in parallel as the local executor's
    do; terminating one kills its command's process group (see the task_revoked handler).
    """

    def terminate_job(self, pid: int, signal: int | None = None) -> None:
        return None


def _on_after_setup(sender: Any = None, instance: Any = None, **kwargs: Any) -> None:
    """Serve each agent queue named (``-Q web-1``) through its Celery queue for this
    version (``web-1@v0.2.0-p3``): tasks of another version never reach this worker,
    and this worker never takes tasks meant for another version's workers. The worker's
    own consumer (consumer.py) takes them; Celery's consumes only the worker's direct
    queue (``NODE.dq2``), which no controller sends to."""
    # start-up: keeps run.executors.celery.flights off worker's import until _on_after_setup() runs
    from unfurl_lite.run.executors.celery.flights import VERSION_MARK, celery_queue

    queues = instance.app.amqp.queues
    names = list(queues.consume_from or {}) or [instance.app.conf.task_default_queue]
    state_of(instance.app).queues = [
        name if VERSION_MARK in name else celery_queue(name, worker_version(), protocol())
        for name in names]
    own = queues.select_add(worker_direct(instance.hostname))
    queues.select([own.name])


def _on_revoked(sender: Any = None, request: Any = None, terminated: bool = False,
                **kwargs: Any) -> None:
    if not terminated or request is None:
        return
    with contextlib.suppress(Exception):
        state_of(sender.app if sender is not None else request.app).terminate(str(request.id))


def _on_worker_init(sender: Any = None, **kwargs: Any) -> None:
    """Keep the broker's URL out of every operation; start the watchdog."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    for name in BROKER_ENV:
        os.environ.pop(name, None)
    state_of(sender.app).watchdog = Watchdog()


def _on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    """Start taking tasks (``on_ready``: the consumer); then tell controllers and ``unfurl
    agents`` who we are, every few seconds."""
    # start-up: keeps run.executors.celery.flights off worker's import until _on_worker_ready() runs
    from unfurl_lite.run.executors.celery.flights import agent_queue

    state = state_of(sender.app)
    node = str(sender.hostname)
    for start in state.on_ready:
        start(sender)
    with contextlib.suppress(Exception):
        queues = sorted({agent_queue(name) for name in state.queues})
        client = state.client(state.backend)
        # start-up: keeps run.executors.checkout off worker's import until _on_worker_ready() runs
        import unfurl_lite.run.executors.checkout as checkout

        info = json.dumps({"node": node, "name": worker_name(node.partition("@")[0]),
                           "version": worker_version(), "protocol": protocol(), "queues": queues,
                           "machine": checkout.machine_id(), "clone": checkout.own_clone_root(),
                           "project": os.environ.get(checkout.PROJECT_MODE_ENV, "auto")})

        def beat() -> None:
            while True:
                with contextlib.suppress(Exception):
                    client.set(WORKER_KEY + node, info, ex=int(HEARTBEAT_SECONDS * 3))
                time.sleep(HEARTBEAT_SECONDS)

        threading.Thread(target=beat, daemon=True, name="unfurl-heartbeat").start()


def _quiet_results(**kwargs: Any) -> None:
    """Celery logs a task's return value on success: ours may carry command output."""
    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
