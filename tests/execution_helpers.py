"""Ensembles of slow shell operations that leave start/end marks, and process control."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT


def chain_ensemble(
    names: list[str],
    requires: dict[str, list[str]],
    marks: Path,
    sleep: float | dict[str, float] = 0.3,
    failing: dict[str, str] | None = None,
) -> str:
    """Nodes whose configure writes ``<name>.start``, sleeps, then ``<name>.end``.

    ``sleep``: seconds for every node, or each node's (``{name: seconds}``, 0 for a node
    not named). ``failing[name]`` is a shell condition; while it holds the node's configure
    fails.
    """
    failing = failing or {}
    sleeps = sleep if isinstance(sleep, dict) else dict.fromkeys(names, sleep)
    lines = [
        "apiVersion: unfurl/v1alpha1",
        "kind: Ensemble",
        "spec:",
        "  service_template:",
        "    topology_template:",
        "      node_templates:",
    ]
    for name in names:
        fail = failing.get(name)
        check = f"if {fail}; then exit 1; fi; " if fail else ""
        command = (
            f"echo $$ >> {marks}/{name}.start; {check}sleep {sleeps.get(name, 0)}; "
            f"echo done >> {marks}/{name}.end"
        )
        lines += [f"        {name}:", "          type: tosca.nodes.Root"]
        deps = requires.get(name) or []
        if deps:
            lines.append("          requirements:")
            lines += [f"            - dependency: {d}" for d in deps]
        lines += [
            "          interfaces:",
            "            Standard:",
            "              operations:",
            f"                configure: '{command}'",
        ]
    return "\n".join(lines) + "\n"


def start_unfurl(cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def count(marks: Path, suffix: str) -> int:
    return len(list(marks.glob(f"*.{suffix}")))


def wait_for(predicate, process: subprocess.Popen[str] | None = None, limit: float = 60.0) -> None:
    """Poll (not sleep blindly) until ``predicate()``; fail if the process ends first."""
    deadline = time.monotonic() + limit
    while not predicate():
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"process ended early ({process.returncode}): {out}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def kill9(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate()


def every_byte(root: Path) -> bytes:
    """Every file under the project (``marks`` aside) and every git object, decompressed:
    where a leaked secret would be found."""
    chunks = [p.read_bytes() for p in root.rglob("*")
              if p.is_file() and "marks" not in p.relative_to(root).parts
              and "objects" not in p.relative_to(root).parts]
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root,
                             capture_output=True, check=True).stdout
    return b"\n".join([*chunks, objects])


#: runs ``python -m unfurl_lite`` and, as it exits, writes its own peak memory (VmHWM, kB)
#: to the file named by the environment: the kernel's ru_maxrss of a child also counts the
#: memory of the parent it was forked from, so a test process grown large by earlier tests
#: would seem to be the child's peak
_MEASURED = """
import atexit, os, runpy, sys
def _peak():
    with open('/proc/self/status') as status:
        hwm = next(line for line in status if line.startswith('VmHWM:'))
    with open(os.environ['UNFURL_TEST_PEAK_FILE'], 'w') as out:
        out.write(hwm.split()[1])
atexit.register(_peak)
sys.argv[0] = 'unfurl'
runpy.run_module('unfurl_lite', run_name='__main__', alter_sys=True)
"""


def run_measured(cwd: Path, *args: str) -> tuple[int, str, int]:
    """Run ``unfurl ARGS`` in a fresh process: its exit code, output (stdout and stderr)
    and its own peak memory in KB."""
    peak_file = cwd.parent / f".peak-{os.getpid()}-{time.monotonic_ns()}"
    process = subprocess.run(
        [sys.executable, "-c", _MEASURED, *args], cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "UNFURL_TEST_PEAK_FILE": str(peak_file)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    peak = int(peak_file.read_text())
    peak_file.unlink()
    return process.returncode, process.stdout, peak
