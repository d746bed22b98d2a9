"""The Shell operation: run a command, report its exit code and output.

A string command runs through ``/bin/sh -c`` as Unfurl does; a list runs without a shell
(the ``shell`` and ``keeplines`` inputs change that, as in Unfurl: see :func:`process_args`).
The environment is an allow-list plus what the operation declares, so an operation does
not silently depend on (or leak) whatever happened to be in the caller's environment.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from dataclasses import dataclass

from unfurl_lite.errors import PathError
from unfurl_lite.run.operations import piped
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.operations.output import OUTPUT_LIMIT, last_line, strip_ansi, tail
from unfurl_lite.run.operations.processes import (
    KILL_GRACE_SECONDS,
    ProcessTable,
    kill,
)
from unfurl_lite.run.operations.spawn import Popen
from unfurl_lite.security.paths import confine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RETRY_EXIT_CODE = 75  # EX_TEMPFAIL: the command asks to be tried again


def command_line(command: Any, dryrun_arg: str | None, dryrun: bool) -> Any:
    """Apply Unfurl's ``%dryrun%`` convention; None means: do not run in this dry run."""
    if isinstance(command, list):
        args = [str(a) for a in command]
        if dryrun:
            if not dryrun_arg:
                return None
            if "%dryrun%" in args:
                return [dryrun_arg if a == "%dryrun%" else a for a in args]
            return [*args, dryrun_arg]
        return [a for a in args if a != "%dryrun%"]
    text = str(command)
    if dryrun:
        if not dryrun_arg:
            return None
        if "%dryrun%" in text:
            return text.replace("%dryrun%", dryrun_arg)
        return f"{text} {dryrun_arg}"
    return text.replace("%dryrun%", "")


def process_args(argv: str | list[str], shell: Any, keeplines: Any) -> tuple[Any, str | None]:
    """(what to start, the shell to start it with: None for none), by the rules of Unfurl's
    Shell configurator: ``shell`` defaults to whether the command is a string, and a
    string is the executable to use (``shell: /usr/bin/bash``); without ``keeplines`` a
    string command's lines are joined with spaces (a folded command line, not a script);
    with a shell, a list is joined into one command line; without one, a string is split
    as the shell would (``shlex``)."""
    if shell is None:
        shell = isinstance(argv, str)
    if isinstance(argv, str):
        text = argv if keeplines else argv.replace("\n", " ")
        if not shell:
            return shlex.split(text), None
        return text, shell if isinstance(shell, str) and shell else "/bin/sh"
    if not shell:
        return argv, None
    return " ".join(argv), shell if isinstance(shell, str) and shell else "/bin/sh"


class Places:
    """The working directories one executor's job has confined so far. Confining walks
    every component of the path with an ``lstat``; a job of N tasks in one directory
    resolves it once, not N times (a refusal is not kept: it is raised again each time)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str, bool], str] = {}
        self._lock = threading.Lock()

    def confined(self, request: OperationRequest) -> str:
        key = (str(request.inputs.get("cwd") or "."), request.cwd, request.allow_outside_paths)
        with self._lock:
            found = self._known.get(key)
            if found is None:
                found = str(confine(key[0], request.cwd, request.allow_outside_paths, "cwd"))
                self._known[key] = found
        return found


def utf8(value: Any) -> Any:
    """A command, its arguments and environment as UTF-8 bytes, as the ensemble wrote
    them: under a locale that is not UTF-8 (``LANG=en_US.ISO-8859-1``, ``LC_ALL=C`` with
    ``PYTHONUTF8=0``), Python would encode ``café`` by the locale, or fail to."""
    if isinstance(value, list):
        return [utf8(item) for item in value]
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value


def _piped_argv(args: Any, shell: str | None) -> list[bytes] | None:
    """The command's argv for the raw-pipes road (``piped``), when its program is a path
    and the road is open here; None: ``Popen``'s road (a program found on PATH, a C
    library without posix_spawn's calls)."""
    argv: list[bytes] = [shell.encode("utf-8", "surrogateescape"), b"-c", args] if shell \
        else list(args)
    return argv if argv and b"/" in argv[0] and piped.available() else None


@dataclass
class Launch:
    """A Shell operation ready to start: what :func:`prepare` worked out of its request."""

    args: Any  # the command, UTF-8 bytes (a list without a shell)
    shell: str | None  # the shell it runs in, None for none
    cwd: str
    env: dict[str, str]
    timeout: float | None

    def piped_argv(self) -> list[bytes] | None:
        """The argv the raw-pipes road starts, or None where only ``Popen``'s can."""
        return _piped_argv(self.args, self.shell)

    def start_piped(self, argv: list[bytes]) -> piped.Child:
        """Start it on the raw-pipes road (``argv`` from :meth:`piped_argv`)."""
        return piped.start(argv[0], argv, piped.environment(self.env), self.cwd)


def _start(launch: Launch) -> piped.Child | Popen:
    """The command started: on raw pipes (``piped``) when its program is a path, else
    through ``Popen`` (a program found on PATH, a C library without posix_spawn's calls)."""
    argv = launch.piped_argv()
    if argv is not None:
        return launch.start_piped(argv)
    return Popen(  # started outside the GIL: parallel tasks use the cores
        launch.args,
        shell=launch.shell is not None,
        executable=launch.shell,
        cwd=launch.cwd,
        env={utf8(k): utf8(v) for k, v in launch.env.items()},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",  # whatever the locale: the ensemble and records are UTF-8
        errors="backslashreplace",  # binary output is recorded escaped: \xff
        start_new_session=True,
    )


def prepare(request: OperationRequest, places: Places | None = None) -> Launch | OperationResult:
    """What to start for ``request``, or its result when nothing starts (no command, a dry
    run of a command without a dryrun form, a working directory refused, a command that
    cannot be split)."""
    inputs = request.inputs
    command = inputs.get("command")
    if command is None or command == "" or command == []:
        return OperationResult(
            success=False, modified=False, error="Shell operation has no command"
        )
    argv = command_line(command, inputs.get("dryrun"), request.dryrun)
    if argv is None:  # a dry run of a command without a ``dryrun`` input
        return OperationResult(
            success=True,
            modified=False,
            skipped=True,
            outputs={"dryrun": "not run: the command has no dryrun form"},
        )
    given: dict[str, Any] = inputs.get("env") or {}
    env = {**request.env, **{str(k): str(v) for k, v in given.items()}}
    timeout = inputs.get("timeout", request.timeout)
    try:
        cwd = (places or Places()).confined(request)
    except PathError as exc:
        return OperationResult(success=False, modified=False, error=exc.format())
    try:
        args, executable = process_args(argv, inputs.get("shell"), inputs.get("keeplines"))
    except ValueError as exc:  # shlex: an unclosed quote
        return OperationResult(
            success=False, modified=False, error=f"could not split the command: {exc}"
        )
    return Launch(utf8(args), executable, cwd, env, float(timeout) if timeout else None)


def not_started(exc: Exception) -> OperationResult:
    """A command that could not start: as Unfurl's Shell configurator (its run fails with
    the error), nothing says whether anything changed, so the instance becomes
    ``unknown`` (unfurl-cases 260)."""
    return OperationResult(success=False, modified=None, error=f"could not start command: {exc}")


def run(request: OperationRequest, processes: ProcessTable | None = None,
        places: Places | None = None) -> OperationResult:
    """Run the command; while it runs it is in ``processes``, the executor's table that a
    kill-cancel of this job stops."""
    launch = prepare(request, places)
    if isinstance(launch, OperationResult):
        return launch
    started = time.monotonic()
    try:
        process = _start(launch)
    except (OSError, ValueError) as exc:
        return not_started(exc)
    with (processes or ProcessTable()).running(request.task_id, process):
        try:
            stdout, stderr = process.communicate(timeout=launch.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill(process)
            stdout, stderr = process.communicate()
            timed_out = True
    return outcome(process.wait(), stdout, stderr, started,  # (wait: reaped, the exit code)
                   launch.timeout if timed_out else None)


def outcome(code: int, stdout: str | None, stderr: str | None, started: float,
            timed_out: float | None = None) -> OperationResult:
    """The operation's result from the command's exit code and output; ``timed_out``: the
    timeout it was stopped at."""
    stdout, stderr = strip_ansi(stdout or ""), strip_ansi(stderr or "")  # records stay plain
    outputs = {
        "returncode": code,
        "stdout": tail(stdout),
        "stderr": tail(stderr),
        "duration": round(time.monotonic() - started, 3),
    }
    if timed_out is not None:
        limit = round(timed_out, 1)
        outputs["timeout"] = limit
        return OperationResult(
            success=False, modified=None, outputs=outputs, error=f"timed out after {limit:g} s"
        )
    if code == 0:
        return OperationResult(success=True, modified=True, outputs=outputs)
    if code == RETRY_EXIT_CODE:
        return OperationResult(
            success=False,
            modified=False,
            outputs=outputs,
            retry=True,
            error="the command asked to be retried (exit 75)",
        )
    if code < 0:
        return OperationResult(
            success=False, modified=None, outputs=outputs, error=f"killed by signal {-code}"
        )
    # as Unfurl's Shell configurator: a command that failed did not say whether it changed
    # anything, so its instance becomes ``unknown`` (not ``error``, not created)
    return OperationResult(
        success=False,
        modified=None,
        outputs=outputs,
        error=f"exit code {code}: {last_line(stderr or stdout)}",
    )


__all__ = ["KILL_GRACE_SECONDS", "OUTPUT_LIMIT", "run"]
