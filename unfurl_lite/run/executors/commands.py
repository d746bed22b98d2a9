"""Commands watched from the job's own thread: every running command's pipes and end
under one ``poll``, each result handed to the job there.

A thread per operation cost each task about fourteen hand-offs between threads (the
pool's queue, the future's callback into the scheduler's queue, the interpreter's lock
passed back and forth), each a wait for a core on a loaded machine. A command needs no
thread of its own: what follows its start is reading two pipes and noticing its end, which
one ``poll`` over every command does (a ``pidfd`` tells the end). Starting is left to one
spawning thread: ``posix_spawn`` returns only once the new process has replaced itself
with the command, and on a loaded machine that is a wait for a core, which the job's thread
spends on its own work instead (measured: starting from the job's thread made an N=1000
deploy 1.26x slower in wall time at load 7; with the spawning thread it is 0.86x of the
thread pool's). The job's thread waits in :meth:`Commands.wait` where it waited for its
queue; whatever ends is finished there, its future's callbacks run on that thread.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections import deque
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache

from unfurl_lite.run.operations import piped
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.run.operations.processes import KILL_GRACE_SECONDS, ProcessTable, kill
from unfurl_lite.run.operations.shell import Launch, not_started, outcome

_READ = select.POLLIN | select.POLLHUP | select.POLLERR


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether commands can be watched from one thread here: posix_spawn's road, and
    ``pidfd_open`` (Linux 5.3 and later) to see a command end without waiting for it."""
    if not piped.available() or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


class Driven(Future[OperationResult]):
    """A future the job's thread completes in :meth:`Commands.wait`; a caller that waits on
    it instead (``result()``, ``exception()``: a library user of the executor alone, with
    no job looping around it) drives the commands itself while nobody else does."""

    def __init__(self, commands: Commands) -> None:
        super().__init__()
        self._commands = commands

    def result(self, timeout: float | None = None) -> OperationResult:
        self._commands.drive(self, timeout)
        return super().result(timeout=0 if self.done() else timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._commands.drive(self, timeout)
        return super().exception(timeout=0 if self.done() else timeout)


@dataclass(eq=False)
class _Flight:
    """One command running: its task, its future, and when it must be stopped."""

    task_id: str
    child: piped.Child
    future: Future[OperationResult]
    started: float
    deadline: float | None  # its timeout, as a time.monotonic() instant
    timed_out: float | None = None  # the timeout it was stopped at
    kill_at: float | None = None  # SIGKILL then, if SIGTERM did not end it
    pidfd: int = -1  # its end, watched once its pipes are read to their end


@dataclass
class Commands:
    """The commands one executor has running from the job's thread."""

    processes: ProcessTable
    _poller: select.poll = field(default_factory=select.poll)
    _by_fd: dict[int, _Flight] = field(default_factory=dict)
    _flights: set[_Flight] = field(default_factory=set)
    #: futures completed on other threads, to be handed over on the job's
    _landed: deque[tuple[Future[OperationResult], Future[OperationResult]]] = field(
        default_factory=deque)
    _wake_fds: tuple[int, int] = (-1, -1)
    _spawns: queue.SimpleQueue[tuple[str, Launch, list[bytes], Future[OperationResult]] | None] \
        = field(default_factory=queue.SimpleQueue)
    _born: deque[_Flight | tuple[Future[OperationResult], OperationResult]] = field(
        default_factory=deque)
    _spawner: threading.Thread | None = None
    _pending: int = 0  # sent to the spawning thread, not yet adopted
    _driving: threading.Lock = field(default_factory=threading.Lock)  # one thread waits

    def __post_init__(self) -> None:
        self._wake_fds = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._poller.register(self._wake_fds[0], select.POLLIN)

    @property
    def running(self) -> int:
        return len(self._flights) + self._pending

    def _stop_spawning(self) -> None:
        """The spawning thread ends once what was sent to it is started."""
        if self._spawner is not None:
            self._spawns.put(None)
            self._spawner.join()
            self._spawner = None

    def start(self, task_id: str, launch: Launch, argv: list[bytes]) -> Future[OperationResult]:
        """Have ``launch`` started (its ``argv`` on the raw-pipes road) by the spawning
        thread; its future is done once a :meth:`wait` sees it end."""
        future: Future[OperationResult] = Driven(self)
        if self._spawner is None:
            self._spawner = threading.Thread(target=self._spawn_loop, daemon=True,
                                             name="unfurl-spawn")
            self._spawner.start()
        self._pending += 1
        self._spawns.put((task_id, launch, argv, future))
        return future

    def _spawn_loop(self) -> None:
        """The spawning thread: a start waits for the new process to replace itself with
        the command (``vfork``), which on a loaded machine is a wait for a core; the job's
        thread meanwhile goes on (records its events, reads other commands' pipes)."""
        while (item := self._spawns.get()) is not None:
            task_id, launch, argv, future = item
            started = time.monotonic()
            try:
                child = launch.start_piped(argv)
            except (OSError, ValueError) as exc:
                self._born.append((future, not_started(exc)))
                self.wake()
                continue
            try:  # opened now, while the process is surely this one's, unreaped
                pidfd = os.pidfd_open(child.pid)
            except OSError:  # (no descriptor left): this one is waited for here and now
                with self.processes.running(task_id, child):
                    self._born.append((future, _waited_here(child, launch.timeout, started)))
                self.wake()
                continue
            self.processes.add(task_id, child)
            self._born.append(_Flight(task_id, child, future, started,
                                      started + launch.timeout if launch.timeout else None,
                                      pidfd=pidfd))
            self.wake()

    def _adopt(self) -> bool:
        """Commands the spawning thread started, watched from now on; whether one of
        them could not start (its future is then done)."""
        ended = False
        while self._born:
            born = self._born.popleft()
            self._pending -= 1
            if isinstance(born, tuple):
                born[0].set_result(born[1])
                ended = True
                continue
            self._flights.add(born)
            for fd in born.child.reading:
                self._poller.register(fd, _READ)
                self._by_fd[fd] = born
        return ended

    def hand_over(self, inner: Future[OperationResult]) -> Future[OperationResult]:
        """A future another thread completes, as one completed on the job's thread (in
        :meth:`wait`), like every other: the job's callbacks never run elsewhere."""
        outer: Future[OperationResult] = Driven(self)

        def landed(done: Future[OperationResult]) -> None:
            self._landed.append((done, outer))
            self.wake()

        inner.add_done_callback(landed)
        return outer

    def wake(self) -> None:
        """End a :meth:`wait` now (any thread, or a signal handler)."""
        with contextlib.suppress(BlockingIOError, OSError):  # full: a wake is pending anyway
            os.write(self._wake_fds[1], b"!")

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a command to end or a future to land (their
        futures are done, their callbacks run, when this returns), or for :meth:`wake`."""
        with self._driving:
            self._wait(timeout)

    def drive(self, future: Future[OperationResult], timeout: float | None) -> None:
        """Until ``future`` is done or ``timeout`` seconds pass: :meth:`wait` while no other
        thread does, else wait for that thread to complete it."""
        until = None if timeout is None else time.monotonic() + timeout
        while not future.done():
            left = 0.2 if until is None else min(0.2, until - time.monotonic())
            if left <= 0:
                return
            if self._driving.acquire(blocking=False):
                try:
                    self._wait(left)
                finally:
                    self._driving.release()
            else:
                futures.wait([future], timeout=left)

    def _wait(self, timeout: float) -> None:
        until = time.monotonic() + timeout
        while True:
            events = self._poller.poll(self._milliseconds(until))
            ended = self._adopt()
            ended = self._hand_landed() or ended
            for fd, _ in events:
                if fd == self._wake_fds[0]:
                    with contextlib.suppress(BlockingIOError):
                        os.read(fd, 512)
                    ended = True
                    continue
                flight = self._by_fd.get(fd)
                if flight is not None:
                    ended = self._event(flight, fd) or ended
            ended = self._hand_landed() or ended
            now = time.monotonic()
            self._stop_overdue(now)
            if ended or now >= until:
                return

    def _milliseconds(self, until: float) -> int:
        """How long the poll may wait: until ``until``, or a command's timeout or kill."""
        soonest = until
        for flight in self._flights:
            for instant in (flight.deadline if flight.timed_out is None else None,
                            flight.kill_at):
                if instant is not None and instant < soonest:
                    soonest = instant
        return max(0, int((soonest - time.monotonic()) * 1000) + 1)

    def _event(self, flight: _Flight, fd: int) -> bool:
        """Read a ready pipe, or finish a command whose end its pidfd says; whether it
        finished."""
        if fd == flight.pidfd:
            self._finish(flight)
            return True
        flight.child.read(fd)
        if fd not in flight.child.reading:
            self._poller.unregister(fd)
            del self._by_fd[fd]
            if not flight.child.reading:  # both read to their end: now watch its end
                self._poller.register(flight.pidfd, select.POLLIN)
                self._by_fd[flight.pidfd] = flight
        return False

    def _finish(self, flight: _Flight) -> None:
        self._poller.unregister(flight.pidfd)
        del self._by_fd[flight.pidfd]
        os.close(flight.pidfd)
        code = flight.child.wait()  # ended: reaped at once (or by a kill-cancel's wait)
        self.processes.discard(flight.child)
        self._flights.discard(flight)
        stdout, stderr = flight.child.output()
        flight.future.set_result(outcome(code, stdout, stderr, flight.started,
                                         flight.timed_out))

    def _hand_landed(self) -> bool:
        landed = False
        while self._landed:
            inner, outer = self._landed.popleft()
            exc = inner.exception()
            if exc is not None:
                outer.set_exception(exc)
            else:
                outer.set_result(inner.result())
            landed = True
        return landed

    def _stop_overdue(self, now: float) -> None:
        """A command past its timeout gets SIGTERM (its process group), and SIGKILL
        :data:`KILL_GRACE_SECONDS` later if it has not ended: the Shell operation's rule."""
        for flight in self._flights:
            if flight.timed_out is None and flight.deadline is not None \
                    and now >= flight.deadline:
                flight.timed_out = flight.deadline - flight.started
                flight.kill_at = now + KILL_GRACE_SECONDS
                _signal_group(flight.child.pid, signal.SIGTERM)
            elif flight.kill_at is not None and now >= flight.kill_at:
                flight.kill_at = None
                try:
                    flight.child.wait(0)
                except subprocess.TimeoutExpired:
                    _signal_group(flight.child.pid, signal.SIGKILL)

    def abandon(self) -> None:
        """Force-cancel: the job waits no more; what runs is read to its end and reaped by
        a thread of its own (so that no command is stopped by a pipe closed on it)."""
        self._stop_spawning()
        self._adopt()
        flights, self._flights = list(self._flights), set()
        for fd in self._by_fd:
            self._poller.unregister(fd)
        self._by_fd.clear()
        for flight in flights:
            os.close(flight.pidfd)
        if flights:
            threading.Thread(target=_drain, args=(flights, self.processes),
                             name="unfurl-abandoned").start()

    def close(self) -> None:
        """The job has ended: what still runs is waited for, then the wake pipe closed."""
        while self._flights or self._landed or self._pending:
            self.wait(0.2)
        self._stop_spawning()
        for fd in self._wake_fds:
            os.close(fd)
        self._wake_fds = (-1, -1)


def _waited_here(child: piped.Child, timeout: float | None, started: float) -> OperationResult:
    """A command waited for as the Shell operation's own thread waits (its timeout too)."""
    try:
        stdout, stderr = child.communicate(timeout=timeout)
        timed_out = None
    except subprocess.TimeoutExpired:
        kill(child)
        stdout, stderr = child.communicate()
        timed_out = timeout
    return outcome(child.wait(), stdout, stderr, started, timed_out)


def _drain(flights: list[_Flight], processes: ProcessTable) -> None:
    for flight in flights:
        with contextlib.suppress(OSError):
            flight.child.communicate()
        processes.discard(flight.child)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
