"""The worker's own consumer of its task queues: it takes Celery's messages off their
Redis lists itself and runs each on a thread of its own.

Celery's consumer hands a message through its event loop, a request object, its pool and
its result store before our task body sees it, and acknowledges it afterwards: about 3 ms
of a worker's CPU per task, more than the task's own work when the operation is short.
This consumer does what those steps are for, with what a task already has (see
lineage.py): a thread takes a message (``BRPOP``) only when it is free, so a busy worker
holds nothing another could run; the task's lease decides whether the copy may run (never
two at once, nothing after its job ended, a copy delivered twice is dropped); the result
and the reply go back in the lease's one step. What it keeps of Celery's conventions:
the messages are Celery's (``celery -A ... worker`` with any pool runs them as well),
each outcome is stored in Celery's result backend (SUCCESS, FAILURE, REVOKED),
``revoke`` and ``revoke --terminate`` apply to its tasks (``unfurl cancel --kill``).

A message is off the list once taken: a worker killed between taking it and starting the
task (a few lines of Python) loses it, and its controller sends a fresh copy before the
message's deadline, as for any copy that was never started.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import signals
from celery.utils.log import get_logger

from unfurl_lite.run.executors.celery.application import TASK_NAME
from unfurl_lite.run.executors.celery.messages import parse
from unfurl_lite.run.executors.celery.worker import (
    RESULT_EXPIRES,
    RESULT_PREFIX,
    OperationFailed,
    WorkerState,
    exception_record,
    outcome_record,
    run_task,
    state_of,
)

log = get_logger(__name__)  # in the worker's log, as Celery's own lines
POP_SECONDS = 1  # a stopping consumer notices within this


def install(app: Any) -> None:
    """A worker of ``app`` takes its tasks with a :class:`Consumer` once it is ready."""
    state = state_of(app)

    def start(ready: Any) -> None:  # ready: Celery's consumer, the worker_ready sender
        node = str(ready.hostname)
        terminate_on_revoke(state)
        consumer = Consumer(state, state.queues, concurrency_of(ready), node)
        consumer.start()
        def take_no_more(**kwargs: Any) -> None:  # a warm shutdown: take no more tasks
            consumer.stop(wait=False)

        def let_them_end(**kwargs: Any) -> None:  # ... and let the running ones end
            consumer.stop(wait=True)

        signals.worker_shutting_down.connect(take_no_more, weak=False,
                                             dispatch_uid=f"unfurl-stop-{node}")
        signals.worker_shutdown.connect(let_them_end, weak=False,
                                        dispatch_uid=f"unfurl-end-{node}")

    state.on_ready.append(start)


def concurrency_of(ready: Any) -> int:
    """The worker's ``--concurrency`` (the sender of ``worker_ready`` is Celery's consumer)."""
    controller = getattr(ready, "controller", None)
    return int(getattr(controller, "concurrency", 0) or getattr(ready.pool, "limit", 0) or 1)


class Consumer:
    """``concurrency`` threads' worth of tasks from ``queues`` (Celery queue names, in
    the order they are served)."""

    def __init__(self, state: WorkerState, queues: list[str], concurrency: int,
                 node: str) -> None:
        import redis  # optional: redis (distributed extra, 96 modules), off consumer's import

        self.state, self.queues, self.node = state, list(queues), node
        self._slots = threading.Semaphore(concurrency)
        self._pool = ThreadPoolExecutor(max_workers=concurrency,
                                        thread_name_prefix="unfurl-task")
        self._stopping = threading.Event()
        self._client = redis.Redis.from_url(  # blocks in BRPOP: a connection of its own
            state.backend, socket_connect_timeout=3.0, socket_timeout=POP_SECONDS + 10,
            retry_on_timeout=True, health_check_interval=5)
        self._thread = threading.Thread(target=self._take, daemon=True,
                                        name="unfurl-consumer")

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: bool = True) -> None:
        """Take no more messages; with ``wait``, let the tasks running end (a warm
        shutdown)."""
        self._stopping.set()
        self._pool.shutdown(wait=wait)

    def _take(self) -> None:
        while not self._stopping.is_set():
            if not self._slots.acquire(timeout=POP_SECONDS):
                continue
            try:
                item = self._client.brpop(self.queues, timeout=POP_SECONDS)
            except Exception as exc:  # the broker is away: try again, as Celery's would
                self._slots.release()
                log.debug("could not take a message: %s", exc)
                self._stopping.wait(0.5)
                continue
            if item is None:
                self._slots.release()
                continue
            try:
                self._pool.submit(self._run, item[1])
            except RuntimeError:  # stopping: the message goes back where it was
                self._slots.release()
                with contextlib.suppress(Exception):
                    self._client.rpush(item[0], item[1])
                return

    def _run(self, raw: bytes | str) -> None:
        try:
            self._handle(raw)
        except Exception:  # a bug must not stop the consumer
            log.exception("could not run a message")
        finally:
            self._slots.release()

    def _handle(self, raw: bytes | str) -> None:
        celery_id, name, args = parse(raw)
        log.info("Task %s[%s] received", name, celery_id)
        client = self.state.client(self.state.backend)
        if name != TASK_NAME or len(args) != 1 or not isinstance(args[0], dict):
            store(client, celery_id, "FAILURE", exception_record(
                f"this worker runs only {TASK_NAME}, not {name!r}"))
            return
        if _revoked(celery_id):
            store(client, celery_id, "REVOKED", exception_record(
                "revoked", "TaskRevokedError", "celery.exceptions"))
            return
        try:
            summary = run_task(self.state, args[0], celery_id, self.node, store=True)
        except OperationFailed as exc:
            if not exc.stored:
                store(client, celery_id, "FAILURE", exception_record(str(exc)))
            return
        if "dropped" in summary:  # a copy that ran stored its outcome as it ended
            log.info("Task %s[%s] not run: %s", name, celery_id, summary["dropped"])
            store(client, celery_id, "SUCCESS", summary)


def store(client: Any, celery_id: str, status: str, result: Any) -> None:
    """The outcome where Celery's result backend keeps it (``AsyncResult(id).state``)."""
    with contextlib.suppress(Exception):
        client.set(RESULT_PREFIX + celery_id, outcome_record(celery_id, status, result),
                   ex=RESULT_EXPIRES)


def _revoked(celery_id: str) -> bool:
    """Revoked with ``celery control revoke`` (or ``app.control.revoke``) before it ran."""
    # start-up: keeps celery, greenlet (15 modules) off consumer's import until _revoked() runs
    from celery.worker import state as celery_state

    return celery_id in celery_state.revoked


def terminate_on_revoke(state: WorkerState) -> None:
    """``revoke --terminate`` also kills the command of a task this consumer runs
    (Celery's own revoke knows only the tasks its pool runs)."""
    # start-up: keeps celery (45 modules) off consumer's import until terminate_on_revoke() runs
    from celery.worker.control import Panel

    original = Panel.data["revoke"]
    if getattr(original, "_unfurl", False):
        return

    def revoke(panel_state: Any, task_id: Any, terminate: bool = False,
               signal: Any = None, **kwargs: Any) -> Any:
        answer = original(panel_state, task_id, terminate=terminate, signal=signal, **kwargs)
        if terminate:
            for celery_id in [task_id] if isinstance(task_id, str) else list(task_id or []):
                state.terminate(str(celery_id))
        return answer

    revoke._unfurl = True  # type: ignore[attr-defined]
    Panel.data["revoke"] = revoke
