"""The two ratios the project promises at N=200, measured side by side.

Series of the two tools alternate (lite, Unfurl, lite, Unfurl, ...), each in a fresh git
repository with an empty parse cache, timing the first ``plan`` of the ensemble (cold)
and the ``deploy`` after it. Alternating keeps both tools under the same machine load,
which on a shared VM drifts by tens of percent within the hour; the ratio is of the
medians. Run on demand, never in the tests:

    python benchmarks/ratios.py [--nodes 200] [--series 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from generate import ensemble_text
from run import ROOT, Tool, fresh_env, make_repo, timed, unfurl_120, write_between_markers

PHASES = ("plan", "deploy")
TARGETS = {"plan": 50, "deploy": 25}  # issue 29


def series(tool: Tool, nodes: int, timeout: float) -> dict[str, float | None]:
    root = make_repo(ensemble_text(nodes, 10))
    env, cache = fresh_env()
    out: dict[str, float | None] = {}
    try:
        for phase in PHASES:
            seconds, _, note = timed(tool.command(phase), root, timeout, env)
            out[phase] = seconds
            print(f"  {tool.name:14} {phase:7} {seconds or float('nan'):8.2f} s {note}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--series", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=360)
    parser.add_argument("--unfurl-venv", type=Path,
                        default=Path(os.environ.get("UNFURL120_VENV", "/work/venvs/unfurl120")))
    parser.add_argument("--table", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "unfurl_lite")],
                   check=False, stdout=subprocess.DEVNULL)
    lite = Tool("unfurl-lite", [str(Path(sys.executable).parent / "unfurl")], True)
    unfurl = Tool("unfurl-1.2.0", [str(unfurl_120(args.unfurl_venv))], False)
    runs: dict[str, list[dict[str, float | None]]] = {lite.name: [], unfurl.name: []}
    for _ in range(args.series):
        for tool in (lite, unfurl):
            runs[tool.name].append(series(tool, args.nodes, args.timeout))
    lines = [f"Side by side {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()} "
             f"{platform.machine()} {os.cpu_count()} cores, N={args.nodes}, "
             f"{args.series} alternating series per tool (`benchmarks/ratios.py`):", "",
             "| phase | unfurl-1.2.0 median | unfurl-lite median (series) | ratio | target |",
             "|---|---|---|---|---|"]
    for phase in PHASES:
        ours = [r[phase] for r in runs[lite.name] if r[phase] is not None]
        theirs = [r[phase] for r in runs[unfurl.name] if r[phase] is not None]
        if not ours or not theirs:
            lines.append(f"| {phase} | failed | failed | - | >= {TARGETS[phase]}x |")
            continue
        a, b = statistics.median(theirs), statistics.median(ours)
        spread = ", ".join(f"{s:.2f}" for s in ours)
        ratio = a / b
        met = "met" if ratio >= TARGETS[phase] else "not met"
        name = "cold plan" if phase == "plan" else phase
        lines.append(f"| {name} | {a:.2f} s | {b:.2f} s ({spread}) | **{ratio:.0f}x** | "
                     f">= {TARGETS[phase]}x: {met} |")
    text = "\n".join(lines)
    print(text)
    write_between_markers(args.table, text, marker="ratios")


if __name__ == "__main__":
    main()
