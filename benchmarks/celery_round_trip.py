"""One operation at a time through the executor alone, local and Celery (issue 31 item 12).

Not part of the test suite: run on demand, e.g. ``python benchmarks/celery_round_trip.py``
(``--tasks 300``; ``--root DIR`` times the unfurl-lite checkout at DIR, so two checkouts
can be compared in alternation on a busy machine). It starts a redis-server on 127.0.0.1
(a free port) and one ``unfurl worker``, then submits ``true`` to each executor one task
after the other, with no job around it: the round trip is the latency a chained
operation adds. Besides the wall clock (median and fastest), it gives the CPU each
process spends per task (the job's process, the worker with its operations, Redis),
which says more than the wall clock on a loaded machine, where every hand-off between
processes waits for a core. In the local row the worker and Redis are idle: their
figures there are what they spend doing nothing (heartbeats, timers).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from distributed import free_port, make_repo, stop  # benchmarks/distributed.py, beside this one


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User and system seconds of a process (and of its waited-for children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    used = int(fields[11]) + int(fields[12])
    if children:
        used += int(fields[13]) + int(fields[14])
    return used / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    env = {**os.environ, "PYTHONPATH": args.root, "UNFURL_BROKER": url,
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    root = make_repo("apiVersion: unfurl/v1alpha1\nkind: Ensemble\n", env)
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    worker = None
    try:
        time.sleep(0.3)
        worker = subprocess.Popen(
            [sys.executable, "-m", "unfurl_lite", "worker", "--name", "round-trip",
             "--loglevel", "WARNING"], cwd=root, env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.environ["UNFURL_BROKER"] = url
        os.chdir(root)
        from unfurl_lite.run.executors.celery.controller import CeleryExecutor
        from unfurl_lite.run.executors.local import LocalExecutor
        from unfurl_lite.run.operations.base import OperationRequest

        def request(number: int) -> OperationRequest:
            return OperationRequest(
                task_id=f"A{number:011d}", kind="Shell", class_name="Shell", target="n",
                operation="Standard.create", inputs={"command": "true"}, cwd=str(root),
                env={"PATH": os.environ["PATH"]}, number=number)

        print(f"| executor | round trip, median | fastest | CPU per task: job / worker "
              f"/ Redis (ms) | {args.tasks} tasks |")
        print("|---|---|---|---|---|")
        executors = (("local", LocalExecutor(jobs=4)), ("celery", CeleryExecutor(broker=url)))
        for _, executor in executors:  # warm up: the worker starts, its threads too
            for number in range(1, 11):
                executor.submit(request(number)).result(timeout=60)
        for label, executor in executors:
            before = (own_cpu(), cpu_seconds(worker.pid, True), cpu_seconds(server.pid))
            times = []
            for number in range(11, 11 + args.tasks):
                started = time.perf_counter()
                result = executor.submit(request(number)).result(timeout=60)
                times.append((time.perf_counter() - started) * 1000)
                if not result.success:
                    raise SystemExit(f"{label}: {result.error}")
            after = (own_cpu(), cpu_seconds(worker.pid, True), cpu_seconds(server.pid))
            executor.shutdown()
            per_task = [(b - a) * 1000 / args.tasks for a, b in zip(before, after, strict=True)]
            print(f"| {label} | {statistics.median(times):.2f} ms | {min(times):.2f} ms | "
                  + " / ".join(f"{value:.2f}" for value in per_task) + " | |")
    finally:
        stop(server, [worker] if worker is not None else [])


if __name__ == "__main__":
    main()
