"""Run one command-line tool many times without paying for its imports each time.

side_by_side.py runs every case's six steps in Unfurl 1.2.0 and here; most of a step's
CPU is the interpreter importing the tool (Unfurl imports Ansible: about 1.7 s of CPU
before it reads the ensemble). This server imports the tool once, then forks a child per
request, so each step still runs in a fresh process of its own (its own cwd, environment,
exit status, no state shared with the step before), as the command itself would.

Started by the harness with the tool's own interpreter (``python forkserver.py
module:function [preload ...]``); it reads one JSON request a line from stdin
(``{"cwd", "args", "env", "output"}``: the step's output goes to the file ``output``) and
answers each with ``{"exit": N}``. Standard library only: Unfurl's virtualenv runs it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any


def _exit_code(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _child(entry: Callable[[], Any], request: dict[str, Any]) -> None:
    """The step itself, in the forked child: never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.update(request.get("env") or {})
        out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        sys.argv = [request.get("prog", "unfurl"), *request["args"]]
        try:
            code = _exit_code(entry())
        except SystemExit as stop:
            code = _exit_code(stop.code)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def serve(target: str, preload: list[str]) -> None:
    module, _, function = target.partition(":")
    entry = getattr(importlib.import_module(module), function)
    for name in preload:
        importlib.import_module(name)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(entry, request)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
