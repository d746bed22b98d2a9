"""Python operations: the user's own function, named in the spec as ``package.module:function``.

Only code named in the spec runs; the name is never produced by a template.

The function runs in a child Python process, not in the job's: it gets exactly the
environment a Shell operation gets (the allow-list, the operation's ``env`` and the
project's ``UNFURL_*`` variables, not the caller's whole environment), the operation's
``timeout`` and kill-cancel apply to it as to a command, and whatever it does (``sys.exit``,
``os._exit``, raising ``KeyboardInterrupt``, exhausting memory) fails its task only, never
the job that records it.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from unfurl_lite.model.narrow import is_map
from unfurl_lite.run.operations.base import OperationRequest, OperationResult, RetryOperation
from unfurl_lite.run.operations.output import last_line, tail
from unfurl_lite.run.operations.processes import ProcessTable, kill

PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[2]); "
    "from unfurl_lite.run.operations.python import child_main; child_main(int(sys.argv[1]))"
)


def resolve(class_name: str, project_root: str) -> Any:
    module_name, sep, attr = class_name.partition(":")
    if not sep:
        module_name, _, attr = class_name.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"expected 'package.module:function', got {class_name!r}")
    if project_root not in sys.path:
        sys.path.insert(0, project_root)
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def run(request: OperationRequest, processes: ProcessTable | None = None) -> OperationResult:
    """A Python operation, run in a child process (a crash or ``sys.exit`` fails its task, not
    the job), given its context as JSON and read back as a result."""
    context = {
        "target": request.target,
        "operation": request.operation,
        "inputs": request.inputs,
        "attributes": dict(request.attributes),
        "properties": dict(request.properties),
        "dryrun": request.dryrun,
        "task_id": request.task_id,
    }
    payload = json.dumps(
        {"class_name": request.class_name, "cwd": request.cwd, "context": context,
         "sys_path": [p for p in sys.path if p]},  # imports resolve as in this process
        default=str,
    )
    given: dict[str, Any] = request.inputs.get("env") or {}
    env = {**request.env, **{str(k): str(v) for k, v in given.items()}}
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, str(write_end), PACKAGE_PARENT],
            cwd=request.cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="backslashreplace",  # binary output is recorded escaped: \xff
            pass_fds=(write_end,),
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_end)
        return OperationResult(
            success=False, modified=False, error=f"could not start Python operation: {exc}"
        )
    finally:
        os.close(write_end)
    reply: list[bytes] = []
    reader = threading.Thread(target=lambda: reply.append(_read_all(read_end)), daemon=True)
    reader.start()
    timed_out = False
    with (processes or ProcessTable()).running(request.task_id, process):
        try:
            stdout, stderr = process.communicate(
                payload, timeout=float(request.timeout) if request.timeout else None
            )
        except subprocess.TimeoutExpired:
            kill(process)
            stdout, stderr = process.communicate()
            timed_out = True
    reader.join()
    printed = {k: tail(v) for k, v in (("stdout", stdout), ("stderr", stderr)) if v}
    if timed_out:
        return OperationResult(success=False, modified=None, outputs=printed,
                               error=f"timed out after {request.timeout} s")
    try:
        answer = json.loads(reply[0].decode("utf-8")) if reply and reply[0] else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        code = process.returncode
        why = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return OperationResult(
            success=False, modified=None, outputs=printed,
            error=f"Python operation {request.class_name!r} {why} without a result: "
            f"{last_line(stderr)}",
        )
    result = _from_answer(answer, request.class_name)
    result.outputs = {**printed, **result.outputs}
    return result


def _read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _from_answer(answer: dict[str, Any], class_name: str) -> OperationResult:
    if "load_error" in answer:
        return OperationResult(
            success=False,
            modified=False,
            error=f"cannot load Python operation {class_name!r}: {answer['load_error']}",
        )
    if "retry" in answer:
        return OperationResult(success=False, modified=False, retry=True,
                               error=str(answer["retry"]) or "retry requested")
    if "error" in answer:  # the user's code failed: that is the task's outcome, not ours
        return OperationResult(success=False, modified=None, error=str(answer["error"]))
    return _result(answer.get("returned"))


def child_main(fd: int) -> None:
    """In the child: run the function and write what became of it to ``fd`` as JSON."""
    os.set_inheritable(fd, False)  # a daemon the operation starts must not hold it open
    payload = json.loads(sys.stdin.read())
    sys.path.extend(p for p in payload.get("sys_path") or [] if p not in sys.path)
    answer: dict[str, Any]
    try:
        function = resolve(payload["class_name"], payload["cwd"])
    except BaseException as exc:  # the user's module: anything, even SystemExit
        answer = {"load_error": f"{type(exc).__name__}: {exc}"}
    else:
        try:
            answer = {"returned": function(payload["context"])}
        except RetryOperation as exc:
            answer = {"retry": str(exc)}
        except BaseException as exc:  # the user's function: anything, even SystemExit
            answer = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        text = json.dumps(answer, default=str)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"error": f"the operation's result is not plain data: {exc}"})
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _result(returned: Any) -> OperationResult:
    if returned is None:
        return OperationResult(success=True, modified=True)
    if not is_map(returned):
        return OperationResult(success=True, modified=True, outputs={"result": returned})
    return OperationResult(
        success=bool(returned.get("success", True)),
        modified=returned.get("modified", True),
        status=returned.get("status"),
        attributes=dict(returned.get("attributes") or {}),
        outputs=dict(returned.get("outputs") or {}),
        error=returned.get("error"),
        resources=list(returned.get("resources") or []),
    )
