"""The layout is the architecture: packages import only the layers below them.

Read bottom-up, the layers follow the data flow: security rules and the model are plain
building blocks, expressions evaluate over the model, load turns files into a model,
plan turns a model into tasks, run executes tasks, record writes what ran, the api offers
each use case, and the cli presents it. A module may import its own package and the
layers below; click and rich belong to the cli alone; GitPython to the one git module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "unfurl_lite"
LAYERS = ["errors", "security", "model", "expressions", "load", "plan", "run", "record",
          "api", "view", "cli"]
TOP = {"__init__", "__main__"}  # the package's front door may re-export anything
GIT_LAYER = "unfurl_lite.load.gitrepo"


def _modules() -> list[tuple[str, Path]]:
    return sorted((".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts), p)
                  for p in PACKAGE.rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement names, at any depth (lazy imports count too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
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
            if top == "git" and module != GIT_LAYER:
                found.append(f"{where} imports GitPython outside {GIT_LAYER}")
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


@pytest.mark.parametrize("limit", [600])
def test_no_module_is_longer_than_the_limit(limit):
    long = {str(p.relative_to(PACKAGE.parent)): n for _, p in _modules()
            if (n := len(p.read_text().splitlines())) > limit}
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
