"""A command run with its output read from two raw pipes: the Shell operation's everyday
road, without ``subprocess.Popen``'s machinery.

``Popen`` with ``communicate`` costs the job about 0.4 ms of CPU per command beyond the
start itself (a file object around each pipe, a selector registered anew each call, the
text decoded in steps, a lock per wait): at 10,000 operations, seconds of threads that
share the interpreter's lock with the scheduler. Here the command starts through
:func:`spawn.posix_spawn` (outside the GIL), its stdout and stderr are read straight from
their pipes under one ``poll``, and it is reaped by a blocking ``waitpid``. What the
command gets and what is read back are what the ``Popen`` road gives: stdin from
``/dev/null``, stdout and stderr decoded as UTF-8 with ``\\xff`` escapes for bytes that are
not, ``\\r\\n`` and ``\\r`` read as ``\\n`` (``text=True``), ``subprocess.TimeoutExpired``
on a timeout with what was read so far kept for the next :meth:`Child.communicate`.
"""

from __future__ import annotations

import math
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from functools import lru_cache

from unfurl_lite.run.operations import spawn

_CHUNK = 65536
#: seconds between looks at a command a timed wait is waiting for (Popen's own bounds)
_FIRST_DELAY, _LAST_DELAY = 0.0005, 0.05


@lru_cache(maxsize=1)
def _devnull() -> int:
    """One read-only /dev/null for every command's stdin (never inherited: the spawn
    duplicates it onto descriptor 0 and closes the rest)."""
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def available() -> bool:
    return spawn.available()


def text(data: bytes) -> str:
    """Output as ``Popen(text=True, encoding="utf-8", errors="backslashreplace")`` reads it."""
    if not data:
        return ""
    return data.decode("utf-8", "backslashreplace").replace("\r\n", "\n").replace("\r", "\n")


class Child:
    """A started command: what a kill-cancel needs of it (``pid``, :meth:`wait`) and its
    output, read until both pipes close (:meth:`communicate`)."""

    def __init__(self, args: list[bytes], pid: int, out: int, err: int) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._chunks: dict[int, list[bytes]] = {out: [], err: []}
        self._out, self._err = out, err
        self._poller: select.poll | None = None  # made by communicate (a caller who polls
        self._open = {out, err}  # many commands' pipes at once needs none of its own)
        self._reaping = threading.Lock()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Read both pipes to their end, then wait for the command; at ``timeout`` seconds
        raise ``subprocess.TimeoutExpired`` (call again to read on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._poller is None and self._open:
            self._poller = select.poll()
            for fd in self._open:
                self._poller.register(fd, select.POLLIN)
        while self._open:
            assert self._poller is not None
            if deadline is None:
                events = self._poller.poll()
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
                events = self._poller.poll(math.ceil(left * 1000))
            for fd, _ in events:
                self.read(fd)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self.output()

    @property
    def reading(self) -> frozenset[int]:
        """The pipes not yet read to their end."""
        return frozenset(self._open)

    @property
    def read_out(self) -> bool:
        """Both pipes read to their end (and closed)."""
        return not self._open

    def read(self, fd: int, forget: Callable[[int], object] | None = None,
             ended: bool = False) -> bool:
        """Read what ``fd`` (one of :attr:`reading`, ready) holds; at its end, close it
        (``forget`` called with it first: the caller's poll no longer watches it; ``ended``:
        the caller's poll said it is at its end, nothing is read); whether it was.
        (What :meth:`communicate` does at each wake-up, for a caller that polls many
        commands' pipes at once.)"""
        data = b"" if ended else os.read(fd, _CHUNK)
        if data:
            self._chunks[fd].append(data)
            return False
        if forget is not None:
            forget(fd)
        if self._poller is not None:
            self._poller.unregister(fd)
        os.close(fd)
        self._open.discard(fd)
        return True

    def output(self) -> tuple[str, str]:
        """stdout and stderr as read so far, decoded as ``Popen(text=True)`` decodes them."""
        return (text(b"".join(self._chunks[self._out])),
                text(b"".join(self._chunks[self._err])))

    def wait(self, timeout: float | None = None) -> int:
        """The exit code (``-N`` for a signal), as ``Popen.wait``; any thread may wait."""
        if timeout is None:
            with self._reaping:
                if self.returncode is None:
                    self._reaped(os.waitpid(self.pid, 0)[1])
            return self.returncode  # type: ignore[return-value]  # just set
        deadline, delay = time.monotonic() + timeout, _FIRST_DELAY
        while self.returncode is None:
            if self._reaping.acquire(blocking=False):
                try:
                    if self.returncode is None:
                        pid, status = os.waitpid(self.pid, os.WNOHANG)
                        if pid:
                            self._reaped(status)
                finally:
                    self._reaping.release()
            if self.returncode is not None:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            delay = min(delay * 2, left, _LAST_DELAY)
            time.sleep(delay)
        return self.returncode

    def reap_now(self) -> bool:
        """Whether it has ended, reaped now if it had (never waits)."""
        with self._reaping:
            if self.returncode is None:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self._reaped(status)
            return self.returncode is not None

    def end_watched(self) -> int | None:
        """A descriptor that becomes readable when it ends (a ``pidfd``), or None when it
        has ended already (reaped now). Opened while it is unreaped, under the lock every
        reaper takes, so its process id cannot be another's yet; OSError (no descriptor
        left) is the caller's."""
        with self._reaping:
            if self.returncode is None:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self._reaped(status)
                else:
                    return os.pidfd_open(self.pid)
            return None

    def _reaped(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)

    def close(self) -> None:
        """Close what is still open of the pipes (a command abandoned mid-read)."""
        for fd in list(self._open):
            if self._poller is not None:
                self._poller.unregister(fd)
            os.close(fd)
        self._open.clear()


def start(program: bytes, argv: list[bytes], env: list[bytes], cwd: str) -> Child:
    """Start ``program`` in a new session with stdin from /dev/null and stdout and stderr
    on pipes of their own (``env``: entries as :func:`environment` encodes and checks
    them); OSError when it cannot start (``FileNotFoundError`` naming the directory when
    that is what is missing, as subprocess does)."""
    checked([program, *argv])  # (env: checked as environment() encodes it)
    out_read, out_write = os.pipe2(os.O_CLOEXEC)
    try:
        err_read, err_write = os.pipe2(os.O_CLOEXEC)
    except OSError:
        os.close(out_read)
        os.close(out_write)
        raise
    try:
        pid = spawn.posix_spawn(program, argv, env, cwd, (_devnull(), out_write, err_write),
                                True)
    except BaseException:
        for fd in (out_read, err_read):
            os.close(fd)
        raise
    finally:
        os.close(out_write)
        os.close(err_write)
    return Child(argv, pid, out_read, err_read)


#: ``NAME=value`` entries already encoded: a job's tasks share all but a few of their
#: environment's variables (the job's own environment), so each is encoded once, not once
#: a task (80 encodes a command under a typical environment); bounded, since the few
#: that differ (``UNFURL_CHANGEID``) differ every time
_ENTRIES: dict[tuple[str, str], bytes] = {}
_ENTRIES_KEPT = 4096


def environment(env: dict[str, str]) -> list[bytes]:
    """``NAME=value`` entries as UTF-8 (``surrogateescape``: what the environment held),
    refusing what subprocess refuses (a name with ``=``, a NUL: each entry checked once,
    as it is encoded, not at every start)."""
    entries = []
    for pair in env.items():
        entry = _ENTRIES.get(pair)
        if entry is None:
            name, value = pair
            if "=" in name:
                raise ValueError("illegal environment variable name")
            entry = (name + "=" + value).encode("utf-8", "surrogateescape")
            checked([entry])
            if len(_ENTRIES) >= _ENTRIES_KEPT:
                _ENTRIES.clear()
            _ENTRIES[pair] = entry
        entries.append(entry)
    return entries


def checked(words: list[bytes]) -> list[bytes]:
    """``words`` as C strings take them: refused, as subprocess refuses them, when one holds
    a NUL (C would read it cut short)."""
    for word in words:
        if b"\0" in word:
            raise ValueError("embedded null byte")
    return words
