"""Time unfurl-lite and Unfurl 1.2.0 side by side on generated ensembles.

Not part of the test suite: run on demand, e.g.

    python benchmarks/run.py --sizes 10,100,200,500,2000,10000

For each N it makes a fresh git repo holding a layered DAG (see generate.py) and times,
for each tool, ``plan``, ``deploy``, a second ``deploy`` with nothing to do and
``undeploy``, with each process's peak RSS (from wait4). It also times ``--version``
(best of 5) and 20 independent ``sleep 1`` operations. Unfurl runs only up to
``--unfurl-max`` nodes and each of its commands is stopped after ``--timeout`` seconds.
Results go to a JSON file, a markdown table and a PNG plot.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import ensemble_text, independent_text

ROOT = Path(__file__).resolve().parent.parent
UNFURL_VERSION = "1.2.0"
PHASES = ("plan", "plan-again", "deploy", "deploy-noop", "undeploy")


@dataclass
class Measure:
    tool: str
    case: str  # "layered", "parallel" or "startup"
    nodes: int
    phase: str
    seconds: float | None  # None: timed out or failed
    rss_mb: float | None
    note: str = ""
    cpu: float | None = None  # user + system seconds, of the process and what it waited for


@dataclass
class Tool:
    name: str
    argv: list[str]  # the command, before its arguments
    jobs_flag: bool  # accepts --jobs

    def version(self) -> list[str]:
        """Unfurl has no --version option; its ``version`` command is the equivalent."""
        if self.name == "unfurl-1.2.0":
            return [*self.argv, "--home", "", "version"]
        return [*self.argv, "--version"]

    def command(self, phase: str, parallel: int | None = None) -> list[str]:
        if self.name == "unfurl-1.2.0":
            verb = {"plan": "plan", "plan-again": "plan", "deploy": "deploy",
                    "deploy-noop": "deploy", "undeploy": "undeploy"}[phase]
            extra = [] if verb == "plan" else ["--approve", "--dirty=ok", "--commit"]
            return [*self.argv, "--home", "", verb, *extra, "ensemble.yaml"]
        verb = {"deploy-noop": "deploy", "plan-again": "plan"}.get(phase, phase)
        extra = [] if verb == "plan" else ["--approve", "--dirty=ok", "-q"]
        if parallel and verb != "plan":
            extra += ["--jobs", str(parallel)]
        return [*self.argv, verb, *extra, "ensemble.yaml"]


LAST_CPU: list[float] = [0.0]  # the CPU seconds of the last timed() command


def timed(argv: list[str], cwd: Path, timeout: float,
          env: dict[str, str] | None = None) -> tuple[float | None, float | None, str]:
    """Wall-clock seconds and peak RSS (MB) of one process, or None on timeout/failure;
    its CPU seconds (user + system, with the processes it waited for) in ``LAST_CPU``.

    stderr goes to a file, not a pipe: a pipe nobody reads fills at 64 KB and blocks the
    process (Unfurl's undeploy logs that much, and sat idle until the timeout)."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors,
            start_new_session=True, env=env,
        )
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(process.pid, 9)
                _, status, usage = os.wait4(process.pid, 0)
                return None, usage.ru_maxrss / 1024, f"stopped after {timeout:.0f} s"
            time.sleep(0.005)
        elapsed = time.perf_counter() - started
        LAST_CPU[0] = usage.ru_utime + usage.ru_stime
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        last = err.strip().splitlines()[-1:] or [""]
        return None, usage.ru_maxrss / 1024, f"exit {code}: {last[0][:80]}"
    return elapsed, usage.ru_maxrss / 1024, ""


#: who the timed commands commit as: on a machine without a git identity every
#: unfurl-lite job refuses to commit (exit 1) while Unfurl 1.2.0 commits anyway
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def make_repo(text: str) -> Path:
    """A fresh git repository holding ``text`` as ensemble.yaml, with a git identity in its
    own config, so both tools commit whatever the machine's global config says."""
    root = Path(tempfile.mkdtemp(prefix="ulbench-"))
    (root / ".gitignore").write_text("jobs/*.log\ntosca_repositories\n")
    (root / "ensemble.yaml").write_text(text)
    env = {**os.environ, **IDENTITY}
    for args in (["init", "-q"], ["config", "user.name", "bench"],
                 ["config", "user.email", "bench@example.com"], ["add", "-A"],
                 ["commit", "-qm", "ensemble"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    return root


def unfurl_120(venv: Path) -> Path:
    """Unfurl 1.2.0's command, installed from the package registry when missing."""
    command = venv / "bin" / "unfurl"
    if not command.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q",
                        f"unfurl=={UNFURL_VERSION}"], check=True)
    return command


def fresh_env() -> tuple[dict[str, str], Path]:
    """A new, empty parse cache for one series of commands, as on a machine that never saw
    this ensemble: ``plan`` is timed cold; later commands find what earlier ones stored."""
    cache = Path(tempfile.mkdtemp(prefix="ulbench-cache-"))
    # PYTHONPATH: the `unfurl` command imports this checkout, whatever it was installed from
    return {**os.environ, **IDENTITY, "UNFURL_LITE_CACHE": str(cache),
            "PYTHONPATH": str(ROOT)}, cache


def run_layered(tool: Tool, nodes: int, width: int, timeout: float) -> list[Measure]:
    root = make_repo(ensemble_text(nodes, width))
    env, cache = fresh_env()
    out = []
    try:
        for phase in PHASES:
            seconds, rss, note = timed(tool.command(phase), root, timeout, env)
            out.append(Measure(tool.name, "layered", nodes, phase, seconds, rss, note,
                               LAST_CPU[0] if seconds is not None else None))
            print(f"  {tool.name:14} N={nodes:<6} {phase:12} "
                  f"{_fmt(seconds):>9} s {rss or 0:7.0f} MB {note}", flush=True)
            if seconds is None:
                break
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return out


def median_of(series: list[list[Measure]]) -> list[Measure]:
    """One Measure per phase: the median time of the repeats, the highest peak RSS."""
    out = []
    for phase_runs in zip(*series, strict=False):
        phase_runs = list(phase_runs)
        times = sorted(m.seconds for m in phase_runs if m.seconds is not None)
        cpus = sorted(m.cpu for m in phase_runs if m.cpu is not None)
        first = phase_runs[0]
        out.append(Measure(
            first.tool, first.case, first.nodes, first.phase,
            times[len(times) // 2] if len(times) == len(phase_runs) else None,
            max((m.rss_mb or 0) for m in phase_runs),
            first.note or (f"median of {len(phase_runs)}" if len(phase_runs) > 1 else ""),
            cpus[len(cpus) // 2] if cpus else None,
        ))
    return out


def run_parallel(tool: Tool, count: int, timeout: float) -> Measure:
    root = make_repo(independent_text(count, "sleep 1"))
    env, cache = fresh_env()
    try:
        argv = tool.command("deploy", parallel=count if tool.jobs_flag else None)
        seconds, rss, note = timed(argv, root, timeout, env)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    print(f"  {tool.name:14} {count} x sleep 1: {_fmt(seconds)} s {note}", flush=True)
    return Measure(tool.name, "parallel", count, "deploy", seconds, rss, note)


def run_startup(tool: Tool) -> Measure:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout, as in fresh_env()
    best = min(timed(tool.version(), ROOT, 60, env)[0] or 99 for _ in range(5))
    print(f"  {tool.name:14} {' '.join(tool.version()[1:])} {best:.3f} s", flush=True)
    return Measure(tool.name, "startup", 0, "--version", best, None)


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


# ------------------------------------------------------------------------------ reports


def slope_ms(measures: list[Measure], tool: str, phase: str) -> float | None:
    """Least-squares slope of time over N, in ms per node."""
    points = [(m.nodes, m.seconds) for m in measures
              if m.tool == tool and m.case == "layered" and m.phase == phase and m.seconds]
    if len(points) < 2:
        return None
    mean_n = sum(n for n, _ in points) / len(points)
    mean_t = sum(t for _, t in points) / len(points)
    num = sum((n - mean_n) * (t - mean_t) for n, t in points)
    den = sum((n - mean_n) ** 2 for n, _ in points)
    return 1000 * num / den if den else None


def table(measures: list[Measure]) -> str:
    tools = sorted({m.tool for m in measures})
    sizes = sorted({m.nodes for m in measures if m.case == "layered"})
    lookup = {(m.tool, m.nodes, m.phase): m for m in measures if m.case == "layered"}
    head = "| N | tool | " + " | ".join(PHASES) + " | deploy CPU | peak RSS (MB) |"
    lines = [head, "|" + "---|" * (len(PHASES) + 4)]
    for n in sizes:
        for tool in tools:
            cells = [lookup.get((tool, n, p)) for p in PHASES]
            if not any(cells):
                continue
            text = [("not run" if c is None else (f"{c.seconds:.2f} s" if c.seconds is not None
                     else c.note)) for c in cells]
            rss = max((c.rss_mb or 0) for c in cells if c is not None)
            deploy = lookup.get((tool, n, "deploy"))
            cpu = f"{deploy.cpu:.2f} s" if deploy and deploy.cpu is not None else "-"
            lines.append(f"| {n} | {tool} | " + " | ".join(text) + f" | {cpu} | {rss:.0f} |")
    lines.append("")
    lines.append("| case | " + " | ".join(tools) + " |")
    lines.append("|---|" + "---|" * len(tools))
    for case, phase, label in (("startup", "--version", "`--version` (best of 5)"),
                               ("parallel", "deploy", "20 independent `sleep 1`")):
        row = []
        for tool in tools:
            found = [m for m in measures if m.tool == tool and m.case == case
                     and m.phase == phase]
            row.append(_fmt(found[0].seconds) + " s" if found else "not run")
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def ratio_table(measures: list[Measure], slow: str = "unfurl-1.2.0",
                fast: str = "unfurl-lite") -> str:
    """How many times faster (time) and smaller (peak RSS) one tool is than the other."""
    lookup = {(m.tool, m.nodes, m.phase): m for m in measures if m.case == "layered"}
    sizes = sorted({n for (tool, n, _) in lookup if tool == slow}
                   & {n for (tool, n, _) in lookup if tool == fast})
    if not sizes:
        return ""
    lines = [f"{slow} time / {fast} time (higher is better for {fast}):", "",
             "| N | " + " | ".join(PHASES) + " | peak RSS |",
             "|" + "---|" * (len(PHASES) + 2)]
    for n in sizes:
        cells = []
        for phase in PHASES:
            a, b = lookup.get((slow, n, phase)), lookup.get((fast, n, phase))
            ok = a and b and a.seconds and b.seconds
            cells.append(f"{a.seconds / b.seconds:.0f}x" if ok else "-")  # type: ignore[union-attr]
        rss_a = max((m.rss_mb or 0) for (t, k, _), m in lookup.items() if t == slow and k == n)
        rss_b = max((m.rss_mb or 0) for (t, k, _), m in lookup.items() if t == fast and k == n)
        cells.append(f"{rss_a / rss_b:.0f}x" if rss_b else "-")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"




def write_between_markers(path: Path, text: str, marker: str = "results") -> None:
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    old = path.read_text() if path.exists() else f"{start}\n{end}\n"
    if start not in old or end not in old:
        old += f"\n{start}\n{end}\n"
    head, _, rest = old.partition(start)
    _, _, tail = rest.partition(end)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{head}{start}\n{text}\n{end}{tail}")


def plot(measures: list[Measure], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, all_axes = plt.subplots(1, len(PHASES) + 1, figsize=(19, 4))
    axes = all_axes[:-1]
    for axis, phase in zip(axes, PHASES, strict=True):
        for tool, style in (("unfurl-lite", "o-"), ("unfurl-1.2.0", "s--")):
            points = sorted((m.nodes, m.seconds) for m in measures if m.tool == tool
                            and m.case == "layered" and m.phase == phase and m.seconds)
            if points:
                axis.plot(*zip(*points, strict=True), style, label=tool)
        cpu = sorted((m.nodes, m.cpu) for m in measures if m.tool == "unfurl-lite"
                     and m.case == "layered" and m.phase == phase and m.cpu)
        if cpu:  # on a loaded machine the wall clock is mostly waiting for a core
            axis.plot(*zip(*cpu, strict=True), "o:", color="tab:green", label="unfurl-lite CPU")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(phase)
        axis.set_xlabel("nodes (N)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("seconds")
    axes[0].legend()
    memory = all_axes[-1]
    for tool, style in (("unfurl-lite", "o-"), ("unfurl-1.2.0", "s--")):
        points = sorted((m.nodes, m.rss_mb) for m in measures if m.tool == tool
                        and m.case == "layered" and m.phase == "deploy" and m.rss_mb)
        if points:
            memory.plot(*zip(*points, strict=True), style, label=tool)
    memory.set_xscale("log")
    memory.set_yscale("log")
    memory.set_title("deploy: peak RSS")
    memory.set_xlabel("nodes (N)")
    memory.set_ylabel("MB")
    memory.grid(True, which="both", alpha=0.3)
    fig.suptitle("Layered DAG of `true` operations: wall-clock time (and unfurl-lite's CPU), peak memory")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def report_only(args: argparse.Namespace) -> None:
    reports = [json.loads(path.read_text()) for path in args.report_only]
    measures = [Measure(**m) for r in reports for m in r["measures"]]
    tools = sorted({m.tool for m in measures})
    merged = {
        "machine": reports[0]["machine"],
        "date": " and ".join(sorted({r["date"] for r in reports})),
        "command": "; ".join(r["command"] for r in reports),
        "slopes_ms_per_node": {f"{t} {p}": slope_ms(measures, t, p)
                               for t in tools for p in PHASES},
        "measures": [asdict(m) for m in measures],
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(merged, indent=1) + "\n")
    write_between_markers(
        args.table, f"Run {merged['date']} on {merged['machine']}:\n\n{table(measures)}\n"
        f"{ratio_table(measures)}"
    )
    plot(measures, args.plot)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,200,500,2000,10000")
    parser.add_argument("--width", type=int, default=10, help="nodes per layer")
    parser.add_argument("--unfurl-max", type=int, default=200,
                        help="largest N to give Unfurl 1.2.0")
    parser.add_argument("--timeout", type=float, default=360, help="per Unfurl command")
    parser.add_argument("--repeat", type=int, default=3,
                        help="series per N for unfurl-lite; the table shows the median")
    parser.add_argument("--unfurl-venv", type=Path,
                        default=Path(os.environ.get("UNFURL120_VENV", "/work/venvs/unfurl120")))
    parser.add_argument("--no-unfurl", action="store_true", help="time unfurl-lite only")
    parser.add_argument("--no-lite", action="store_true", help="time Unfurl 1.2.0 only")
    parser.add_argument("--unfurl-results", type=Path,
                        help="reuse Unfurl 1.2.0's figures from an earlier results JSON")
    parser.add_argument("--results", type=Path,  # generated data: out/ stays out of git
                        default=ROOT / "benchmarks" / "out" / "results.json")
    parser.add_argument("--table", type=Path, default=ROOT / "docs" / "benchmarks.md",
                        help="markdown file; the table replaces what is between its markers")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "benchmarks.png")
    parser.add_argument("--report-only", type=Path, nargs="+", metavar="RESULTS",
                        help="run nothing: merge these results JSON files into one report")
    args = parser.parse_args()
    if args.report_only:
        return report_only(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    # as after a pip install: byte-compiled, and nothing stops Python writing .pyc files
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "unfurl_lite")],
                   check=False, stdout=subprocess.DEVNULL)

    ours = Tool("unfurl-lite", [str(Path(sys.executable).parent / "unfurl")], True)
    tools = [ours]
    reused: list[Measure] = []
    if args.unfurl_results:
        reused = [Measure(**m) for m in json.loads(args.unfurl_results.read_text())["measures"]
                  if m["tool"] == "unfurl-1.2.0"]
    elif not args.no_unfurl:
        tools.append(Tool("unfurl-1.2.0", [str(unfurl_120(args.unfurl_venv))], False))
    if args.no_lite:
        tools.remove(ours)

    measures: list[Measure] = list(reused)
    for tool in tools:
        measures.append(run_startup(tool))
    for tool in tools:
        runs = [run_parallel(tool, 20, args.timeout)
                for _ in range(args.repeat if tool is ours else 1)]
        measures.extend(median_of([[run] for run in runs]))
    for n in sizes:
        for tool in tools:
            if tool is not ours and n > args.unfurl_max:
                continue
            repeats = args.repeat if tool is ours else 1
            measures.extend(median_of([
                run_layered(tool, n, args.width, 3600 if tool is ours else args.timeout)
                for _ in range(repeats)
            ]))

    report = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M") + " (load average at the end "
                f"{os.getloadavg()[0]:.1f})",
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "slopes_ms_per_node": {f"{t.name} {p}": slope_ms(measures, t.name, p)
                               for t in tools for p in PHASES},
        "measures": [asdict(m) for m in measures],
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=1) + "\n")
    text = table(measures)
    write_between_markers(args.table, f"Run {report['date']} on {report['machine']}:\n\n{text}\n"
                          f"{ratio_table(measures)}")
    print(text)
    print("slopes (ms per node):", report["slopes_ms_per_node"])
    try:
        plot(measures, args.plot)
    except ImportError:
        print("matplotlib missing: pip install -e '.[bench]' for the plot", file=sys.stderr)


if __name__ == "__main__":
    main()
