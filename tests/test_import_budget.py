"""What `unfurl --version` and `unfurl plan` import stays within a listed budget.

Every module a command imports is paid for at each start of the command (a cold plan of
200 nodes spends about half its time importing). The budgets below are the lists of what
each command needs today: a test fails when a change makes the command import more, and
names what came in. Add to a list only what the command really needs, and say why in the
commit. Counted, never timed: the same on a busy machine as on an idle one.
"""

from __future__ import annotations

import ast
import json
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
#: standard library modules beyond the interpreter's own start (click alone brought ~25).
#: What "the interpreter's own start" holds depends on the machine's site hooks: a .pth
#: that imports a library (setuptools' editable finder, a CA bundle's hook) starts it with
#: a hundred modules, a plain virtualenv with about 26. The budgets below hold for the
#: plain virtualenv (a user's `pip install`, measured 40, 53 and 82 at the ninth sitting; 36, 51
#: and 80 at the tenth, typing kept off);
#: on a machine whose hooks import more, the same commands count fewer.
PLAN_STDLIB_MAX = 36

#: what `deploy --approve -q` adds to a plan's: the job's machinery, its records and git
DEPLOY_OURS = PLAN_OURS | {
    "unfurl_lite.api.report", "unfurl_lite.cli.jobflow", "unfurl_lite.cli.tables",
    "unfurl_lite.expressions.context",  # (no sandbox: plain inputs render nothing)
    "unfurl_lite.expressions.digest", "unfurl_lite.expressions.expr",
    "unfurl_lite.expressions.lazy", "unfurl_lite.expressions.outputs",
    "unfurl_lite.expressions.reads",
    "unfurl_lite.load.digestkey", "unfurl_lite.load.emit", "unfurl_lite.load.gitfiles",
    "unfurl_lite.load.gitrepo", "unfurl_lite.load.jobslog", "unfurl_lite.load.name_checks",
    "unfurl_lite.model.constraints", "unfurl_lite.model.routing", "unfurl_lite.model.tosca_values",
    "unfurl_lite.plan.created", "unfurl_lite.plan.verdicts",
    "unfurl_lite.record", "unfurl_lite.record.interrupted", "unfurl_lite.record.journal",
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
#: the standard library the command's own process imports beyond the interpreter's start
#: (failed lookups included: `copy` asks for Jython's org.python.core): plan, deploy
COMMAND_STDLIB_MAX = {"plan": 51, "deploy": 80}
#: never at their start in an interpreter without this machine's site hooks (`python -S`):
#: shutil (with zlib, bz2, lzma) is init's, tempfile and zipfile nobody's on these roads
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

_PROBE = """
import json, sys
from unfurl_lite.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
with open({out!r}, "w") as handle:
    json.dump(sorted(sys.modules), handle)
"""


def _imported(args: list[str], cwd: Path, tmp_path: Path) -> set[str]:
    """The modules a command imports beyond the bare interpreter's, in a fresh process
    with an empty parse cache (a cold start, as the user's first command)."""
    env = {**os.environ, "UNFURL_LITE_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}
    bare = subprocess.run([sys.executable, "-c", "import sys, json; "
                           "print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True, cwd=cwd, env=env)
    out = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", _PROBE.format(out=str(out)), *args],
                   capture_output=True, text=True, check=True, cwd=cwd, env=env)
    after = set(json.loads(out.read_text())) - set(json.loads(bare.stdout))
    return {m for m in after if m.split(".")[0] not in ("json", "_json")}  # the probe's own


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_version_imports_only_its_own_modules(tmp_path: Path) -> None:
    imported = _imported(["--version"], tmp_path, tmp_path)
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


def test_a_cold_plan_imports_only_its_budget(small_project: Path, tmp_path: Path) -> None:
    imported = _imported(["plan", "ensemble.yaml"], small_project, tmp_path)
    heavy = _tops(imported) & {*HEAVY, "ruamel", "_ruamel_yaml"}
    assert not heavy, f"plan imports {sorted(heavy)}"
    assert "_hashlib" not in imported  # OpenSSL's start: the parse cache's SHA-256 is CPython's
    ours = {m for m in imported if m.startswith("unfurl_lite")}
    assert ours <= PLAN_OURS, f"plan now imports {sorted(ours - PLAN_OURS)}"
    others = {m for m in imported - ours if m.split(".")[0] not in PLAN_PACKAGES}
    assert len(others) <= PLAN_STDLIB_MAX, sorted(others)


def _command_imports(args: list[str], cwd: Path, tmp_path: Path) -> set[str]:
    """Every module the ``unfurl`` command's own process imports (``-X importtime``),
    stdout a pipe, as a script reads it."""
    env = {**os.environ, "UNFURL_LITE_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("_UNFURL_COMPLETE", None)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "unfurl_lite", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, check=True)
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def test_the_commands_plan_of_an_ensemble_imports_no_click(
        small_project: Path, tmp_path: Path) -> None:
    """`unfurl plan [ENSEMBLE]` is answered without click (cli/quick.py); an option takes
    click's road, as every other command line does."""
    quick = _command_imports(["plan", "ensemble.yaml"], small_project, tmp_path)
    assert "unfurl_lite.cli.quick" in quick and not _tops(quick) & {"click", *HEAVY}
    assert not _tops(_command_imports(["plan"], small_project, tmp_path)) & {"click"}
    assert "click" in _command_imports(["plan", "-q", "ensemble.yaml"], small_project, tmp_path)


def test_the_commands_validate_of_an_ensemble_imports_no_click(
        small_project: Path, tmp_path: Path) -> None:
    """`unfurl validate [ENSEMBLE]` is answered without click, as `plan` is; `--json`
    takes click's road."""
    quick = _command_imports(["validate", "ensemble.yaml"], small_project, tmp_path)
    assert "unfurl_lite.cli.quick" in quick and not _tops(quick) & {"click", *HEAVY}
    assert "click" in _command_imports(["validate", "--json"], small_project, tmp_path)


def test_a_redeploy_known_to_have_nothing_to_do_imports_no_job_machinery(
    small_project: Path, tmp_path: Path
) -> None:
    """The plan remembered after a deploy is found before the job's machinery (records,
    journal, executors, git) is imported: a redeploy of 10,000 nodes then costs about
    what starting the command does."""
    env = {**os.environ, "UNFURL_LITE_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    deploy = ["deploy", "--approve", "--no-commit"]
    subprocess.run([sys.executable, "-m", "unfurl_lite", *deploy], cwd=small_project,
                   env=env, check=True, capture_output=True)
    imported = _imported(deploy, small_project, tmp_path)
    assert "unfurl_lite.plan.verdicts" in imported  # answered from the remembered plan
    assert not _tops(imported) & set(HEAVY)
    machinery = {m for m in imported if m.startswith(
        ("unfurl_lite.record", "unfurl_lite.run.job", "unfurl_lite.run.executors",
         "unfurl_lite.api.jobs", "unfurl_lite.load.gitrepo"))}
    assert machinery == set()


def test_a_deploy_of_plain_operations_imports_no_heavy_library(
    small_project: Path, tmp_path: Path
) -> None:
    """A job whose operations' inputs are plain text renders nothing (no Jinja2), reads its
    ensemble by lines (no ruamel), writes its records with the fast emitter and commits
    with the ``git`` command (no GitPython); its digests use CPython's own hashes
    (``_hashlib`` starts OpenSSL)."""
    imported = _imported(["deploy", "--approve", "-q"], small_project, tmp_path)
    # no click either: the everyday job command line is answered by cli/quick.py
    heavy = _tops(imported) & {*HEAVY, "ruamel", "_ruamel_yaml", "_hashlib", "click"}
    assert not heavy, f"deploy imports {sorted(heavy)}"
    assert "unfurl_lite.record.journal" in imported  # (the probe saw the job run)
    # no query is walked: the query machinery stays out of the job's start
    assert not imported & {"unfurl_lite.expressions.resolve", "unfurl_lite.expressions.entities",
                           "unfurl_lite.expressions.instance_graph"}


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


@pytest.mark.parametrize("command", ["plan", "deploy"])
def test_the_commands_own_process_imports_only_its_budget(
        command: str, small_project: Path, tmp_path: Path) -> None:
    """The `unfurl` command as a user runs it (-X importtime: dataclasses' and patterns'
    caches enabled, inspect deferred), against the bare interpreter's start: our modules
    within the command's list, the standard library within its count, none of those no
    command's start needs."""
    args = ["plan", "ensemble.yaml"] if command == "plan" else [
        "deploy", "--approve", "-q", "ensemble.yaml"]
    imported = _command_imports(args, small_project, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bare = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], cwd=small_project,
                          env=env, capture_output=True, text=True, check=True).stderr
    imported -= {line.rsplit("|", 1)[1].strip() for line in bare.splitlines()
                 if line.startswith("import time:") and line.count("|") == 2}
    ours = {m for m in imported if m.startswith("unfurl_lite")}
    budget = (PLAN_OURS if command == "plan" else DEPLOY_OURS) | {
        "unfurl_lite.load.codecache", "unfurl_lite.load.modulecache",
        "unfurl_lite.load.regexcache"}  # the command's own
    assert ours <= budget, f"{command} now imports {sorted(ours - budget)}"
    assert not imported & NEVER_AT_START, sorted(imported & NEVER_AT_START)
    others = imported - ours
    assert len(others) <= COMMAND_STDLIB_MAX[command], sorted(others)


@pytest.mark.parametrize("command", ["plan", "deploy"])
def test_a_users_interpreter_imports_no_archive_or_temporary_file_modules(
        command: str, small_project: Path, tmp_path: Path) -> None:
    """This machine's site imports shutil, tempfile and zipfile before our first line (a
    .pth of its own); a user's interpreter does not, so the command must not need them:
    the command run with `python -S` (no site at all, the package on PYTHONPATH)."""
    args = ["plan", "ensemble.yaml"] if command == "plan" else [
        "deploy", "--approve", "-q", "ensemble.yaml"]
    env = {**os.environ, "UNFURL_LITE_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", "-m", "unfurl_lite", *args],
                          capture_output=True, text=True, cwd=small_project, env=env, check=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and line.count("|") == 2}
    assert "unfurl_lite.load.loader" in imported  # (the probe saw the command load)
    assert not imported & (NEVER_WITHOUT_SITE | NEVER_AT_START), sorted(
        imported & (NEVER_WITHOUT_SITE | NEVER_AT_START))


def test_a_plan_of_nodes_with_requirements_keeps_typing_off(tmp_path: Path) -> None:
    """A requirement brings its checks onto a cold plan's road (relationships, their
    targets' capabilities, the functions in them): typing stays off it too (python -S:
    this machine's site imports typing before our first line)."""
    root = tmp_path / "project"
    root.mkdir()
    nodes = shell_node("a", "true") + shell_node("b", "true") + (
        "  requirements:\n    - dependency: a\n")
    (root / "ensemble.yaml").write_text(ensemble_yaml(nodes))
    env = {**os.environ, "UNFURL_LITE_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", "-m", "unfurl_lite",
                           "plan", "ensemble.yaml"],
                          capture_output=True, text=True, cwd=root, env=env, check=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and line.count("|") == 2}
    assert "unfurl_lite.load.relationship_refs" in imported  # (the requirement's checks ran)
    assert not imported & NEVER_AT_START, sorted(imported & NEVER_AT_START)
