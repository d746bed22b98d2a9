"""A Python operation run on a worker, in a process of its own.

Each task imports the user's modules afresh from its own project directory (the job's
commit), so one project never runs another's ``myops.py`` and an edited module is never
served from an earlier import. The request comes on stdin and the result goes to stdout,
as the wire format's JSON; whatever the operation prints goes to stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

from unfurl_lite.operations.base import OperationRequest, OperationResult

RESULT_MARK = "@@unfurl-lite-result@@ "


def run(request: OperationRequest, watch: Callable[[int, bool], None] | None = None
        ) -> OperationResult:
    from unfurl_lite.executors.watchdog import package_path
    from unfurl_lite.executors.wire import decode_result, encode_request

    process = subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite.executors.isolated"],
        cwd=request.cwd, env={**request.env, "PYTHONPATH": package_path()},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    if watch:
        watch(process.pid, True)
    try:
        out, err = process.communicate(json.dumps(encode_request(request)),
                                       timeout=float(request.timeout) if request.timeout else None)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        return OperationResult(success=False, modified=None,
                               error=f"timed out after {request.timeout} s")
    finally:
        if watch:
            watch(process.pid, False)
    for line in reversed(out.split("\n")):
        if line.startswith(RESULT_MARK):
            return decode_result(json.loads(line[len(RESULT_MARK):]))
    tail = (err or "").strip().splitlines()[-1:] or [f"exit code {process.returncode}"]
    return OperationResult(success=False, modified=None,
                           error=f"the Python operation's process ended without a result: "
                           f"{tail[0]}")


def main() -> None:
    from unfurl_lite.executors.wire import decode_request, encode_result
    from unfurl_lite.operations import python

    request = decode_request(json.loads(sys.stdin.read()))
    sys.path.insert(0, os.getcwd())
    out = sys.stdout
    sys.stdout = sys.stderr
    result = python.run(request)
    out.write(RESULT_MARK + json.dumps(encode_result(result)) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
