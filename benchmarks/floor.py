"""The floor a deploy of N ``true`` operations cannot go under on this machine.

A fresh interpreter that starts N ``/bin/sh -c true`` commands the way the Shell operation
starts them (a new session, stdin from /dev/null, stdout and stderr read through pipes,
an allow-listed environment, the project as working directory), ``--jobs`` at a time
from a thread pool, and waits for each. No YAML, no plan, no records, no git: what is
left of a deploy's time above this is unfurl-lite's own work. Run it beside a deploy (the
same N and --jobs) and compare; ``benchmarks/ratios.py`` does so.

    python benchmarks/floor.py 200 [--jobs 2] [--command true]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
       "LANG": "C.UTF-8", "UNFURL_WORKER": "local", "UNFURL_JOB": "A0000000000",
       "UNFURL_CHANGEID": "A00000000001"}


def spawn(command: str) -> int:
    process = subprocess.Popen(
        command, shell=True, executable="/bin/sh", cwd=os.getcwd(), env=dict(ENV),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, errors="replace", start_new_session=True,
    )
    process.communicate()
    return process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("count", type=int)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--command", default="true")
    args = parser.parse_args()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        codes = list(pool.map(spawn, [args.command] * args.count))
    sys.exit(1 if any(codes) else 0)


def command(count: int, jobs: int | None = None, command: str = "true") -> list[str]:
    """The argv that measures the floor for ``count`` operations."""
    argv = [sys.executable, os.path.abspath(__file__), str(count), "--command", command]
    return argv + (["--jobs", str(jobs)] if jobs else [])


if __name__ == "__main__":
    main()
