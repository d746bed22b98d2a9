"""What the controller knows of each task in flight and of the live workers.

A task travels on a queue of its own version: agent queue ``web-1`` is the Celery queue
``web-1@v0.2.0-p3`` for unfurl-lite 0.2.0 speaking protocol 3 (see :func:`celery_queue`),
so a worker of another version on the same agent queue never receives the task, and
never blocks a compatible worker from taking it.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from unfurl_lite.model.narrow import new_list
from unfurl_lite.model.routing import DEFAULT_QUEUE
from unfurl_lite.run.executors.celery.application import PROTOCOL, live_workers
from unfurl_lite.run.operations.base import OperationRequest, OperationResult

VERSION_MARK = "@v"


def celery_queue(queue: str, version: str, protocol: int = PROTOCOL) -> str:
    """The Celery queue that carries agent queue ``queue``'s tasks for one version."""
    return f"{queue}{VERSION_MARK}{version}-p{protocol}"


def agent_queue(name: str) -> str:
    """``web-1@v0.2.0-p3`` -> ``web-1`` (a name without the mark is its own)."""
    return name.partition(VERSION_MARK)[0]


@dataclass
class Flight:
    """A task sent to a Celery worker and not yet settled."""
    request: OperationRequest
    future: Future[OperationResult]
    payload: dict[str, Any]
    queue: str
    number: int  # the task's number in its plan: the same in every job of the lineage
    celery_id: str = ""  # the current copy
    sent_at: float = 0.0  # monotonic
    deadline: float = 0.0  # wall clock: the current copy must start before
    sent: bool = False  # the broker took the message
    unsent: bool = False  # sending failed (the broker was away): the sweep sends it
    hostname: str | None = None  # the Celery node running it, once started
    started: bool = False
    lease_missing_since: float | None = None
    done_since: float | None = None  # its lease says done, its reply has not come
    lost: int = 0  # times its worker died under it
    lost_on: str | None = None  # the Celery node that last died under it
    withdrawn: bool = False  # soft cancel gave it up before a worker started it
    dropped: int = 0  # copies workers dropped unstarted (the job looked ended...)
    noticed_at: float = 0.0  # last "waiting for a worker" notice
    nodes: list[str] = field(default_factory=new_list)  # every node that started a run of it


class WorkerView:
    """The live workers (their heartbeats), refreshed every few seconds: which serve a
    queue, and whether they run this controller's version."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.workers: dict[str, dict[str, Any]] = {}
        self._serving: dict[str, set[str]] = {}  # agent queue -> live Celery nodes

    def refresh(self) -> None:
        self.workers = live_workers(self.client)
        serving: dict[str, set[str]] = {}
        for node, info in self.workers.items():
            queues: list[Any] = info.get("queues") or []
            for queue in queues:
                serving.setdefault(agent_queue(str(queue)), set()).add(node)
        self._serving = serving

    def serving(self, queue: str) -> set[str]:
        return self._serving.get(queue, set())

    def celery_queue(self, queue: str) -> str:
        # start-up: __version__ reads the package's metadata when first asked
        from unfurl_lite import __version__

        return celery_queue(queue, __version__)

    def refusal(self, queue: str, version: str) -> str | None:
        """Why not to send to ``queue`` at all: only workers of another version or
        protocol serve it (none of this one). None when one of ours does, or none does
        (the task waits for one)."""
        infos = [w for n in self.serving(queue) if (w := self.workers.get(n))]
        if not infos or any(_same(w, version) for w in infos):
            return None
        worker = infos[0]
        return (f"refused to send to queue {queue!r}: worker {worker.get('name')} runs "
                f"unfurl-lite {worker.get('version')} (protocol {worker.get('protocol')}), "
                f"this controller {version} (protocol {PROTOCOL}); "
                f"run the same unfurl-lite version on the controller and its workers")

    def fresh_checkouts(self, queue: str, source: dict[str, str]) -> list[str]:
        """The compatible workers of ``queue`` that would run the project in a fresh
        worktree of each commit (another machine, not started in a clone of it): files
        operations leave in the project directory there do not outlive the commit."""
        names: list[str] = []
        for node in sorted(self.serving(queue)):
            info = self.workers.get(node) or {}
            here = info.get("machine") == source.get("machine") and info.get("project") != "git"
            cloned = bool(source.get("root")) and info.get("clone") == source.get("root") \
                and info.get("project") != "git"
            if not (here or cloned) and "machine" in info:
                names.append(short(node))
        return names

    def start_hint(self, queue: str) -> str:
        name = "management" if queue == DEFAULT_QUEUE else queue
        return f"unfurl worker --name {name} --queue {queue}"

    def waiting_text(self, flight: Flight, waited: float, timeout: float) -> str:
        busy = self.serving(flight.queue)
        if busy:
            names = ", ".join(sorted(short(n) for n in busy))
            return (f"{flight.request.target}: {flight.request.operation} waiting {waited:.0f} s "
                    f"on queue {flight.queue!r} for a free worker ({names} busy)")
        return (f"{flight.request.target}: {flight.request.operation} waiting {waited:.0f} s "
                f"for a worker on queue {flight.queue!r} (gives up after {timeout:g} s); "
                f"start one with: {self.start_hint(flight.queue)}")


def _same(worker: dict[str, Any], version: str) -> bool:
    return worker.get("protocol") == PROTOCOL and worker.get("version") == version


def failure(flight: Flight, error: str, worker: str | None = None) -> OperationResult:
    """A task the controller stops waiting for: its outcome is unknown if a worker
    started it, else it did not run."""
    ran = flight.started or flight.lost > 0
    return OperationResult(
        success=False,
        modified=None if ran else False,
        error=error,
        worker=worker or short(flight.hostname or flight.lost_on) or "celery",
        ran=ran,
    )


def not_run(error: str) -> OperationResult:
    return OperationResult(success=False, modified=False, worker="celery", error=error,
                           ran=False)


def short(node: str | None) -> str:
    """``web-1@host`` -> ``web-1``: the name ``unfurl worker --name`` was given."""
    return (node or "").partition("@")[0]


def settle(flight: Flight, result: OperationResult) -> None:
    if not flight.future.done():
        with contextlib.suppress(Exception):
            flight.future.set_result(result)
