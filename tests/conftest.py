"""Shared fixtures: real temporary git repos with ensembles, and a CLI runner."""

from __future__ import annotations

import itertools
import logging
import os
import re
import resource
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, settings

from unfurl_lite.cli.main import cli
from unfurl_lite.cli.main import main as entry_point

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "data" / "unfurl120-deploy"

#: The suite imports the package (and compiles its own asserts) hundreds of times, in this
#: process and in every ``python -m unfurl_lite`` it starts: compile once, even where the
#: environment says PYTHONDONTWRITEBYTECODE, into a cache under .pytest_cache (ignored by git)
#: rather than __pycache__ directories beside the sources.
PYCACHE = ROOT / ".pytest_cache" / "pycache"
sys.pycache_prefix = str(PYCACHE)
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)

#: Records are written without forcing them to disk (``UNFURL_LITE_FSYNC=off``): a test
#: kills processes, never the machine, and the kernel keeps every write a killed process
#: made; an fsync is milliseconds of waiting, thousands of times a run.
#: tests/load/test_durable_writes.py turns it back on to check the writes that sync.
os.environ.setdefault("UNFURL_LITE_FSYNC", "off")

#: Every ``git commit`` starts ``git maintenance run --auto`` after it, a process that finds
#: nothing to do in a repository of a few commits: thousands of processes a run. The suite's
#: git runs without it (command-line configuration, as ``git -c`` would give it; a user's
#: repository keeps its own).
if "GIT_CONFIG_COUNT" not in os.environ:
    os.environ.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="maintenance.auto",
                      GIT_CONFIG_VALUE_0="false")

#: Property tests draw a quarter of their examples in the default run (the loop while
#: working) and all of them with HYPOTHESIS_PROFILE=full, as CI's second pass runs every
#: property test (``-m "slow or redis or hypothesis"``). A test that sets no count draws
#: 25 or 100; one that does gives its full count to :func:`examples`.
FULL_EXAMPLES = os.environ.get("HYPOTHESIS_PROFILE") == "full"
#: No deadline and no too-slow health check: speed is measured in benchmarks/, never asserted,
#: and a shared machine's load made property tests fail on time alone.
_SLOW_CHECKS = [HealthCheck.too_slow]
_UNTIMED = {"deadline": None, "suppress_health_check": _SLOW_CHECKS}
settings.register_profile("full", max_examples=100, **_UNTIMED)
settings.register_profile("quick", max_examples=25, **_UNTIMED)
settings.load_profile("full" if FULL_EXAMPLES else "quick")


def suppressed(*checks: HealthCheck) -> list[HealthCheck]:
    """The profile's suppressed health checks and ``checks``: a test's own
    ``suppress_health_check`` replaces the profile's list rather than adding to it."""
    return [*_SLOW_CHECKS, *checks]


def examples(full: int) -> int:
    """``full`` examples in the full profile; a quarter of them (but at least ten, or all
    of a smaller count) in the default run."""
    return full if FULL_EXAMPLES else max(min(full, 10), full // 4)


SERVICE_HEAD = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
"""
ENSEMBLE_HEAD = SERVICE_HEAD + """\
    topology_template:
      node_templates:
"""


def ensemble_yaml(node_templates: str) -> str:
    """An ensemble whose node templates are ``node_templates`` (YAML at column 0)."""
    return ENSEMBLE_HEAD + textwrap.indent(textwrap.dedent(node_templates), " " * 8)


def shell_node(name: str, command: str, *input_lines: str, operation: str = "create") -> str:
    """A node template whose one Standard operation runs ``command`` in the long form
    (className: Shell), for :func:`ensemble_yaml`; ``input_lines`` are further inputs."""
    inputs = "".join(f"\n            {line}" for line in (f"command: {command}", *input_lines))
    return (f"{name}:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
            f"      operations:\n        {operation}:\n"
            f"          implementation: {{className: Shell}}\n          inputs:{inputs}\n")


def _cpu_seconds() -> float:
    """CPU time of this process and of every process it has waited for (operations, git,
    ``python -m unfurl_lite``): on a shared machine a better measure than the wall clock."""
    own, children = (resource.getrusage(who)
                     for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests that used the most CPU time, their own and their "
                          "subprocesses' (0 for all), and the total")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts) starts two workers a core, not one: a worker of
    this suite spends about half its time with all its processes asleep (operations that
    sleep, a broker's timeouts, polls). Sampled every 0.2 s at the ninth sitting: 186 of
    318 worker-seconds of the default run; with the tests' own CPU and waits, a quiet
    2-core machine takes an estimated 163 s with 2 workers (as measured), 111-120 s with
    3, 86-95 s with 4. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if given:
        return int(given)
    return 2 * len(os.sched_getaffinity(0))


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, each test marked ``long`` starts first on a worker of its own. The
    worksteal scheduler gives each worker a run of neighbouring tests and takes back only
    the tail of a queue, so two long tests of one module ran one after the other on one
    worker (the two layout properties: 232 + 230 s of an 847 s slow pass at load 15)."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 0))
    long = [item for item in items if item.get_closest_marker("long")]
    if workers < 2 or not long:
        return
    rest = [item for item in items if not item.get_closest_marker("long")]
    chunks: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for number, item in enumerate(long):
        chunks[number % workers].append(item)
    # the scheduler's first split: worker i gets the next len(left) // (workers - i) tests
    left = len(items)
    for index, chunk in enumerate(chunks):
        size = left // (workers - index)
        left -= size
        take = max(0, size - len(chunk))
        chunk.extend(rest[:take])
        del rest[:take]
    chunks[-1].extend(rest)
    items[:] = [item for chunk in chunks for item in chunk]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> object:
    return (yield from _measured(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    return (yield from _measured(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> object:
    return (yield from _measured(item, "teardown"))


def _measured(item: pytest.Item, when: str) -> Any:
    """Attach the phase's CPU seconds to its report (user_properties reach the xdist
    controller with the report)."""
    before = _cpu_seconds()
    try:
        return (yield)
    finally:
        item.user_properties.append((f"cpu-{when}", _cpu_seconds() - before))


_cpu_by_test: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == f"cpu-{report.when}":
            _cpu_by_test[report.nodeid] = _cpu_by_test.get(report.nodeid, 0.0) + value


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    shown = config.getoption("--cpu-durations")
    if shown is None or not _cpu_by_test:
        return
    ranked = sorted(_cpu_by_test.items(), key=lambda item: -item[1])
    terminalreporter.write_sep("=", "CPU time per test (its own and its subprocesses')")
    for nodeid, seconds in ranked[: shown or None]:
        terminalreporter.write_line(f"{seconds:8.2f}s  {nodeid}")
    total = sum(_cpu_by_test.values())
    terminalreporter.write_line(f"{total:8.2f}s  total over {len(ranked)} tests")


_parse_caches = itertools.count()
_tmp_paths = itertools.count()


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest's ``tmp_path`` (a new folder per test, kept as pytest keeps them), numbered by
    this process instead of by ``mktemp``, which lists every earlier test's folder to find
    the next number: seconds of a run, growing with the number of tests."""
    name = re.sub(r"\W", "_", request.node.name)[:30]
    path = tmp_path_factory.getbasetemp() / f"{name}-{next(_tmp_paths)}"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def parse_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own parse cache, so none reads another's (or the user's): a
    folder numbered by this process, not ``mktemp`` (which lists every earlier test's
    folder to find the next number, thousands of times a run)."""
    directory = tmp_path_factory.getbasetemp() / "parse-caches" / str(next(_parse_caches))
    directory.mkdir(parents=True)
    monkeypatch.setenv("UNFURL_LITE_CACHE", str(directory))
    return directory


@pytest.fixture(autouse=True)
def no_inherited_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist's workers export COLUMNS=80, which tables honour in a pipe; a test sets
    the width it means."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@dataclass
class Project:
    root: Path

    @property
    def ensemble(self) -> Path:
        return self.root / "ensemble.yaml"

    def write(self, text: str, name: str = "ensemble.yaml", commit: bool = True) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        if commit:
            git(self.root, "add", name)
            git(self.root, "commit", "-q", "--allow-empty", "-m", f"write {name}")
        return path

    def commits(self) -> list[str]:
        return git(self.root, "log", "--format=%s").splitlines()

    def jobs_tsv(self) -> list[str]:
        path = self.root / "jobs.tsv"
        return path.read_text().splitlines() if path.exists() else []

    def status(self) -> dict:
        from unfurl_lite.load import yamlio
        from unfurl_lite.model.status_layout import flatten

        text = self.ensemble.read_text()
        try:
            doc = yamlio.parse_plain(text)
        except Exception:  # YAML 1.2 that libyaml refuses: read it as the loader does
            doc = yamlio.to_plain(yamlio.round_trip().load(text))
        nested = (doc.get("status") or {}).get("instances") or {}
        return {  # an instance nested under its host is hostedOn it
            name: {**record, "hostedOn": host} if host else record
            for name, (record, host) in flatten(nested).items()
        }

    def local(self, name: str) -> str:
        return self.status()[name]["readyState"]["local"]

    def state(self, name: str) -> str | None:
        return self.status()[name]["readyState"].get("state")


@pytest.fixture(scope="session")
def template_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repo with an identity and one commit, made once per session (worker)."""
    root = tmp_path_factory.mktemp("template") / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", "--template=")  # no sample hooks: fewer files to copy
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "Test")
    (root / ".gitignore").write_text("jobs/*.log\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def project(tmp_path: Path, template_repo: Path) -> Project:
    """A fresh git repo of its own (a copy of the template: no git process per test)."""
    root = tmp_path / "project"
    shutil.copytree(template_repo, root, symlinks=True)
    return Project(root)


def module_project(factory: pytest.TempPathFactory, template_repo: Path) -> Project:
    """A project for a module-scoped fixture to prepare once (deploy it, say), which each
    test then takes a copy of with :func:`copy_prepared` instead of running the same jobs."""
    root = factory.mktemp("prepared") / "project"
    shutil.copytree(template_repo, root, symlinks=True)
    return Project(root)


def copy_prepared(prepared: Path, project: Project) -> Project:
    """The test's ``project`` made a copy of a project :func:`module_project` prepared (both
    grew from the same template repository, so the copy lands over it whole)."""
    shutil.copytree(prepared, project.root, symlinks=True, dirs_exist_ok=True)
    return project


Invoke = Callable[..., Result]


def _in_process(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False,
                              prog_name="unfurl")


@pytest.fixture
def invoke(project: Project, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """Run the CLI in-process from the project's directory, like a user at a shell."""
    monkeypatch.chdir(project.root)
    return _in_process


InvokeIn = Callable[..., Result]


@pytest.fixture
def invoke_in(monkeypatch: pytest.MonkeyPatch) -> InvokeIn:
    """Run the CLI in-process from the directory ``cwd``: no interpreter to start, for tests
    that need only the output and the exit code (``run_unfurl`` for signals, stdin, ttys)."""

    def run(cwd: Path, *args: str, input: str | None = None) -> Result:
        monkeypatch.chdir(cwd)
        return _in_process(*args, input=input)

    return run


def init_example(invoke_in: InvokeIn, parent: Path, example: str, name: str = "demo",
                 author: str = "Ada") -> Path:
    """``unfurl init NAME --from EXAMPLE`` in ``parent``, as a new user would, with a git
    identity of its own; returns the project's directory."""
    result = invoke_in(parent, "init", name, "--from", example)
    assert result.exit_code == 0, result.output
    root = parent / name
    git(root, "config", "user.email", "ada@example.com")
    git(root, "config", "user.name", author)
    return root


def run_unfurl(
    cwd: Path,
    *args: str,
    timeout: float = 120,
    env: dict | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m unfurl_lite`` as a separate process (exit codes, signals, stdin)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "unfurl_lite", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


class _EntryPoint:
    """What ``python -m unfurl_lite`` runs (``unfurl_lite.cli.main.main``), in the shape
    CliRunner invokes: its own handling of usage errors, ``--json`` errors and exit codes,
    not click's standalone mode."""

    def main(self, args: list[str], prog_name: str, **_: Any) -> None:
        sys.exit(entry_point(list(args)))


def run_in_process(
    cwd: Path,
    *args: str,
    timeout: float | None = None,
    env: dict | None = None,
) -> subprocess.CompletedProcess[str]:
    """:func:`run_unfurl` without starting an interpreter: the CLI in this process, from
    ``cwd``, with ``env`` added to the environment for the call. For tests that need only
    the exit code and the output; signals, stdin and terminals need the real process."""
    del timeout  # same signature as run_unfurl: the in-process CLI cannot be timed out
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    root = logging.getLogger()
    saved_handlers = root.handlers[:]
    try:
        os.chdir(cwd)
        os.environ.update(env or {})
        # a process configures no logging: warnings reach stderr through logging's last
        # resort, as they do here once pytest's capturing handlers are out of the way
        root.handlers.clear()
        result = CliRunner().invoke(_EntryPoint(), list(args), catch_exceptions=False,  # type: ignore[arg-type]
                                    prog_name="unfurl")
    finally:
        root.handlers[:] = saved_handlers
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(
        ["unfurl", *args], result.exit_code, result.stdout, result.stderr
    )


def unfurl120() -> Path:
    """Unfurl 1.2.0 is a tool outside the repository, so tests that run it are opt-in: the
    virtualenv named by ``$UNFURL120_VENV``, else an ``unfurl120`` executable on PATH."""
    venv = os.environ.get("UNFURL120_VENV")
    if venv:
        return Path(venv) / "bin" / "unfurl"
    found = shutil.which("unfurl120")
    return Path(found) if found else Path("unfurl120-not-installed")


def safe_load(text: str) -> Any:
    """Plain data from YAML text (ruamel's safe loader: the project's own YAML library)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)
