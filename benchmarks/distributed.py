"""Time the Celery executor against the local one (issue 31's targets).

Not part of the test suite: run on demand, e.g. ``python benchmarks/distributed.py``.
It starts a redis-server on 127.0.0.1 (a free port) and two ``unfurl worker`` processes
at their default concurrency, then times, with each executor: a chain of N ``true``
operations (and of 1, so the per-operation latency excludes the job's fixed costs), 100
independent ``true`` and 20 independent ``sleep 1`` spread over the two workers. Each
case is timed twice: the whole command (wall clock) and the job itself (the duration
its summary prints, which leaves out the interpreter's start, imports and the
executor's start and stop). Prints a markdown table. ``--root DIR`` times the checkout at
DIR, so two checkouts can be compared in the same minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def stop(server: subprocess.Popen, workers: list[subprocess.Popen]) -> None:
    """Each worker with its whole process group (its commands too), then the broker."""
    for worker in workers:
        os.killpg(worker.pid, 9)
        worker.wait()
    server.kill()
    server.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nodes(count: int, command: str, chained: bool) -> str:
    lines = ["apiVersion: unfurl/v1alpha1", "kind: Ensemble", "spec:", "  service_template:",
             "    topology_template:", "      node_templates:"]
    for i in range(count):
        lines += [f"        n{i}:", "          type: tosca.nodes.Root"]
        if chained and i:
            lines += ["          requirements:", f"            - dependency: n{i - 1}"]
        lines += ["          interfaces:", "            Standard:", "              operations:",
                  f"                create: {command!r}", "                delete: 'true'"]
    return "\n".join(lines) + "\n"


def make_repo(text: str, env: dict[str, str]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="unfurl-dist-bench-"))
    (root / "ensemble.yaml").write_text(text)
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "spec"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    return root


def timed_deploy(root: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """(the command's wall-clock seconds, the job's own seconds from its summary)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "unfurl_lite", "deploy", "--approve",
                           "--json", *extra], cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"deploy failed in {root}:\n{done.stdout}{done.stderr}")
    return seconds, float(json.loads(done.stdout)["duration"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chain", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", default=str(ROOT),
                        help="the unfurl-lite checkout to time (default: this one)")
    args = parser.parse_args()
    redis_server = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    env = {**os.environ, "PYTHONPATH": args.root, "GIT_AUTHOR_NAME": "bench",
           "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.com", "UNFURL_BROKER": url}
    server = subprocess.Popen([redis_server, "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        time.sleep(0.5)
        for name in ("bench-1", "bench-2"):
            workers.append(subprocess.Popen(
                [sys.executable, "-m", "unfurl_lite", "worker", "--name", name,
                 "--loglevel", "WARNING"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        time.sleep(6)
        celery = ("--executor", "celery")
        rows: list[tuple[str, str, str]] = []

        def best(text: str, *extra: str) -> tuple[float, float]:
            runs = [timed_deploy(make_repo(text, env), env, *extra) for _ in range(args.repeat)]
            return min(r[0] for r in runs), min(r[1] for r in runs)

        def shown(times: tuple[float, float]) -> str:
            return f"{times[0]:.2f} s (job {times[1]:.2f} s)"

        for label, extra in (("local", ()), ("celery", celery)):
            one = best(nodes(1, "true", True), *extra)
            chain = best(nodes(args.chain, "true", True), *extra)
            per_op = (chain[1] - one[1]) / (args.chain - 1) * 1000
            rows.append((label, f"chain of {args.chain} `true`",
                         f"{shown(chain)}: **{per_op:.1f} ms per chained operation**"))
        for label, extra in (("local", ()), ("celery", celery)):
            rows.append((label, "100 independent `true` (--jobs 16)",
                         shown(best(nodes(100, "true", False), "--jobs", "16", *extra))))
        sleeps: dict[str, tuple[float, float]] = {}
        for label, extra in (("local", ()), ("celery", celery)):
            sleeps[label] = best(nodes(20, "sleep 1", False), "--jobs", "20", *extra)
            rows.append((label, "20 independent `sleep 1` (--jobs 20; two default workers)",
                         shown(sleeps[label])))
        rows.append(("celery / local", "20 `sleep 1`, the job's time",
                     f"**{sleeps['celery'][1] / sleeps['local'][1]:.2f}x**"))
        print(f"| executor | case | best of {args.repeat} |")
        print("|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    finally:
        stop(server, workers)


if __name__ == "__main__":
    main()
