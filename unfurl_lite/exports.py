"""A package's public names, written once: a table of ``name -> "module:attribute"`` that
makes the package's ``__all__`` and imports a name's module when the name is first used
(PEP 562), so importing a package costs nothing until one of its names is used.

Each front door keeps, under ``TYPE_CHECKING``, imports of the same names for type checkers;
tests/test_one_way.py keeps the two the same.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def lazy(package: str, exports: dict[str, str]
         ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) for
    ``exports``: a name's module is imported when the name is first read, then the value
    is kept in the package's namespace."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        module = importlib.import_module(module_name)
        value = getattr(module, attribute) if attribute else module
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
