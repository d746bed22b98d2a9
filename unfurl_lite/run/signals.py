"""Ctrl-C and SIGTERM in the job process, as Cloudify's cancel, force-cancel and
kill-cancel.

SIGINT or SIGTERM (``unfurl cancel``) asks the job to cancel: no new task starts, running
ones finish, the job is recorded cancelled (a second ``unfurl cancel`` sends nothing: it
sees the job cancelling). A second Ctrl-C or SIGTERM, or SIGUSR1 (``unfurl cancel
--kill``), kill-cancels: running operations get
SIGTERM, then SIGKILL after 5 s, and their tasks are recorded failed. SIGUSR2 (``unfurl
cancel --force``) force-cancels: the job is recorded cancelled at once, its running
operations are left to finish on their own (their outcome unknown), nothing is waited for.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.run.executors import Executor

CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM)
KILL_SIGNAL = signal.SIGUSR1
FORCE_SIGNAL = signal.SIGUSR2


class JobControl(threading.Event):
    """The job's cancel event, which can also kill what the executor is running.

    Each change also calls ``wake``, which the scheduler sets to put a token on the queue
    it waits on: a signal handler that runs while the scheduler is inside
    ``SimpleQueue.get(timeout)`` and takes longer than what is left of that timeout (a
    loaded machine, a thread to start) makes CPython 3.11's get wait with no timeout at
    all, until an operation ends; the token ends that wait.
    """

    def __init__(self) -> None:
        super().__init__()
        self.executor: Executor | None = None
        self.killed = threading.Event()
        self.forced = threading.Event()
        self.wake: Callable[[], None] | None = None

    def attach_executor(self, executor: Executor) -> None:
        self.executor = executor
        if self.killed.is_set():
            self._kill_now()

    def cancel(self) -> None:
        self.set()
        self._changed()

    def force(self) -> None:
        """Stop waiting for running operations: the job ends now, they run on."""
        self.forced.set()
        self.set()
        self._changed()

    def kill(self) -> None:
        first = not self.killed.is_set()
        self.killed.set()
        self.set()
        if first:
            self._kill_now()
        self._changed()

    def _changed(self) -> None:
        wake = self.wake
        if wake is not None:
            wake()

    def _kill_now(self) -> None:
        executor = self.executor
        if executor is not None:
            # SIGTERM, wait up to 5 s, SIGKILL: never inside the signal handler itself
            threading.Thread(target=executor.kill_running, daemon=True).start()


def _say(text: str) -> None:
    with contextlib.suppress(Exception):
        print(text, file=sys.stderr, flush=True)


@contextlib.contextmanager
def handle_signals(control: JobControl) -> Iterator[JobControl]:
    """Install the handlers for the duration of a job (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield control
        return

    def on_cancel(signum: int, frame: FrameType | None) -> None:
        if control.is_set():
            _say("Killing running operations (SIGTERM, then SIGKILL after 5 s)...")
            control.kill()
        else:
            _say(
                "Cancelling: no new tasks will start; running tasks will finish. "
                "Interrupt again to kill them."
            )
            control.cancel()

    def on_kill(signum: int, frame: FrameType | None) -> None:
        _say("Kill-cancel: killing running operations...")
        control.kill()

    def on_force(signum: int, frame: FrameType | None) -> None:
        _say("Force-cancel: the job ends now; running operations are left to finish.")
        control.force()

    previous = {s: signal.signal(s, on_cancel) for s in CANCEL_SIGNALS}
    previous[KILL_SIGNAL] = signal.signal(KILL_SIGNAL, on_kill)
    previous[FORCE_SIGNAL] = signal.signal(FORCE_SIGNAL, on_force)
    try:
        yield control
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
