"""Commands watched from the job's own thread: every running command's pipes and end
under one ``poll``, each result handed to the job there.

A thread per operation cost each task about fourteen hand-offs between threads (the
pool's queue, the future's callback into the scheduler's queue, the interpreter's lock
passed back and forth), each a wait for a core on a loaded machine. A command needs no
thread of its own: what follows its start is reading two pipes and noticing its end, which
one ``poll`` over every command does. A command's pipes close as it exits, so once they are
read to their end it is reaped at once when it can be; only one still running then (it
closed its pipes early) has its end watched by a ``pidfd``: per task, no descriptor opened
and no second wake-up of the poll. Starting is left to spawning
threads: ``posix_spawn`` returns only once the new process has replaced itself with the
command, and on a loaded machine that is a wait for a core, which the job's thread spends
on its own work instead (measured: starting from the job's thread made an N=1000 deploy
1.26x slower in wall time at load 7; with the spawning thread it is 0.86x of the thread
pool's). One spawning thread a slot, up to the cores: the kernel places a new process on
the core it judges least loaded, often one another program keeps busy, and the new process
waits there for its turn (a scheduler tick, 4 ms here) before it can replace itself; one
spawning thread held every other start behind that wait, and ``--jobs 2`` left a core idle
(see docs/benchmarks.md, "--jobs 2"). The job's thread waits in :meth:`Commands.wait`
where it waited for its queue; whatever ends is finished there, its future's callbacks
run on that thread.
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
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache

from unfurl_lite.run.operations import piped
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.run.operations.processes import KILL_GRACE_SECONDS, ProcessTable
from unfurl_lite.run.operations.shell import Launch, not_started, outcome

_READ = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
#: a pipe hung up (its writers gone) and empty: EPOLLHUP without EPOLLIN
_EMPTY = select.EPOLLIN | select.EPOLLHUP
#: events taken from the epoll at a time (the rest come with the next look)
_MAX_EVENTS = 256
#: seconds between looks at a command whose end no pidfd watches (none could be opened)
_UNWATCHED_LOOK = 0.005
#: concurrent.futures' state of a future with its result or exception set
_FINISHED = "FINISHED"


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
        found = self._result  # the job's everyday ask, once wait() completed it: no lock,
        if found is not None and self._state == _FINISHED:  # no drive
            return found
        self._commands.drive(self, timeout)
        return super().result(timeout=0 if self.done() else timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state == _FINISHED:
            return self._exception
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
    pidfd: int = -1  # its end, watched once its pipes are read to their end if it runs on


@dataclass(eq=False)
class _Spawner:
    """A spawning thread and the starts sent to it: those not yet made, by number."""

    thread: threading.Thread = field(init=False)
    starts: queue.SimpleQueue[tuple[str, Launch, list[bytes], Future[OperationResult]] | None] \
        = field(default_factory=queue.SimpleQueue)
    #: appended by the job's thread as it sends, taken off by the spawning thread once
    #: made (started or failed)
    waiting: deque[int] = field(default_factory=deque)


@dataclass
class Commands:
    """The commands one executor has running from the job's thread."""

    processes: ProcessTable
    #: every running command's pipes (registered by the thread that started it: an
    #: ``epoll`` sees what is added while it waits), their ends, and the wake-up pipe
    _poller: select.epoll = field(default_factory=lambda: select.epoll(flags=select.EPOLL_CLOEXEC))
    _by_fd: dict[int, _Flight] = field(default_factory=dict)
    _flights: set[_Flight] = field(default_factory=set)
    #: futures completed on other threads, to be handed over on the job's
    _landed: deque[tuple[Future[OperationResult], Future[OperationResult]]] = field(
        default_factory=deque)
    _wake_fds: tuple[int, int] = (-1, -1)
    _born: deque[_Flight | tuple[Future[OperationResult], OperationResult]] = field(
        default_factory=deque)
    #: at most this many spawning threads (the executor's slots, up to the cores: a start
    #: that waits for a core holds up no other), started as the starts need them
    spawners: int = 1
    _spawners: list[_Spawner] = field(default_factory=list)
    _sent: int = 0  # starts sent to the spawning threads (numbered by the job's thread)
    #: read to their end, still running, their end not watched by a descriptor (none left)
    _unwatched: set[_Flight] = field(default_factory=set)
    _driving: threading.Lock = field(default_factory=threading.Lock)  # one thread waits
    #: called by the spawning thread before each start (see Executor.before_start); a
    #: failure is that command's: it is not started
    before_start: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        self._wake_fds = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._poller.register(self._wake_fds[0], select.EPOLLIN)

    @property
    def running(self) -> int:
        return len(self._flights) + len(self._born) + sum(len(s.waiting) for s in self._spawners)

    def _stop_spawning(self) -> None:
        """The spawning threads end once what was sent to them is started."""
        for spawner in self._spawners:
            spawner.starts.put(None)
        for spawner in self._spawners:
            spawner.thread.join()
        self._spawners.clear()

    def start(self, task_id: str, launch: Launch, argv: list[bytes]) -> Future[OperationResult]:
        """Have ``launch`` started (its ``argv`` on the raw-pipes road) by a spawning
        thread (see :meth:`_spawner`); its future is done once a :meth:`wait` sees it
        end."""
        future: Future[OperationResult] = Driven(self)
        spawner = self._spawner()
        self._sent += 1
        spawner.waiting.append(self._sent)
        spawner.starts.put((task_id, launch, argv, future))
        return future

    def _spawner(self) -> _Spawner:
        """The spawning thread for the next start: the first with nothing to start (the
        same one, while starts take their turns); else a new one, up to :attr:`spawners`;
        else the one whose oldest start waiting was sent last (one whose start waits for a
        core, however long, is given no other)."""
        newest, chosen = -1, None
        for spawner in self._spawners:
            try:
                oldest = spawner.waiting[0]
            except IndexError:  # nothing to start
                return spawner
            if oldest > newest:
                newest, chosen = oldest, spawner
        if chosen is None or len(self._spawners) < self.spawners:
            chosen = _Spawner()
            chosen.thread = threading.Thread(target=self._spawn_loop, args=(chosen,),
                                             daemon=True, name="unfurl-spawn")
            self._spawners.append(chosen)
            chosen.thread.start()
        return chosen

    def _spawn_loop(self, spawner: _Spawner) -> None:
        """A spawning thread: a start waits for the new process to replace itself with
        the command (``vfork``), which on a loaded machine is a wait for a core; the job's
        thread meanwhile goes on (records its events, reads other commands' pipes), and
        so do the other spawning threads. A command started is put where the job's thread
        adopts it, then its pipes are added to the ``epoll`` the job's thread waits in: no
        wake-up for a start, the job's thread wakes when there is output or an end to read
        (and adopts it first)."""
        while (item := spawner.starts.get()) is not None:
            task_id, launch, argv, future = item
            started = time.monotonic()
            try:
                if self.before_start is not None:  # what its start depends on, written first
                    self.before_start()
                child = launch.start_piped(argv)
            except Exception as exc:  # a start that failed is a result: never a hung job
                self._born.append((future, not_started(exc)))
                spawner.waiting.popleft()
                self.wake()
                continue
            self.processes.add(task_id, child)
            self._born.append(_Flight(task_id, child, future, started,
                                      started + launch.timeout if launch.timeout else None))
            spawner.waiting.popleft()
            for fd in child.reading:
                self._poller.register(fd, _READ)

    def _adopt(self) -> bool:
        """Commands the spawning threads started, watched from now on; whether one of
        them could not start (its future is then done)."""
        ended = False
        while self._born:
            born = self._born.popleft()
            if isinstance(born, tuple):
                born[0].set_result(born[1])
                ended = True
                continue
            self._flights.add(born)
            for fd in born.child.reading:
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
            events = self._poller.poll(self._milliseconds(until) / 1000, _MAX_EVENTS)
            ended = self._adopt()
            ended = self._hand_landed() or ended
            for fd, mask in events:
                if fd == self._wake_fds[0]:
                    with contextlib.suppress(BlockingIOError):
                        os.read(fd, 512)
                    ended = True
                    continue
                flight = self._by_fd.get(fd)
                if flight is not None:
                    ended = self._event(flight, fd, mask) or ended
            ended = self._hand_landed() or ended
            if self._unwatched:
                ended = self._look_unwatched() or ended
            now = time.monotonic()
            self._stop_overdue(now)
            if ended or now >= until:
                return

    def _milliseconds(self, until: float) -> int:
        """How long the poll may wait: until ``until``, or a command's timeout or kill (or
        a look at the commands whose end no descriptor watches)."""
        soonest = min(until, time.monotonic() + _UNWATCHED_LOOK) if self._unwatched else until
        for flight in self._flights:
            for instant in (flight.deadline if flight.timed_out is None else None,
                            flight.kill_at):
                if instant is not None and instant < soonest:
                    soonest = instant
        return max(0, int((soonest - time.monotonic()) * 1000) + 1)

    def _event(self, flight: _Flight, fd: int, mask: int = _READ) -> bool:
        """Read a ready pipe, or finish a command whose end its pidfd says; whether it
        finished. A pipe that says it was hung up with nothing left in it (a pipe says
        ``EPOLLIN`` while it holds data) is at its end without a read."""
        if fd == flight.pidfd:
            self._finish(flight)
            return True
        # (the pipe is no longer watched, then closed)
        if flight.child.read(fd, self._poller.unregister,
                             ended=(mask & _EMPTY) == select.EPOLLHUP):
            del self._by_fd[fd]
            if flight.child.read_out:  # both read to their end: its end, now or later
                return self._watch_end(flight)
        return False

    def _watch_end(self, flight: _Flight) -> bool:
        """A command whose pipes are read to their end: finished now when it has ended
        too (the everyday case: its pipes closed as it exited), else its end watched (a
        ``pidfd``; with no descriptor left, looked at every few milliseconds)."""
        try:
            pidfd = flight.child.end_watched()
        except OSError:
            self._unwatched.add(flight)
            return False
        if pidfd is None:
            self._finish(flight)
            return True
        flight.pidfd = pidfd
        self._poller.register(pidfd, select.EPOLLIN)
        self._by_fd[pidfd] = flight
        return False

    def _look_unwatched(self) -> bool:
        ended = [flight for flight in self._unwatched if flight.child.reap_now()]
        for flight in ended:
            self._unwatched.discard(flight)
            self._finish(flight)
        return bool(ended)

    def _finish(self, flight: _Flight) -> None:
        if flight.pidfd >= 0:
            self._poller.unregister(flight.pidfd)
            del self._by_fd[flight.pidfd]
            os.close(flight.pidfd)
            flight.pidfd = -1
        code = flight.child.wait()  # ended: reaped (here, or by a kill-cancel's wait)
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
        self._unwatched.clear()
        for flight in flights:
            if flight.pidfd >= 0:
                os.close(flight.pidfd)
                flight.pidfd = -1
        if flights:
            threading.Thread(target=_drain, args=(flights, self.processes),
                             name="unfurl-abandoned").start()

    def close(self) -> None:
        """The job has ended: what still runs is waited for, then the wake pipe closed."""
        while self._flights or self._landed or self.running:
            self.wait(0.2)
        self._stop_spawning()
        for fd in self._wake_fds:
            os.close(fd)
        self._wake_fds = (-1, -1)
        self._poller.close()


def _drain(flights: list[_Flight], processes: ProcessTable) -> None:
    for flight in flights:
        with contextlib.suppress(OSError):
            flight.child.communicate()
        processes.discard(flight.child)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
