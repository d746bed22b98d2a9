"""What `unfurl --version` and `unfurl plan` import stays within a listed budget.

Every module a command imports is paid for at each start of the command (a cold plan of
200 nodes spends about half its time importing). The budgets below are the lists of what
each command needs today: a test fails when a change makes the command import more, and
names what came in. Add to a list only what the command really needs, and say why in the
commit. Counted, never timed: the same on a busy machine as on an idle one. What is
counted is what the command's own process holds in ``sys.modules`` as it exits, run as its
script runs it in a plain virtualenv: also the modules imported through ``importlib`` (the
api's lazy names, the planners) and those the module file serves, which ``-X importtime``
does not see.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sources
from tests.conftest import ROOT, ensemble_yaml, git, shell_node

#: imported by nobody at start-up: the heavy libraries the issue names, and the others
HEAVY = ("git", "jinja2", "jsonschema", "rich", "markupsafe", "celery", "kombu", "redis")

VERSION_BUDGET = {"unfurl_lite", "unfurl_lite.cli", "unfurl_lite.cli.version",
                  "unfurl_lite.load", "unfurl_lite.load.gitfiles",  # the source's commit: os only
                  "__future__"}  # (`from __future__ import annotations`: unless site imported it)

#: (no ruamel: everyday block YAML is read by lines; the C composer's road is for the rest;
#: no click: `unfurl plan [ENSEMBLE]` is answered by cli/quick.py, as click would answer it)
PLAN_PACKAGES: set[str] = set()
PLAN_OURS = {
    "unfurl_lite", "unfurl_lite.errors",
    "unfurl_lite.exports",  # the api's table of names (importlib and sys only)
    "unfurl_lite.api", "unfurl_lite.api.project",
    "unfurl_lite.cli", "unfurl_lite.cli.quick", "unfurl_lite.cli.render",
    "unfurl_lite.cli.terminal",  # (echo: a line written as click writes it; os, re, sys)
    "unfurl_lite.model.builtin_workflows",  # (the workflows' declarations: PlanOptions)
    "unfurl_lite.run.options",  # PlanOptions, checked against the declarations
    "unfurl_lite.expressions", "unfurl_lite.expressions.analysis",
    "unfurl_lite.expressions.catalog", "unfurl_lite.expressions.names",
    "unfurl_lite.expressions.limits",  # a plan's templates render within one budget
    "unfurl_lite.security.taint",  # (limits knows tainted values)
    "unfurl_lite.load", "unfurl_lite.load.blockyaml", "unfurl_lite.load.builder",
    "unfurl_lite.load.collector",  # (the collector during a load: split from plainyaml)
    "unfurl_lite.load.scalars",  # (YAML 1.2's scalar table: split from plainyaml for emit)
    "unfurl_lite.load.flowyaml",  # (one-line flow collections, read with the block lines)
    "unfurl_lite.load.expression_checks",
    "unfurl_lite.load.guard", "unfurl_lite.load.imports", "unfurl_lite.load.interface_checks",
    "unfurl_lite.load.interfaces",  # (split from builder: interfaces and operations)
    "unfurl_lite.load.loader", "unfurl_lite.load.origins",  # (merge: only with directives)
    "unfurl_lite.load.parsecache", "unfurl_lite.load.plainyaml",
    "unfurl_lite.load.pycache",  # (the parse cache's guarded read: os and stat only)
    "unfurl_lite.load.positions", "unfurl_lite.load.problems",
    "unfurl_lite.load.schema_problems", "unfurl_lite.load.schemacheck",
    "unfurl_lite.load.structure", "unfurl_lite.load.type_checks",
    "unfurl_lite.load.unsupported", "unfurl_lite.load.validate", "unfurl_lite.load.workflows",
    "unfurl_lite.load.yamlio",
    "unfurl_lite.model", "unfurl_lite.model.changeid", "unfurl_lite.model.dependencies",
    "unfurl_lite.model.ensemble", "unfurl_lite.model.entities", "unfurl_lite.model.lineage",
    "unfurl_lite.model.status_layout",
    "unfurl_lite.model.narrow",  # is_map/is_list (typing only; the typed shapes are not imported)
    "unfurl_lite.model.normative",  # TOSCA's normative types' facts (plain tables)
    "unfurl_lite.plan", "unfurl_lite.plan.deploy", "unfurl_lite.plan.directives",
    "unfurl_lite.plan.groups",
    "unfurl_lite.plan.lifecycle", "unfurl_lite.plan.registry", "unfurl_lite.plan.tasks",
    "unfurl_lite.plan.topology", "unfurl_lite.plan.tosca",
    "unfurl_lite.run", "unfurl_lite.run.observer",
    "unfurl_lite.security", "unfurl_lite.security.characters", "unfurl_lite.security.paths",
}  # fmt: skip
#: standard library modules beyond the interpreter's own start (click alone brought ~25),
#: counted in a plain virtualenv (a user's `pip install`: its start holds some 30 modules;
#: this machine's site hooks import a hundred more before our first line) as the command's
#: process holds them when it exits (`sys.modules`, the caches on): 49 for a cold plan and
#: 77 for a deploy at the eleventh sitting (the standard library's own dependencies
#: included, e.g. `re`'s `enum`, `pathlib`'s `urllib.parse`)
PLAN_STDLIB_MAX = 49

#: what `deploy --approve -q` adds to a plan's: the job's machinery, its records and git
DEPLOY_OURS = PLAN_OURS | {
    "unfurl_lite.api.jobs", "unfurl_lite.api.remembered",  # (through the api's lazy names)
    "unfurl_lite.run.operations.dispatch",  # (the run's executor imports it by name)
    "unfurl_lite.api.report", "unfurl_lite.cli.jobflow", "unfurl_lite.cli.tables",
    "unfurl_lite.expressions.context",  # (no sandbox: plain inputs render nothing)
    "unfurl_lite.expressions.digest", "unfurl_lite.expressions.expr",
    "unfurl_lite.expressions.lazy", "unfurl_lite.expressions.outputs",
    "unfurl_lite.expressions.reads",
    "unfurl_lite.load.digestkey", "unfurl_lite.load.emit", "unfurl_lite.load.gitfiles",
    "unfurl_lite.load.gitrepo", "unfurl_lite.load.jobslog", "unfurl_lite.load.name_checks",
    "unfurl_lite.model.constraints", "unfurl_lite.model.routing", "unfurl_lite.model.tosca_values",
    "unfurl_lite.plan.created", "unfurl_lite.plan.verdicts",
    "unfurl_lite.record", "unfurl_lite.record.journal",
    "unfurl_lite.record.journal_format", "unfurl_lite.record.journal_tasks",
    "unfurl_lite.record.leftovers",
    "unfurl_lite.record.liveness", "unfurl_lite.record.lock", "unfurl_lite.record.preflight",
    "unfurl_lite.record.records", "unfurl_lite.record.repo", "unfurl_lite.record.sections",
    "unfurl_lite.record.statusfile", "unfurl_lite.record.tempfiles",
    "unfurl_lite.run.discovery", "unfurl_lite.run.executors",
    "unfurl_lite.run.executors.commands", "unfurl_lite.run.executors.local",
    "unfurl_lite.run.job", "unfurl_lite.run.metadata", "unfurl_lite.run.operations",
    "unfurl_lite.run.operations.base", "unfurl_lite.run.operations.output",
    "unfurl_lite.run.operations.piped", "unfurl_lite.run.operations.processes",
    "unfurl_lite.run.operations.shell", "unfurl_lite.run.operations.spawn",
    "unfurl_lite.run.outcome", "unfurl_lite.run.progress", "unfurl_lite.run.relationships",
    "unfurl_lite.run.render_phase", "unfurl_lite.run.requests", "unfurl_lite.run.results",
    "unfurl_lite.run.scheduler", "unfurl_lite.run.settling", "unfurl_lite.run.signals",
    "unfurl_lite.run.status",
    "unfurl_lite.security.digested", "unfurl_lite.security.environment",
    "unfurl_lite.security.redaction",
}  # fmt: skip
#: the standard library the command's own process imports beyond a plain virtualenv's
#: start (`sys.modules` as it exits; the deferred modules nothing ran left out): a job's adds
#: its threads' futures, subprocess, ctypes (posix_spawn), logging
STDLIB_MAX = {"plan": PLAN_STDLIB_MAX, "deploy": 77}
#: never at their start in an interpreter without this machine's site hooks (a plain
#: virtualenv): shutil (with zlib, bz2, lzma) is init's, tempfile and zipfile nobody's
NEVER_WITHOUT_SITE = {"shutil", "bz2", "lzma", "tempfile", "zipfile", "random",
                      "ipaddress"}  # (urllib.parse's, for a bracketed host: deferred)
#: never on these commands' start: typing (some 60 classes; the package's annotations,
#: aliases and casts need it only for the type checker), inspect (with ast, dis, tokenize) is
#: dataclasses' for the docstring of a class that has none, traceback (linecache, tokenize)
#: logging's for an exception, locale subprocess's for a text pipe (load/codecache.py defers
#: the three), difflib a did-you-mean's
NEVER_AT_START = {"inspect", "ast", "dis", "opcode", "difflib", "traceback", "linecache",
                  "tokenize", "locale",
                  "copy", "org",  # (dataclasses' for asdict; copy asks for Jython's org...)
                  "typing"}  # (our modules import it for the type checker only: narrow.cast)
#: the command's own caches (load/modulecache.py, regexcache.py, codecache.py)
CACHES = {"unfurl_lite.load.codecache", "unfurl_lite.load.modulecache",
          "unfurl_lite.load.regexcache"}

#: The ``unfurl`` command's process as its script runs it (``main()`` with no arguments:
#: the module, pattern and dataclass caches on, the fast exit), which writes down every
#: module in ``sys.modules`` as it exits: also those imported through ``importlib`` (the
#: api's lazy names, the planners) and served from the module file, which ``-X
#: importtime`` does not see; a deferred module nothing ran (load/codecache.py) is left out.
_PROBE = """
import atexit, os, sys
_exit, _written = os._exit, []
def _write(out=sys.argv.pop(1)):
    if not _written:
        _written.append(out)
        names = set(sys.modules)
        codecache = sys.modules.get("unfurl_lite.load.codecache")
        if codecache is not None:
            names -= set(codecache.deferred())
        with open(out, "w") as handle:
            handle.write("\\n".join(sorted(names)))
def _exiting(code):
    _write()
    _exit(code)
os._exit = _exiting
atexit.register(_write)
sys.argv[0] = "unfurl"
from unfurl_lite.cli import main
main()
"""


@pytest.fixture(scope="module")
def users_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A plain virtualenv's interpreter with the package on its path as an install puts it
    (a ``.pth``): what a user's ``pip install`` runs, without this machine's site hooks (a
    ``.pth`` here imports certifi, with some 100 modules, before our first line)."""
    where = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = str(where / "bin" / "python")
    where_packages = "import sysconfig; print(sysconfig.get_path('purelib'))"
    purelib = subprocess.run([python, "-c", where_packages], capture_output=True, text=True,
                             check=True).stdout.strip()
    Path(purelib, "unfurl_lite_checkout.pth").write_text(f"{ROOT}\n")
    return python


def _environment(python: str, cache: Path) -> dict[str, str]:
    env = {**os.environ, "UNFURL_LITE_CACHE": str(cache)}
    env.pop("_UNFURL_COMPLETE", None)
    if python == sys.executable:  # the suite's interpreter, with click and the rest
        env["PYTHONPATH"] = str(ROOT)
    else:  # the virtualenv: the package through its .pth, as installed
        env.pop("PYTHONPATH", None)
    return env


def _imports(args: list[str], cwd: Path, cache: Path, python: str = sys.executable) -> set[str]:
    """The modules the ``unfurl`` command's own process imports beyond its interpreter's
    start, run in ``cwd`` with the parse cache ``cache`` (empty: a user's first command)."""
    env = _environment(python, cache)
    out = cache.parent / f"{cache.name}-modules.txt"
    done = subprocess.run([python, "-c", _PROBE, str(out), *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    start = subprocess.run([python, "-c", "import atexit, os, sys; print(*sys.modules)"],
                           cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return set(out.read_text().split()) - set(start.stdout.split())


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_version_imports_only_its_own_modules(users_python: str, tmp_path: Path) -> None:
    imported = _imports(["--version"], tmp_path, tmp_path / "cache", users_python)
    assert not _tops(imported) & {*HEAVY, "click", "ruamel"}
    assert imported <= VERSION_BUDGET, f"--version now imports {sorted(imported - VERSION_BUDGET)}"


@pytest.fixture
def small_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    nodes = "".join(shell_node(f"n{i}", "exit 0") for i in range(3))
    (root / "ensemble.yaml").write_text(ensemble_yaml(nodes))
    git(root, "init", "-q")
    return root


def _within_budget(command: str, imported: set[str]) -> None:
    """What a cold ``plan`` or job imports: our modules within the command's list, the
    standard library within its count, none of those no command's start needs."""
    heavy = _tops(imported) & {*HEAVY, "ruamel", "_ruamel_yaml", "click"}
    assert not heavy, f"{command} imports {sorted(heavy)}"
    assert "_hashlib" not in imported  # OpenSSL's start: our digests are CPython's own
    ours = {m for m in imported if m.startswith("unfurl_lite")}
    budget = (PLAN_OURS if command == "plan" else DEPLOY_OURS) | CACHES
    assert ours <= budget, f"{command} now imports {sorted(ours - budget)}"
    never = imported & (NEVER_AT_START | NEVER_WITHOUT_SITE)
    assert not never, f"{command} imports {sorted(never)}"
    others = {m for m in imported - ours if m.split(".")[0] not in PLAN_PACKAGES}
    assert len(others) <= STDLIB_MAX[command], sorted(others)


def test_a_cold_plan_imports_only_its_budget(
        users_python: str, small_project: Path, tmp_path: Path) -> None:
    imported = _imports(["plan", "ensemble.yaml"], small_project, tmp_path / "cache",
                        users_python)
    assert "unfurl_lite.load.validate" in imported  # (the probe saw the ensemble validated)
    _within_budget("plan", imported)


def test_a_deploy_imports_only_its_budget(
        users_python: str, small_project: Path, tmp_path: Path) -> None:
    """A job whose operations' inputs are plain text renders nothing (no Jinja2), reads its
    ensemble by lines (no ruamel), writes its records with the fast emitter and commits
    with the ``git`` command (no GitPython); its digests use CPython's own hashes."""
    imported = _imports(["deploy", "--approve", "-q", "ensemble.yaml"], small_project,
                        tmp_path / "cache", users_python)
    assert "unfurl_lite.record.journal" in imported  # (the probe saw the job run)
    _within_budget("deploy", imported)
    # no query is walked: the query machinery stays out of the job's start
    assert not imported & {"unfurl_lite.expressions.resolve", "unfurl_lite.expressions.entities",
                           "unfurl_lite.expressions.instance_graph"}


def test_a_deploy_after_a_plan_reads_no_yaml(
        users_python: str, small_project: Path, tmp_path: Path) -> None:
    """After ``unfurl plan`` the parse cache answers the job's load: the job imports no YAML
    reader, no validation and no TOSCA workflow reader (its topology defines none), nor the
    expressions' catalog (no template in its inputs)."""
    cache = tmp_path / "cache"
    _imports(["plan", "ensemble.yaml"], small_project, cache, users_python)
    imported = _imports(["deploy", "--approve", "-q", "ensemble.yaml"], small_project, cache,
                        users_python)
    assert "unfurl_lite.record.journal" in imported  # (the probe saw the job run)
    readers = {m for m in imported if m.startswith(tuple(
        f"unfurl_lite.load.{name}" for name in (
            "plainyaml", "blockyaml", "flowyaml", "guard", "validate", "expression_checks",
            "workflows", "problems")))}
    assert readers == set()
    assert "unfurl_lite.plan.tosca" not in imported
    # its operations' inputs hold no template: the table of every function is not read
    assert "unfurl_lite.expressions.catalog" not in imported


def test_the_commands_plan_of_an_ensemble_imports_no_click(
        small_project: Path, tmp_path: Path) -> None:
    """`unfurl plan [ENSEMBLE]` is answered without click (cli/quick.py); an option takes
    click's road, as every other command line does."""
    quick = _imports(["plan", "ensemble.yaml"], small_project, tmp_path / "cache")
    assert "unfurl_lite.cli.quick" in quick and not _tops(quick) & {"click", *HEAVY}
    assert not _tops(_imports(["plan"], small_project, tmp_path / "cache")) & {"click"}
    assert "click" in _imports(["plan", "-q", "ensemble.yaml"], small_project, tmp_path / "cache")


def test_the_commands_validate_of_an_ensemble_imports_no_click(
        small_project: Path, tmp_path: Path) -> None:
    """`unfurl validate [ENSEMBLE]` is answered without click, as `plan` is; `--json`
    takes click's road."""
    quick = _imports(["validate", "ensemble.yaml"], small_project, tmp_path / "cache")
    assert "unfurl_lite.cli.quick" in quick and not _tops(quick) & {"click", *HEAVY}
    assert "click" in _imports(["validate", "--json"], small_project, tmp_path / "cache")


def test_a_redeploy_known_to_have_nothing_to_do_imports_no_job_machinery(
    small_project: Path, tmp_path: Path
) -> None:
    """The plan remembered after a deploy is found before the job's machinery (records,
    journal, executors, git) is imported: a redeploy of 10,000 nodes then costs about
    what starting the command does."""
    deploy = ["deploy", "--approve", "--no-commit"]
    _imports(deploy, small_project, tmp_path / "cache")
    imported = _imports(deploy, small_project, tmp_path / "cache")
    assert "unfurl_lite.plan.verdicts" in imported  # answered from the remembered plan
    assert not _tops(imported) & set(HEAVY)
    machinery = {m for m in imported if m.startswith(
        ("unfurl_lite.record", "unfurl_lite.run.job", "unfurl_lite.run.executors",
         "unfurl_lite.api.jobs", "unfurl_lite.load.gitrepo"))}
    assert machinery == set()


def test_every_dataclass_has_a_docstring() -> None:
    """``@dataclass`` gives an undocumented class a docstring made from
    ``inspect.signature``: about a millisecond per class at import, paid by every command
    (14 ms of the model's import before they had one)."""
    missing = []
    for path in sources.python_files(sources.PACKAGE):
        for node in sources.nodes(path):
            if (isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None
                    and any("dataclass" in ast.unparse(d) for d in node.decorator_list)):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert missing == []


def test_a_plan_of_nodes_with_requirements_keeps_typing_off(
        users_python: str, tmp_path: Path) -> None:
    """A requirement brings its checks onto a cold plan's road (relationships, their
    targets' capabilities, the functions in them): typing stays off it too (in a plain
    virtualenv: this machine's site imports typing before our first line)."""
    root = tmp_path / "project"
    root.mkdir()
    nodes = shell_node("a", "true") + shell_node("b", "true") + (
        "  requirements:\n    - dependency: a\n")
    (root / "ensemble.yaml").write_text(ensemble_yaml(nodes))
    imported = _imports(["plan", "ensemble.yaml"], root, tmp_path / "cache", users_python)
    assert "unfurl_lite.load.relationship_refs" in imported  # (the requirement's checks ran)
    assert not imported & NEVER_AT_START, sorted(imported & NEVER_AT_START)
