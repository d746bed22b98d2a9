"""Commands started without holding the interpreter's lock, so parallel tasks use the cores.

``subprocess.Popen`` starts a command through ``_posixsubprocess.fork_exec``, which keeps
the GIL from the fork until the child has replaced itself with the command: every other
thread of the job (the scheduler, the journal, the other tasks' threads) waits through
each start, so ``--jobs 2`` of short commands ran little faster than ``--jobs 1``. Here the
start is the C library's ``posix_spawn``, called through ctypes, which lets go of the GIL
for the length of the call. What the command gets is what ``subprocess`` gives it: the
working directory, the environment, stdin/stdout/stderr as ``Popen`` set them up, every
other descriptor closed, SIGPIPE and SIGXFSZ back to their defaults, the calling
thread's signal mask, a new session when asked. (One difference no program notices:
glibc's spawn leaves its own two internal real-time signals, 32 and 33, ignored in the
child, as in every program started by posix_spawn; C libraries install their handlers over
that when they use them.) Anything outside that (a command found on PATH, a ``preexec_fn``, kept
descriptors, other users or groups) and a C library without these calls (glibc 2.34 and
later have them all) take ``subprocess``'s own road.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: glibc's flags for posix_spawnattr_setflags
_SETSIGDEF, _SETSID = 0x04, 0x80
#: Python ignores them; a command starts with them at their defaults, as subprocess has it
_DEFAULTED = (int(signal.SIGPIPE), int(signal.SIGXFSZ))
#: bytes: more than glibc's posix_spawnattr_t (336), file actions (80) and sigset_t (128)
_OPAQUE = 1024


class _Libc:
    """The C library's posix_spawn and the calls that set up its file actions and
    attributes; constructing it raises AttributeError where one is missing.

    Only the spawn itself lets go of the GIL: the set-up calls (a few instructions each)
    are made through ``PyDLL``, which keeps it. Every call through ``CDLL`` releases the
    lock and takes it back; with the scheduler's thread busy, taking it back can wait a
    whole switch interval (5 ms): fourteen trivial calls a start, each a chance to wait."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        held = ctypes.PyDLL(None)  # the same functions, called without releasing the GIL
        self.spawn = libc.posix_spawn
        self.actions_init = held.posix_spawn_file_actions_init
        self.actions_destroy = held.posix_spawn_file_actions_destroy
        self.add_dup2 = held.posix_spawn_file_actions_adddup2
        self.add_chdir = held.posix_spawn_file_actions_addchdir_np
        self.add_closefrom = held.posix_spawn_file_actions_addclosefrom_np
        self.attr_init = held.posix_spawnattr_init
        self.set_flags = held.posix_spawnattr_setflags
        self.set_sigdefault = held.posix_spawnattr_setsigdefault
        self.sigemptyset = held.sigemptyset
        self.sigaddset = held.sigaddset
        self.set_flags.argtypes = [ctypes.c_char_p, ctypes.c_short]


@lru_cache(maxsize=1)
def _libc() -> _Libc | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _Libc()
    except (OSError, AttributeError):
        return None


def available() -> bool:
    """Whether commands start outside the GIL here (Linux with glibc 2.34 or later)."""
    return _libc() is not None


@lru_cache(maxsize=2)
def _attributes(new_session: bool) -> Any:
    """The spawn's attributes, made once per process for each ``new_session`` (posix_spawn
    only reads them, so threads share them): SIGPIPE and SIGXFSZ at their defaults, a new
    session when asked."""
    libc = _libc()
    assert libc is not None
    attributes = ctypes.create_string_buffer(_OPAQUE)
    defaults = ctypes.create_string_buffer(_OPAQUE)
    libc.attr_init(attributes)
    libc.sigemptyset(defaults)
    for number in _DEFAULTED:
        libc.sigaddset(defaults, number)
    libc.set_sigdefault(attributes, defaults)
    libc.set_flags(attributes, _SETSIGDEF | (_SETSID if new_session else 0))
    return attributes


class _Made(threading.local):
    """What one thread's starts build in C and can use again (posix_spawn only reads its
    arguments): a job's commands share their working directory, mostly their descriptors'
    numbers (a pipe takes the lowest free ones) and command, and all but one or two of
    their environment's entries. Building them anew cost each start about 60 us of
    ``ctypes`` calls, with the GIL held, of which a third was the environment's array."""

    def __init__(self) -> None:
        self.actions: dict[tuple[bytes | None, tuple[int, int, int]], Any] = {}
        self.arguments: dict[tuple[bytes, ...], Any] = {}
        self.entries: list[bytes] = []  # what ``environment`` holds now
        self.environment: Any = None


_made = _Made()
_KEPT = 8  # file actions (working directory, descriptors) kept by a thread


def _actions(libc: _Libc, cwd: bytes | None, fds: tuple[int, int, int]) -> Any:
    """The file actions: into ``cwd``, ``fds`` as 0, 1, 2, every other one closed."""
    kept = _made.actions
    found = kept.get((cwd, fds))
    if found is None:
        if len(kept) >= _KEPT:
            for actions in kept.values():
                libc.actions_destroy(actions)
            kept.clear()
        found = ctypes.create_string_buffer(_OPAQUE)
        libc.actions_init(found)
        if cwd is not None:
            libc.add_chdir(found, cwd)
        for target, fd in enumerate(fds):
            libc.add_dup2(found, fd, target)
        libc.add_closefrom(found, 3)
        kept[(cwd, fds)] = found
    return found


def _arguments(argv: list[bytes]) -> Any:
    kept = _made.arguments
    key = tuple(argv)
    found = kept.get(key)
    if found is None:
        if len(kept) >= 64:
            kept.clear()
        found = kept[key] = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    return found


def _environment(env: list[bytes]) -> Any:
    """The environment's array: the last one, its entries that differ replaced."""
    made = _made
    entries = made.entries
    if made.environment is None or len(entries) != len(env):
        made.environment = (ctypes.c_char_p * (len(env) + 1))(*env, None)
        made.entries = list(env)
        return made.environment
    array = made.environment
    for index, entry in enumerate(env):
        if entry is not entries[index] and entry != entries[index]:
            array[index] = entries[index] = entry
    return array


def posix_spawn(executable: bytes, argv: list[bytes], env: list[bytes],
                cwd: str | bytes | os.PathLike[Any] | None, fds: tuple[int, int, int],
                new_session: bool) -> int:
    """Start ``executable``; its process id. ``fds`` become its stdin, stdout and stderr."""
    libc = _libc()
    assert libc is not None
    attributes = _attributes(new_session)
    actions = _actions(libc, None if cwd is None else os.fsencode(cwd), fds)
    pid = ctypes.c_int()
    failed = libc.spawn(ctypes.byref(pid), executable, actions, attributes,
                        _arguments(argv), _environment(env))
    if failed:  # named as subprocess names it: the directory, when it was what failed
        missing = cwd if cwd is not None and not os.path.isdir(cwd) else None
        raise OSError(failed, os.strerror(failed),
                      missing if missing is not None else os.fsdecode(executable))
    return pid.value


class Popen(subprocess.Popen["Any"]):
    """``subprocess.Popen`` whose command starts through :func:`posix_spawn` when it can:
    waiting, reading its output, timeouts and kills are Popen's own."""

    def _execute_child(
        self, args: Any, executable: Any, preexec_fn: Any, close_fds: bool, pass_fds: Any,
        cwd: Any, env: Any, startupinfo: Any, creationflags: int, shell: bool,
        p2cread: int, p2cwrite: int, c2pread: int, c2pwrite: int, errread: int,
        errwrite: int, restore_signals: bool, gid: Any, gids: Any, uid: Any, umask: int,
        start_new_session: bool, process_group: int,
    ) -> None:
        """Start the child with posix_spawn, without holding the GIL, when what it asks is
        what the spawn gives (a path, the usual descriptors, no preexec_fn or other user);
        anything else goes through subprocess's own fork_exec."""
        argv = [args] if isinstance(args, str | bytes) else list(args)
        if shell:
            argv = ["/bin/sh", "-c", *argv]
            if executable:
                argv[0] = executable
        program = executable or argv[0]
        simple = (available() and preexec_fn is None and close_fds and not pass_fds
                  and env is not None and restore_signals and gid is None and gids is None
                  and uid is None and umask < 0 and process_group == -1
                  and os.path.dirname(os.fsencode(program))
                  and min(p2cread, c2pwrite, errwrite) > 2)
        if not simple or env is None:  # (simple says env is given; for type checkers)
            super()._execute_child(  # type: ignore[misc]
                args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
                creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread,
                errwrite, restore_signals, gid, gids, uid, umask, start_new_session,
                process_group)
            return
        sys.audit("subprocess.Popen", program, argv, cwd, env)
        environment: list[bytes] = []
        for key, value in env.items():
            name = os.fsencode(key)
            if b"=" in name:
                raise ValueError("illegal environment variable name")
            environment.append(name + b"=" + os.fsencode(value))
        try:
            self.pid = posix_spawn(
                os.fsencode(program), [os.fsencode(a) for a in argv], environment,
                cwd,
                (p2cread, c2pwrite, errwrite), start_new_session)
            self._child_created = True
        finally:
            self._close_pipe_fds(  # type: ignore[attr-defined]
                p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)
