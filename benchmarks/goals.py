"""Issue 29's goals 1-4 measured in one run, side by side, as docs/benchmarks.md reports them.

Not part of the test suite: run on demand (goal 5, Celery's latency per chained task, is
``benchmarks/celery_round_trip.py``):

    python benchmarks/goals.py [--series 3] [--big 10000] [--big-series 1] [--markdown FILE]

Each series runs every command once, the tools and cases alternating (unfurl-lite,
Unfurl 1.2.0, the floor, ...), each job in a fresh git repository with an empty parse
cache, so all of them meet the same machine load; a figure is the median of the series
with their minimum and maximum, for the wall clock and the CPU (user + system, with the
processes the command waited for). The figures:

1. per task and fixed cost: deploys of N=200 and N=1000 ``true`` operations (a layered
   DAG, after a cold ``plan``) against the floor at the same N (``benchmarks/floor.py``:
   a fresh interpreter starting N commands as the Shell operation starts them). What a
   deploy costs beyond the floor is ``fixed + N * per_task``: two sizes give both;
2. the cold plan and the deploy at N=200 against Unfurl 1.2.0's; ``--version``, ``--help``;
3. at N=``--big``: validate, the cold plan, deploy and the no-op deploy after it, with the
   peak RSS of each;
4. N=1000 independent ``true`` operations with ``--jobs 1`` and ``--jobs 2``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import floor
from generate import ensemble_text, independent_text
from run import (
    LAST_CPU,
    fresh_env,
    make_repo,
    timed,
    unfurl_120,
    write_between_markers,
)

LITE = [sys.executable, "-m", "unfurl_lite"]
JOB = ["--approve", "--dirty=ok", "-q"]
UNFURL_JOB = ["--approve", "--dirty=ok", "--commit"]
Sample = tuple[float, float, float]  # wall seconds, CPU seconds, peak RSS (MB)
Samples = dict[str, list[Sample]]


def _env() -> dict[str, str]:
    return fresh_env()[0]  # a new parse cache, a git identity, this checkout's code


def _time(samples: Samples, key: str, argv: list[str], cwd: Path, env: dict[str, str],
          timeout: float = 3600) -> None:
    seconds, rss, note = timed(argv, cwd, timeout, env)
    if seconds is None:
        print(f"  {key}: {note}", flush=True)
        return
    samples.setdefault(key, []).append((seconds, LAST_CPU[0], rss or 0.0))
    print(f"  {key:28} {seconds:8.3f} s wall {LAST_CPU[0]:8.3f} s CPU {rss or 0:7.0f} MB",
          flush=True)


def _alone(samples: Samples, key: str, argv: list[str]) -> None:
    """One command timed on its own, with a parse cache of its own, removed after."""
    env = _env()
    try:
        _time(samples, key, argv, Path.cwd(), env)
    finally:
        shutil.rmtree(env["UNFURL_LITE_CACHE"], ignore_errors=True)


def _series(samples: Samples, text: str, steps: list[tuple[str, list[str]]],
            env: dict[str, str]) -> None:
    """Commands in turn in one fresh repository holding ``text`` as its ensemble: (the
    key they are timed under, or '' for one run untimed, the command)."""
    root = make_repo(text)
    try:
        for key, argv in steps:
            if key:
                _time(samples, key, argv, root, env)
            else:
                timed(argv, root, 3600, env)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(env["UNFURL_LITE_CACHE"], ignore_errors=True)


def one_series(samples: Samples, unfurl: list[str] | None, big: int, big_too: bool) -> None:
    plan, deploy = [*LITE, "plan", "ensemble.yaml"], [*LITE, "deploy", *JOB, "ensemble.yaml"]
    _series(samples, ensemble_text(200, 10),
            [("lite plan 200", plan), ("lite deploy 200", deploy)], _env())
    if unfurl:
        _series(samples, ensemble_text(200, 10),
                [("unfurl plan 200", [*unfurl, "--home", "", "plan", "ensemble.yaml"]),
                 ("unfurl deploy 200",
                  [*unfurl, "--home", "", "deploy", *UNFURL_JOB, "ensemble.yaml"])], _env())
    _alone(samples, "floor 200", floor.command(200))
    _series(samples, ensemble_text(1000, 10), [("", plan), ("lite deploy 1000", deploy)],
            _env())
    _alone(samples, "floor 1000", floor.command(1000))
    _alone(samples, "interpreter", [sys.executable, "-c", "pass"])
    _alone(samples, "--version", [*LITE, "--version"])
    _alone(samples, "--help", [*LITE, "--help"])
    for jobs in ("1", "2"):
        _series(samples, independent_text(1000, "true"),
                [("", plan), (f"jobs {jobs}", [*deploy[:-1], "--jobs", jobs, "ensemble.yaml"])],
                _env())
    if big_too:
        text = ensemble_text(big, 10)
        _series(samples, text, [(f"validate {big}", [*LITE, "validate", "ensemble.yaml"])],
                _env())
        _series(samples, text, [(f"plan {big}", plan), (f"deploy {big}", deploy),
                                (f"no-op deploy {big}", deploy)], _env())


def _stat(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def _median(samples: Samples, key: str, index: int) -> float | None:
    found = samples.get(key)
    return statistics.median(s[index] for s in found) if found else None


def report(samples: Samples, big: int, load: tuple[float, float]) -> str:
    lines = ["| measure | wall s, median (min-max) | CPU s, median (min-max) | peak RSS MB |",
             "|---|---|---|---|"]
    for key, found in samples.items():
        lines.append(f"| {key} | {_stat([s[0] for s in found])} | "
                     f"{_stat([s[1] for s in found])} | {max(s[2] for s in found):.0f} |")
    derived: list[str] = []

    def ratio(label: str, a: str, b: str, goal: str) -> None:
        for index, clock in ((0, "wall"), (1, "CPU")):
            top, bottom = _median(samples, a, index), _median(samples, b, index)
            if top and bottom:
                derived.append(f"| {label} ({clock}) | {top / bottom:.2f}x | {goal} |")

    ratio("deploy N=200: Unfurl 1.2.0 / unfurl-lite", "unfurl deploy 200", "lite deploy 200",
          ">= 25x")
    ratio("cold plan N=200: Unfurl 1.2.0 / unfurl-lite", "unfurl plan 200", "lite plan 200",
          ">= 50x")
    ratio("deploy N=200 / its floor", "lite deploy 200", "floor 200", "<= 1.5x")
    ratio("N=1000 `true`: --jobs 1 / --jobs 2", "jobs 1", "jobs 2", ">= 1.6x")
    for index, clock in ((0, "wall"), (1, "CPU")):
        d200, d1000 = _median(samples, "lite deploy 200", index), _median(
            samples, "lite deploy 1000", index)
        f200, f1000 = _median(samples, "floor 200", index), _median(samples, "floor 1000", index)
        if None not in (d200, d1000, f200, f1000):
            assert d200 is not None and d1000 is not None and f200 is not None \
                and f1000 is not None
            per_task = ((d1000 - f1000) - (d200 - f200)) / 800
            fixed = (d200 - f200) - 200 * per_task
            derived.append(f"| per task beyond the operation's spawn ({clock}) | "
                           f"{per_task * 1000:.2f} ms | <= 0.25 ms |")
            derived.append(f"| fixed cost per job beyond interpreter start ({clock}) | "
                           f"{fixed * 1000:.0f} ms | <= 60 ms |")
    lines += ["", "| derived (medians) | measured | goal |", "|---|---|---|", *derived]
    lines.insert(0, f"Measured {time.strftime('%Y-%m-%d %H:%M')} UTC by `benchmarks/goals.py` "
                 f"(N={big} for goal 3), load average {load[0]:.1f} at the start and "
                 f"{load[1]:.1f} at the end, {os.cpu_count()} cores:\n")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=3)
    parser.add_argument("--big", type=int, default=10000)
    parser.add_argument("--big-series", type=int, default=1,
                        help="how many of the series also time N=--big (0: none)")
    parser.add_argument("--no-unfurl", action="store_true")
    parser.add_argument("--unfurl-venv", type=Path,
                        default=Path(os.environ.get("UNFURL120_VENV", "/work/venvs/unfurl120")))
    parser.add_argument("--markdown", type=Path,
                        help="write the report between the 'goals' markers of this file")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    unfurl = None if args.no_unfurl else [str(unfurl_120(args.unfurl_venv))]
    samples: Samples = {}
    start = os.getloadavg()[0]
    for number in range(args.series):
        print(f"series {number + 1} of {args.series}", flush=True)
        one_series(samples, unfurl, args.big, number < args.big_series)
    text = report(samples, args.big, (start, os.getloadavg()[0]))
    print(text)
    if args.markdown:
        write_between_markers(args.markdown, text, marker="goals")


if __name__ == "__main__":
    main()
