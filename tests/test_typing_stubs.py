"""The local stubs in ``typings/`` stay true to the libraries they describe.

pyright reads them instead of the packages' own code (CONTRIBUTING.md, "Typed data"): a
stub naming a class, function or method the installed library no longer has would make
the type checker vouch for code that fails at run time. Each name a stub declares must
exist on the real module or class (attributes a class sets in ``__init__`` are not
checked: they are not on the class). pyright itself is not run here (minutes); its
command is in docs/typing.md.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.conftest import ROOT

TYPINGS = ROOT / "typings"
#: names a stub declares for the checker only: ``__getattr__`` answers for what it leaves out
FOR_THE_CHECKER = {"__getattr__", "__setattr__"}


def _own(name: str) -> bool:
    """A stub's own helper type (``_Settings``: the shape of what an attribute holds)."""
    return name.startswith("_") and not name.startswith("__")


def _module_name(stub: Path) -> str:
    parts = stub.relative_to(TYPINGS).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declared(tree: ast.Module) -> tuple[set[str], dict[str, set[str]]]:
    """Module-level names (classes, functions, annotated values, re-exports) and each
    class's methods."""
    names: set[str] = set()
    methods: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            methods[node.name] = {item.name for item in node.body
                                  if isinstance(item, ast.FunctionDef)} - FOR_THE_CHECKER
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.name for alias in node.names if alias.asname == alias.name}
    return names - FOR_THE_CHECKER, methods


STUBS = sorted(TYPINGS.rglob("*.pyi"))
#: importing Celery takes a second: its stubs are checked in CI's second pass
SLOW = ("celery",)


def test_there_are_stubs_to_check():
    assert {_module_name(s) for s in STUBS} >= {"ruamel.yaml", "ruamel.yaml.nodes", "celery"}


@pytest.mark.parametrize("stub", [
    pytest.param(s, id=_module_name(s),
                 marks=[pytest.mark.slow] if _module_name(s).startswith(SLOW) else [])
    for s in STUBS])
def test_every_name_a_stub_declares_exists(stub: Path) -> None:
    name = _module_name(stub)
    try:
        module = importlib.import_module(name)
    except ImportError:  # CPython's _sha256 is _sha2 from 3.12 on; the C parser is optional
        pytest.skip(f"{name} is not importable here")
    names, methods = _declared(ast.parse(stub.read_text()))
    missing = sorted(n for n in names if not _own(n) and not hasattr(module, n))
    missing += sorted(f"{cls}.{method}" for cls, found in methods.items() if not _own(cls)
                      for method in found if not hasattr(getattr(module, cls), method))
    assert missing == [], f"{stub.relative_to(ROOT)} declares what {name} does not have"
