"""dataclasses' generated methods compiled once and kept beside the bytecode
(``load/codecache.py``): classes made through the cache behave as the ones dataclasses
makes alone, a second process finds what the first compiled, and a file that is not to
be trusted, or is damaged, is never read."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.conftest import ROOT
from unfurl_lite.load import codecache


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The cache enabled over ``tmp_path``, this test's alone: dataclasses' own exec and
    the cache's state are put back afterwards."""
    monkeypatch.setattr(codecache, "_compiled", {})
    monkeypatch.setattr(codecache, "_added", 0)
    monkeypatch.setattr(codecache.atexit, "register", lambda *args: None)
    monkeypatch.setattr(dataclasses, "exec", exec, raising=False)
    monkeypatch.setattr(codecache.sys, "dont_write_bytecode", False)
    directory = tmp_path / "__pycache__"
    directory.mkdir()
    codecache.enable(str(directory))
    return directory


def _classes() -> tuple[Any, ...]:
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        """doc"""
        name: str
        size: int = 3
        tags: tuple[str, ...] = ()
        kind: ClassVar[str] = "frozen"

    @dataclasses.dataclass
    class Plain:
        """doc"""
        items: list[int] = dataclasses.field(default_factory=list)
        note: str | None = dataclasses.field(default=None, compare=False, repr=False)

    @dataclasses.dataclass(order=True)
    class Ordered:
        """doc"""
        a: int
        b: str = "x"

    return Frozen, Plain, Ordered


def _behaviour(frozen: Any, plain: Any, ordered: Any) -> list[Any]:
    one = frozen("a")
    try:
        one.name = "b"
        refused = False
    except dataclasses.FrozenInstanceError:
        refused = True
    return [repr(one), one == frozen("a", 3), hash(one) == hash(frozen("a")), refused,
            frozen.kind, repr(plain()), plain([1], "n") == plain([1], "m"),
            plain().items is not plain().items, repr(sorted([ordered(2), ordered(1, "y")])),
            [f.name for f in dataclasses.fields(plain)]]


def test_classes_made_through_the_cache_behave_as_dataclasses_makes_them(cache: Path) -> None:
    through = _behaviour(*_classes())  # compiled and kept
    again = _behaviour(*_classes())  # from what was kept
    codecache._store(str(cache))
    dataclasses.exec = exec  # type: ignore[attr-defined]
    alone = _behaviour(*_classes())
    assert through == again == alone
    assert codecache._added > 0


def test_a_second_process_reads_what_the_first_compiled(cache: Path) -> None:
    _classes()
    codecache._store(str(cache))
    [written] = cache.iterdir()
    assert written.name == codecache.FILE
    kept = dict(codecache._compiled)
    read = codecache._read(str(written))
    assert read.keys() == kept.keys() and kept  # what the next start loads instead of compiling
    codecache._compiled.clear()
    codecache._compiled.update(read)
    assert all(type(code) is bytes for code in read.values())  # made into code when needed
    assert all(codecache.code_of(text) == code for text, code in kept.items())


def test_kept_bytes_that_are_not_code_are_compiled_again(cache: Path) -> None:
    """An entry whose bytes are damaged, or marshal something else, is dropped, and the
    class's methods are compiled as dataclasses compiles them."""
    made = _behaviour(*_classes())
    codecache._store(str(cache))
    texts = list(codecache._compiled)
    codecache._compiled.clear()
    codecache._compiled.update({texts[0]: b"\xff\x00", texts[1]: __import__("marshal").dumps(7)})
    assert codecache.code_of(texts[0]) is None and codecache.code_of(texts[1]) is None
    assert texts[0] not in codecache._compiled
    assert _behaviour(*_classes()) == made


def test_nothing_is_written_where_python_writes_no_bytecode(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codecache.sys, "dont_write_bytecode", True)
    _classes()
    codecache._store(str(cache))
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("damage", ["writable by others", "a symlink", "not marshal",
                                    "not a mapping", "not code"])
def test_a_file_not_to_be_trusted_or_damaged_is_not_read(cache: Path, damage: str) -> None:
    _classes()
    codecache._store(str(cache))
    path = cache / codecache.FILE
    if damage == "writable by others":
        os.chmod(path, 0o666)
    elif damage == "a symlink":
        real = cache.parent / "elsewhere.marshal"
        path.rename(real)
        path.symlink_to(real)
    elif damage == "not marshal":
        path.write_bytes(b"\xff" * 20)
    elif damage == "not a mapping":
        path.write_bytes(__import__("marshal").dumps([1, 2]))
    else:
        path.write_bytes(__import__("marshal").dumps({"def f(): pass": "text, not code"}))
    assert codecache._read(str(path)) == {}


_DEFERRED = """
import sys
from unfurl_lite.load import codecache
codecache.defer_import("inspect")
import dataclasses

@dataclasses.dataclass
class Documented:
    '''doc'''
    a: int

loaded_by_documented = type(sys.modules["inspect"]).__name__ != "_Deferred"

@dataclasses.dataclass
class Undocumented:
    a: int
    b: str = "x"

import inspect
print(loaded_by_documented, Undocumented.__doc__, inspect.signature(len),
      inspect is sys.modules["inspect"], type(inspect).__name__)
"""


def test_inspect_deferred_runs_when_first_read_and_is_the_one_module(tmp_path: Path) -> None:
    """dataclasses' ``import inspect`` does not run inspect (every class of ours has a
    docstring); the first class without one runs it, and everyone sees the same module."""
    done = subprocess.run([sys.executable, "-c", _DEFERRED], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert done.stdout.split() == ["False", "Undocumented(a:", "int,", "b:", "str", "=",
                                   "'x')", "(obj,", "/)", "True", "module"]
