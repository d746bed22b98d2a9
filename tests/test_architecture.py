"""The layout is the architecture: packages import only the layers below them.

Read bottom-up, the layers follow the data flow: security rules and the model are plain
building blocks, expressions evaluate over the model, load turns files into a model,
plan turns a model into tasks, run executes tasks, record writes what ran, the api offers
each use case, and the cli presents it. A module may import its own package and the
layers below; click and rich belong to the cli alone; GitPython to the module that reads
history (jobs run the `git` command, which only the git layer runs:
tests/load/test_gitrepo.py).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests import sources

PACKAGE = Path(__file__).resolve().parent.parent / "unfurl_lite"
LAYERS = ["errors", "exports", "security", "model", "expressions", "load", "plan", "run", "record",
          "api", "view", "cli"]
TOP = {"__init__", "__main__"}  # the package's front door may re-export anything
GIT_LAYER = "unfurl_lite.load.gitrepo"
HISTORY_READER = "unfurl_lite.load.gitobjects"


def _modules(package: Path = PACKAGE) -> list[tuple[str, Path]]:
    return sorted((".".join(p.relative_to(package.parent).with_suffix("").parts), p)
                  for p in sources.python_files(package))


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement names, at any depth (lazy imports count too)."""
    found = []
    for node in sources.nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            if node.module == "unfurl_lite":
                found += [(node.lineno, f"unfurl_lite.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "unfurl_lite" or len(parts) < 2 or parts[1] in TOP:
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def _violations() -> list[str]:
    found = []
    for module, path in _modules():
        own = _layer(module)
        for line, imported in _imports(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            top = imported.split(".")[0]
            if top in ("click", "rich") and own != LAYERS.index("cli"):
                found.append(f"{where} imports {top} outside cli/")
            if top == "git" and module != HISTORY_READER:
                found.append(f"{where} imports GitPython (only {HISTORY_READER} reads "
                             f"history with it; git is run by {GIT_LAYER})")
            theirs = _layer(imported)
            if own is not None and theirs is not None and theirs > own:
                found.append(f"{where} ({LAYERS[own]}) imports {imported} ({LAYERS[theirs]})")
    return found


def test_every_package_is_a_known_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py")} - TOP
    assert packages | modules == set(LAYERS)


def test_imports_point_down_the_layers_only():
    assert _violations() == []


#: Functions over the limit still without a docstring, each named on purpose (none left:
#: run/scheduler.py's were given theirs when it was split by concern).
LONG_WITHOUT_DOCSTRING: dict[str, set[str]] = {}


def test_every_long_function_says_why_in_a_docstring():
    """A function over 30 lines mixes steps a reader has to keep apart: its docstring says
    what it is for (or it is split into functions that each say it by name)."""
    missing = {}
    for _, path in _modules():
        name = str(path.relative_to(PACKAGE.parent))
        allowed = LONG_WITHOUT_DOCSTRING.get(name, set())
        found = {node.name for node in sources.nodes(path)
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 and (node.end_lineno or node.lineno) - node.lineno + 1 > 30
                 and ast.get_docstring(node) is None and node.name not in allowed}
        if found:
            missing[name] = sorted(found)
    assert missing == {}


#: Module names two packages share, each pair one thing: the api's use case and the CLI's
#: command for it (``api/jobs.py``, ``cli/commands/jobs.py``...), install_new_agents'
#: planner and its operation, and the model's entities with what queries walk of them.
#: ``lineage`` (TOSCA type lineage; a Celery task copy's decisions) is the one left: its
#: Celery half is the distributed executor's, renamed with that work.
SHARED_NAMES = {"__init__", "project", "jobs", "inspect", "distributed", "control", "agents",
                "entities", "lineage"}


def test_no_two_modules_share_a_name_for_different_things():
    by_name: dict[str, list[str]] = {}
    for module, _ in _modules():
        by_name.setdefault(module.rpartition(".")[2], []).append(module)
    shared = {name: modules for name, modules in by_name.items()
              if len(modules) > 1 and name not in SHARED_NAMES}
    assert shared == {}


@pytest.mark.parametrize("limit", [600])
def test_no_module_is_longer_than_the_limit(limit):
    long = {str(p.relative_to(PACKAGE.parent)): n for _, p in _modules()
            if (n := len(sources.text(p).splitlines())) > limit}
    assert long == {}


def test_contributing_maps_every_package_and_module():
    """The map in CONTRIBUTING.md is how newcomers find their way: it must not go stale."""
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text()
    missing = [module for module, path in _modules()
               if path.stem not in TOP and f"`{path.stem}`" not in text
               and f"`{path.stem}/`" not in text]
    missing += [f"{layer}/" for layer in LAYERS
                if (PACKAGE / layer).is_dir() and f"`{layer}/`" not in text]
    assert missing == []
    rows = {line.split("|")[1].strip().strip("`").rstrip("/"): line
            for line in text.splitlines() if line.startswith("| `")}
    elsewhere = [module for module, path in _modules()
                 if path.stem not in TOP and module.count(".") > 1
                 and f"`{path.stem}`" not in rows.get(module.split(".")[1], "")
                 and f"`{path.stem}/`" not in rows.get(module.split(".")[1], "")]
    assert elsewhere == []  # each module is named in its own layer's row


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``: imports for type checkers, never run."""
    return {id(node) for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for statement in block.body for node in ast.walk(statement)}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the modules of ours its import statements run, at any depth: module
    level and function-local alike (a lazy import hides a cycle, it does not remove it).
    ``from package import name`` runs the package's ``__init__`` as well as ``name``'s
    module, so it depends on both."""
    modules = {module.removesuffix(".__init__"): path for module, path in _modules(package)}
    graph: dict[str, set[str]] = {}
    for module, path in _modules(package):
        name = module.removesuffix(".__init__")
        tree = sources.tree(path)
        skip = _type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                found |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules}
                if base in modules:
                    found.add(base)
        graph[name] = found - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import one another, directly or around a loop (Tarjan's
    strongly connected components, iteratively), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


def test_import_cycles_are_found_through_lazy_imports_too(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("def later():\n    from pkg import c\n")
    (package / "a.py").write_text("from pkg.b import thing\n")
    (package / "b.py").write_text("def thing():\n    from . import a\n")
    (package / "c.py").write_text("from pkg.sub import d\n")
    (package / "sub" / "d.py").write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                                          "    from pkg import a\n")
    graph = import_graph(package)
    assert graph["pkg.b"] == {"pkg", "pkg.a"}
    assert graph["pkg.sub.d"] == set()  # for type checkers only: never run
    assert import_cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub"]]
    assert import_cycles({"x": {"y"}, "y": set()}) == []


def test_no_import_cycles_even_through_function_local_imports():
    """A cycle hidden by a function-local import still couples the modules both ways;
    the shared piece belongs in a module below both. Lazy imports stay only to keep
    start-up cheap."""
    assert import_cycles(import_graph()) == []


#: the one-line reason a function-local import gives (CONTRIBUTING.md, "Imports"): what it
#: keeps off the command's start (``start-up:``) or a dependency that may be missing
#: (``optional:``)
LOCAL_IMPORT_REASON = re.compile(r"#\s*(start-up|optional):\s*\S")


def local_imports_without_reason(path: Path) -> list[int]:
    """Lines of the function-local imports of ``path`` that give no reason: none on their
    own line, none on the comment line just above the run of imports they are part of."""
    lines = sources.text(path).splitlines()
    tree = sources.tree(path)
    skip = _type_checking_only(tree)
    local = [node for function in ast.walk(tree)
             if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
             for node in ast.walk(function)
             if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip]
    taken = {line for node in local for line in range(node.lineno, (node.end_lineno or 0) + 1)}
    missing = []
    for node in local:
        above = node.lineno - 1
        while above in taken:
            above -= 1
        own = "\n".join(lines[node.lineno - 1: node.end_lineno])
        if not (LOCAL_IMPORT_REASON.search(own)
                or (above and LOCAL_IMPORT_REASON.match(lines[above - 1].strip()))):
            missing.append(node.lineno)
    return sorted(set(missing))


def test_a_local_import_without_a_reason_is_found(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import json\n\n"
        "def a():\n    import csv  # start-up: csv only when a() runs\n\n"
        "def b():\n    # start-up: only when b() runs\n    import csv\n    import json\n\n"
        "def c():\n    import csv  # why not\n    x = 1\n    import json\n\n"
        "def d():\n    try:\n        import yaml  # optional: yaml may be missing\n"
        "    except ImportError:\n        pass\n")
    assert local_imports_without_reason(module) == [12, 14]


def test_every_function_local_import_says_why():
    """An import inside a function hides what a module needs; it stays only for what it
    keeps off the command's start (or for a dependency that may be missing), and says so."""
    missing = {str(path.relative_to(PACKAGE.parent)): lines for _, path in _modules()
               if (lines := local_imports_without_reason(path))}
    assert missing == {}


#: declared parameters whose names are ordinary words of other layers, spelled there with
#: their own meaning: an operation's ``command``, ``inputs`` and ``operation``, the
#: ``force`` of a lock or a kill, the ``check`` operation and a check's findings, a node
#: ``template``. The rule below is for every other parameter.
ORDINARY_WORDS = {"command", "inputs", "operation", "force", "check", "template"}
#: the methods a mapping is read by key with
_KEY_READERS = {"get", "pop", "setdefault"}
_NAMED = {ast.Name: "id", ast.arg: "arg", ast.keyword: "arg", ast.Attribute: "attr"}


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def _keys(node: ast.AST) -> list[ast.expr | None]:
    """The expressions ``node`` uses as a mapping's keys (or compares)."""
    if isinstance(node, ast.Dict):
        return list(node.keys)
    if isinstance(node, ast.Subscript):
        return [node.slice]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _KEY_READERS and node.args):
        return [node.args[0]]
    return []


def parameter_spellings(path: Path, name: str) -> list[int]:
    """Lines of ``path``'s code that carry the parameter ``name`` along: a variable, an
    argument, a keyword or an attribute of that name, a mapping key or a comparison with
    it, or the command line's spelling of it (``NAME=``, ``--name``). Prose (comments,
    docstrings) is not code, and a string that is only the same word (a task's reason, an
    operation's or a git command's name) is another concept."""
    cli = re.compile(rf"(?<![\w-])(?:{name}=|--{name.replace('_', '-')}\b)")
    prose = _docstrings(sources.tree(path))
    found = set()
    for node in sources.nodes(path):
        if type(node) in _NAMED:
            if getattr(node, _NAMED[type(node)]) == name:
                found.add(getattr(node, "lineno", None) or node.value.lineno)  # type: ignore[attr-defined]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in prose and cli.search(node.value)):
            found.add(node.lineno)
        else:
            found |= {key.lineno for key in _keys(node)
                      if isinstance(key, ast.Constant) and key.value == name}
    return sorted(found)


def test_parameter_spellings_are_code_that_carries_the_parameter(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        '"""delta in prose"""\n'
        'def f(delta):\n    """delta=1 in a docstring"""\n    return delta  # delta\n\n'
        "x = opts['delta'] + opts.get('delta') + g(delta=1)\n"
        "y = {'delta': 1}\nz = 'delta'\nif w == 'delta': pass\n"
        "e = f'-p delta={1}'\nh = '--delta N'\nj = '--deltas, delta_x=1, timedelta'\n"
        "k = obj.delta\n")
    assert parameter_spellings(module, "delta") == [2, 4, 6, 7, 9, 10, 11, 13]


def _spelled_in(name: str) -> set[str]:
    return {str(path.relative_to(PACKAGE)) for _, path in _modules()
            if name in sources.text(path) and parameter_spellings(path, name)}


def test_a_workflow_parameter_is_spelled_in_its_declaration_and_its_planner_only():
    """Adding a parameter to a workflow touches two files: its declaration and its planner
    (issue 27). Every layer between (the CLI's options, ``-p``, PlanOptions, what a job
    records) takes it from the declaration. The job-wide selection every planner takes
    (``CUSTOM_TAKES``: the CLI's ``--instance``) is the job layer's own."""
    from unfurl_lite.model.builtin_workflows import CUSTOM_TAKES, PARAMETERS, WORKFLOWS

    spread = {}
    for name in sorted(set(PARAMETERS) - ORDINARY_WORDS - set(CUSTOM_TAKES)):
        planners = {f"plan/{w.planner.partition(':')[0]}.py" for w in WORKFLOWS
                    if name in w.takes}
        spelled = _spelled_in(name)
        if not spelled <= {"model/builtin_workflows.py", *planners} or len(spelled) > 2:
            spread[name] = sorted(spelled)
    assert spread == {}
