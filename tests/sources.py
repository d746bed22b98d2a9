"""The package's and the tests' own sources, read and parsed once per test process.

The fitness tests (layers, import cycles, one home per name, a parameter spelled in its
declaration and planner only) all walk the same 180-odd modules; parsing them again in
each test cost more CPU than every check together. A tree is shared: never change one.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "unfurl_lite"
TESTS = ROOT / "tests"


@cache
def text(path: Path) -> str:
    return path.read_text()


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(text(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module's tree, as ``ast.walk`` gives them: walked once, then each
    test's scan is a loop over a tuple."""
    return tuple(ast.walk(tree(path)))


@cache
def python_files(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(folder.rglob("*.py")))


def test_files() -> tuple[Path, ...]:
    """The tests' modules, without the projects in tests/data."""
    return tuple(p for p in python_files(TESTS) if "data" not in p.relative_to(TESTS).parts)
