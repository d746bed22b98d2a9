"""Time the dashboard's pages on a big project (issue 21): how long each page takes to serve.

Not part of the test suite: run on demand, e.g. ``python benchmarks/dashboard.py 200 --jobs 50``.
It builds a layered DAG of N nodes (benchmarks/generate.py) in a scratch git repo, deploys
it (one job of N tasks), runs J more one-task jobs to make a history, starts the dashboard
on a free port in this process and times each page (median of R requests, wall clock,
one request at a time). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import ensemble_text, node_name  # noqa: E402
from unfurl_lite.view.dashboard.server import start  # noqa: E402


def unfurl(root: Path, *args: str) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(root)}
    done = subprocess.run([sys.executable, "-m", "unfurl_lite", *args], cwd=root, text=True,
                          capture_output=True, env=env)
    if done.returncode:
        raise SystemExit(f"unfurl {' '.join(args)}: {done.stdout}{done.stderr}")


def project(nodes: int, jobs: int, directory: Path) -> Path:
    root = directory / "big"
    root.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "b@example.com"],
                 ["config", "user.name", "Bench"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    (root / "ensemble.yaml").write_text(ensemble_text(nodes, width=10))
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "big"], cwd=root, check=True)
    unfurl(root, "deploy", "--approve")
    for index in range(jobs):
        unfurl(root, "run", "--approve", "--instance", node_name(index % nodes), "--", "true")
    return root / "ensemble.yaml"


def timed(port: int, path: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        began = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        times.append(time.perf_counter() - began)
        connection.close()
        assert response.status == 200, (path, response.status)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("nodes", type=int, nargs="?", default=200)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ensemble = project(args.nodes, args.jobs, Path(tmp))
        first = (ensemble.parent / "jobs.tsv").read_text().split("\t", 1)[0]
        server = start(ensemble, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = int(server.server_address[1])
        print(f"{args.nodes} instances, {args.jobs + 1} jobs (the first of {args.nodes} tasks)\n")
        print("| page | median (s) |\n|---|---|")
        for label, path in (("overview", "/"), ("overview, instances", "/?view=instances"),
                            ("history", "/history"),
                            ("history ?instance=", f"/history?instance={node_name(0)}"),
                            (f"job page ({args.nodes} tasks)", f"/jobs/{first}"),
                            ("/api/status", "/api/status")):
            print(f"| {label} | {timed(port, path, args.repeat):.3f} |")
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
