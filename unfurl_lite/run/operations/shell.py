"""The Shell operation: run a command, report its exit code and output.

A string command runs through ``/bin/sh -c`` as Unfurl does; a list runs without a shell.
The environment is an allow-list plus what the operation declares, so an operation does
not silently depend on (or leak) whatever happened to be in the caller's environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from unfurl_lite.cli.terminal import strip_ansi
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.security.paths import PathError, confine

RETRY_EXIT_CODE = 75  # EX_TEMPFAIL: the command asks to be tried again
OUTPUT_LIMIT = 64 * 1024
KILL_GRACE_SECONDS = 5.0

_running: dict[str, subprocess.Popen[str]] = {}
_lock = threading.Lock()
#: told of each command's process group as it starts (True) and ends (False): a Celery
#: worker's watchdog kills them if the worker dies
watch_processes: Callable[[int, bool], None] | None = None


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


def run(request: OperationRequest) -> OperationResult:
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
    env = {**request.env, **{str(k): str(v) for k, v in (inputs.get("env") or {}).items()}}
    timeout = inputs.get("timeout", request.timeout)
    try:
        cwd = str(
            confine(inputs.get("cwd") or ".", request.cwd, request.allow_outside_paths, "cwd")
        )
    except PathError as exc:
        return OperationResult(success=False, modified=False, error=exc.format())
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            shell=isinstance(argv, str),
            executable="/bin/sh" if isinstance(argv, str) else None,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        return OperationResult(
            success=False, modified=False, error=f"could not start command: {exc}"
        )
    with _lock:
        _running[request.task_id] = process
    if watch_processes is not None:
        watch_processes(process.pid, True)
    try:
        stdout, stderr = process.communicate(timeout=float(timeout) if timeout else None)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill(process)
        stdout, stderr = process.communicate()
        timed_out = True
    finally:
        with _lock:
            _running.pop(request.task_id, None)
        if watch_processes is not None:
            watch_processes(process.pid, False)
    code = process.returncode
    stdout, stderr = strip_ansi(stdout or ""), strip_ansi(stderr or "")  # records stay plain
    outputs = {
        "returncode": code,
        "stdout": _tail(stdout),
        "stderr": _tail(stderr),
        "duration": round(time.monotonic() - started, 3),
    }
    if timed_out:
        limit = round(float(timeout or 0), 1)
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
    return OperationResult(
        success=False,
        modified=True,
        outputs=outputs,
        error=f"exit code {code}: {_last_line(stderr or stdout)}",
    )


def _tail(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= OUTPUT_LIMIT else "...\n" + text[-OUTPUT_LIMIT:]


def _last_line(text: str | None) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def _kill(process: subprocess.Popen[str], grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the command's process group, then SIGKILL after ``grace`` seconds."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def terminate_all(grace: float = KILL_GRACE_SECONDS) -> list[str]:
    """Kill every running command (kill-cancel); returns the task ids that were running."""
    with _lock:
        running = list(_running.items())
    threads = [threading.Thread(target=_kill, args=(p, grace)) for _, p in running]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [task_id for task_id, _ in running]


def terminate_tasks(task_ids: set[str], grace: float = KILL_GRACE_SECONDS) -> list[str]:
    """Kill the commands of these tasks only (a worker told to terminate some tasks)."""
    with _lock:
        running = [(t, p) for t, p in _running.items() if t in task_ids]
    for _, process in running:
        threading.Thread(target=_kill, args=(process, grace), daemon=True).start()
    return [task_id for task_id, _ in running]
