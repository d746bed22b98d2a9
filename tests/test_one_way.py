"""One way to do each thing: every user error in errors.py, one redaction entry point,
the taint types in security, and the dead code gone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests import sources
from tests.conftest import Invoke, Project, ensemble_yaml
from unfurl_lite import errors

PACKAGE = Path(__file__).resolve().parent.parent / "unfurl_lite"
REDACTORS = {"redact", "redact_text", "redact_tainted"}


def _nodes() -> dict[str, tuple[ast.AST, ...]]:
    """Each module of the package (by its path) and every node of its tree."""
    return {str(p.relative_to(PACKAGE.parent)): sources.nodes(p)
            for p in sources.python_files(PACKAGE)}


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr
            for b in node.bases if isinstance(b, ast.Name | ast.Attribute)}


def test_every_user_error_is_defined_in_errors_py() -> None:
    ours = {n.name for n in sources.nodes(PACKAGE / "errors.py")
            if isinstance(n, ast.ClassDef)}
    elsewhere = [f"{path}: {node.name}" for path, nodes in _nodes().items()
                 if path != "unfurl_lite/errors.py"
                 for node in nodes
                 if isinstance(node, ast.ClassDef) and _base_names(node) & ours]
    assert elsewhere == []


def test_errors_are_imported_from_errors_py_only() -> None:
    """An error has one home: no module re-exports one, and nobody imports it from elsewhere."""
    ours = {n.name for n in sources.nodes(PACKAGE / "errors.py")
            if isinstance(n, ast.ClassDef)}
    trees = _nodes() | {str(p.relative_to(PACKAGE.parent)): sources.nodes(p)
                        for p in sources.test_files()}
    elsewhere = [f"{path}:{node.lineno}: {node.module}.{alias.name}"
                 for path, nodes in trees.items() for node in nodes
                 if isinstance(node, ast.ImportFrom) and node.module != "unfurl_lite.errors"
                 and node.module != "unfurl_lite" for alias in node.names
                 if alias.name in ours]
    through = [f"{path}:{node.lineno}: {ast.unparse(node)}"
               for path, nodes in trees.items() for node in nodes
               if isinstance(node, ast.Attribute) and node.attr in ours
               and isinstance(node.value, ast.Name)
               and node.value.id not in ("errors", "unfurl_lite", "git")]  # git: GitPython
    assert elsewhere == []
    assert through == []


def test_a_bad_changeid_is_a_user_error_and_still_a_value_error() -> None:
    from unfurl_lite.model import changeid

    with pytest.raises(errors.UnfurlLiteError, match="not a changeId") as caught:
        changeid.parse("nonsense")
    assert isinstance(caught.value, ValueError)


def test_a_changeid_naming_nothing_is_a_clear_error(project: Project, invoke: Invoke) -> None:
    project.write(ensemble_yaml("app:\n  type: tosca.nodes.Root\n"))
    result = invoke("show", "not-a-changeid")
    assert result.exit_code == 1
    assert "not a changeId" in result.output
    assert "Traceback" not in result.output


def test_redaction_has_one_entry_point() -> None:
    """Only security/redaction.py redacts; everything else imports it from there."""
    defined = [f"{path}: {node.name}" for path, nodes in _nodes().items()
               if path != "unfurl_lite/security/redaction.py"
               for node in nodes
               if isinstance(node, ast.FunctionDef) and node.name in REDACTORS]
    imported = [f"{path}: {node.module}" for path, nodes in _nodes().items()
                for node in nodes
                if isinstance(node, ast.ImportFrom)
                and {a.name for a in node.names} & REDACTORS
                and node.module != "unfurl_lite.security.redaction"]
    # the marker is the taint types' (a Sensitive shows as it), below redaction
    imported += [f"{path}: REDACTED from {node.module}" for path, nodes in _nodes().items()
                 for node in nodes
                 if isinstance(node, ast.ImportFrom)
                 and "REDACTED" in {a.name for a in node.names}
                 and node.module != "unfurl_lite.security.taint"]
    assert defined == []
    assert imported == []


def test_the_taint_types_belong_to_security() -> None:
    from unfurl_lite.security import redaction, taint

    secret = taint.Sensitive("hunter22")
    assert repr(secret) == taint.REDACTED
    assert isinstance(secret[1:5], taint.Tainted)
    assert redaction.redact({"pw": secret, "cmd": taint.Tainted("echo hunter22")},
                            {"hunter22"}) == {"pw": taint.REDACTED,
                                              "cmd": f"echo {taint.REDACTED}"}


@pytest.mark.parametrize(("module", "name"), [
    ("unfurl_lite.model.dependencies", "find_cycle"),
    ("unfurl_lite.model.entities", "ReadyState"),
    ("unfurl_lite.security.paths", "is_inside"),
    ("unfurl_lite.model.status_layout", "has_nested"),
    ("unfurl_lite.record.history", "workflow_of"),
    ("unfurl_lite.view.diagram", "kind_description"),
])
def test_dead_code_is_gone(module: str, name: str) -> None:
    import importlib

    assert not hasattr(importlib.import_module(module), name)


def test_the_ensemble_lives_in_the_model_and_says_what_it_is() -> None:
    from unfurl_lite.load import loader
    from unfurl_lite.model.ensemble import Ensemble

    assert Ensemble.__doc__ and "instance" in Ensemble.__doc__
    assert not hasattr(Ensemble, "instances_of")
    assert "Ensemble" not in {n.name for n in ast.walk(ast.parse(Path(loader.__file__).read_text()))
                              if isinstance(n, ast.ClassDef)}


def test_no_tracked_file_is_over_a_megabyte() -> None:
    """Generated data (benchmark ensembles, runs) stays out of git; .gitignore keeps it out."""
    import subprocess

    root = PACKAGE.parent
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    sizes = {name: (root / name).stat().st_size for name in listed.stdout.split("\0")
             if name and (root / name).is_file()}
    assert {name: size for name, size in sizes.items() if size > 1_000_000} == {}


def test_tests_start_python_through_sys_executable() -> None:
    """A bare ``python`` may be another interpreter, or none: tests use sys.executable."""
    tests = Path(__file__).resolve().parent
    bare = [f"{p.relative_to(tests)}:{node.lineno}"
            for p in sources.test_files()
            for node in sources.nodes(p)
            if isinstance(node, ast.List) and node.elts
            and isinstance(node.elts[0], ast.Constant)
            and isinstance(node.elts[0].value, str)
            and re.fullmatch(r"python[0-9.]*", node.elts[0].value)]
    assert bare == []


#: the packages whose front door offers names of their modules
FRONT_DOORS = ["__init__.py", "api/__init__.py", "plan/__init__.py",
               "run/operations/__init__.py", "run/executors/celery/__init__.py"]


@pytest.mark.parametrize("front_door", FRONT_DOORS)
def test_each_package_offers_one_table_of_names(front_door: str) -> None:
    """The public surface is written once (EXPORTS, which makes ``__all__``); the imports
    for type checkers name exactly the same names, so the two cannot drift apart."""
    import importlib

    path = PACKAGE / front_door
    module = importlib.import_module(".".join(
        ("unfurl_lite", *Path(front_door).parent.parts)).rstrip("."))
    tree = sources.tree(path)
    typed = {alias.asname or alias.name for node in tree.body
             if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
             for statement in node.body if isinstance(statement, ast.ImportFrom)
             for alias in statement.names}
    assert typed == set(module.EXPORTS)
    assert set(module.__all__) - {"__version__"} == set(module.EXPORTS)
    for name in module.EXPORTS:
        assert getattr(module, name) is not None


def _broad(handler: ast.ExceptHandler) -> bool:
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(
        isinstance(c, ast.Name) and c.id in ("Exception", "BaseException") for c in caught)


def test_every_broad_except_says_why_or_raises_again() -> None:
    """``except Exception`` hides bugs unless the reason is on its line (what can be raised
    there that no narrower class names: a user's code, a broker client, any damage in an
    old file) or the handler raises again; a bare ``except:`` is never right."""
    silent = []
    for path in sources.python_files(PACKAGE):
        lines = sources.text(path).splitlines()
        for node in sources.nodes(path):
            if not isinstance(node, ast.ExceptHandler) or not _broad(node):
                continue
            raises = any(isinstance(n, ast.Raise) and n.exc is None
                         for statement in node.body for n in ast.walk(statement))
            if node.type is None or ("#" not in lines[node.lineno - 1] and not raises):
                silent.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert silent == []
