"""The modules a command imports served from one file of bytecode
(``load/modulecache.py``): a module is served while its source is as it was when its
bytecode was taken and the usual search would find it there, imported the usual way when
it changed, another directory holds it first, or the file lacks it; a file that is not to
be trusted, or is damaged, is never read."""

from __future__ import annotations

import importlib
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT
from unfurl_lite.load import modulecache

NAME = "unfurl_lite.model.narrow"  # a small module without side effects


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The finder's state and sys.meta_path put back afterwards, the module imported anew
    by each import, the file in ``tmp_path`` (closed after)."""
    monkeypatch.setattr(modulecache, "_entries", {})
    monkeypatch.setattr(modulecache, "_body", [-1, 0, 0])
    monkeypatch.setattr(modulecache, "_changed", [False])
    monkeypatch.setattr(modulecache, "_shadowed", [None])
    monkeypatch.setattr(modulecache, "_shadowed_for", [()])
    monkeypatch.setattr(modulecache.atexit, "register", lambda *args: None)
    monkeypatch.setattr(modulecache.sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, NAME, raising=False)  # put back as it was after
    monkeypatch.setattr(modulecache, "_imported", lambda: [  # not the whole test process's
        (name, sys.modules[name]) for name in (NAME, "json", "json.decoder", "_json")
        if name in sys.modules])
    directory = tmp_path / "__pycache__"
    directory.mkdir()
    yield directory
    if modulecache._body[0] >= 0:
        os.close(modulecache._body[0])


def _fresh(directory: Path) -> ModuleType:
    """A new process's start as far as the finder goes: the file read, the module imported."""
    modulecache._entries.clear()
    modulecache._changed[0] = False
    sys.meta_path[:] = [f for f in sys.meta_path if f is not modulecache._Finder]
    sys.modules.pop(NAME, None)
    modulecache.enable(str(directory))
    return importlib.import_module(NAME)


def test_a_module_is_served_from_the_file_while_its_source_is_unchanged(cache: Path) -> None:
    usual = _fresh(cache)
    assert type(usual.__spec__.loader) is SourceFileLoader and modulecache._changed[0]
    modulecache._store(str(cache))
    served = _fresh(cache)
    assert type(served.__spec__.loader) is modulecache._Loader
    assert not modulecache._changed[0]  # nothing to write again
    assert (served.__file__, served.__cached__, sorted(vars(served))) == (
        usual.__file__, usual.__cached__, sorted(vars(usual)))
    assert served.is_map({}) and not served.is_map([])  # its code runs


def test_a_module_whose_source_changed_is_imported_as_usual_and_taken_again(
        cache: Path) -> None:
    _fresh(cache)
    modulecache._store(str(cache))
    _fresh(cache)
    entry = modulecache._entries[NAME]
    modulecache._entries[NAME] = (*entry[:2], entry[2] - 1, *entry[3:])  # as if edited
    modulecache._changed[0] = True
    modulecache._store(str(cache))
    stale = _fresh(cache)
    assert type(stale.__spec__.loader) is SourceFileLoader and NAME not in modulecache._entries
    modulecache._store(str(cache))
    assert type(_fresh(cache).__spec__.loader) is modulecache._Loader


@pytest.mark.parametrize("damage", ["writable", "truncated", "garbage", "entry"])
def test_a_file_that_is_not_to_be_trusted_or_is_damaged_is_not_read(
        cache: Path, damage: str) -> None:
    _fresh(cache)
    modulecache._store(str(cache))
    path = cache / modulecache.FILE
    if damage == "writable":
        os.chmod(path, 0o666)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "garbage":
        path.write_bytes(b"\xff" * 64)
    else:  # an index whose entry has another shape, and one whose bytecode is not code
        head = marshal.dumps({NAME: ("model/narrow.py", 1), "unfurl_lite.load": 3})
        path.write_bytes(len(head).to_bytes(8, "little") + head)
    assert type(_fresh(cache).__spec__.loader) is SourceFileLoader
    modulecache._store(str(cache))  # the damaged entries dropped, the module taken again
    assert type(_fresh(cache).__spec__.loader) is modulecache._Loader


def test_bytecode_that_is_not_code_is_read_from_the_usual_file(cache: Path) -> None:
    _fresh(cache)
    modulecache._store(str(cache))
    path = cache / modulecache.FILE
    data = path.read_bytes()
    body = len(data) - modulecache._body[2]  # (where the bytecode starts: the index before)
    with open(path, "r+b") as handle:  # the bytecode damaged after the index was read
        modulecache._entries.clear()
        modulecache.enable(str(cache))
        handle.seek(body)
        handle.write(b"\xff" * (len(data) - body))
    sys.modules.pop(NAME, None)
    module = importlib.import_module(NAME)
    assert type(module.__spec__.loader) is modulecache._Loader and module.is_map({})


def test_the_standard_librarys_modules_are_served_unless_a_directory_before_it_holds_one(
        cache: Path, tmp_path: Path) -> None:
    import json.decoder  # noqa: F401  # (imported: the file takes it, its package and _json)

    _fresh(cache)
    modulecache._store(str(cache))
    modulecache._entries.clear()
    modulecache.enable(str(cache))
    assert {"json", "json.decoder", "_json"} <= set(modulecache._entries)
    stdlib = modulecache.STDLIB_DIRECTORIES[0]
    spec = modulecache._Finder.find_spec("json")
    assert spec is not None and type(spec.loader) is modulecache._Loader
    assert spec.origin == os.path.join(stdlib, "json", "__init__.py")
    assert spec.submodule_search_locations == [os.path.join(stdlib, "json")]
    decoder = modulecache._Finder.find_spec("json.decoder", [os.path.join(stdlib, "json")])
    assert decoder is not None and decoder.origin == os.path.join(stdlib, "json", "decoder.py")
    extension = modulecache._Finder.find_spec("_json")
    assert extension is not None and type(extension.loader).__name__ == "ExtensionFileLoader"
    # a package of the same name elsewhere: its submodule is not the standard library's
    assert modulecache._Finder.find_spec("json.decoder", [str(tmp_path / "json")]) is None
    # a directory before the standard library's holding json: the usual search finds that
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "json.py").write_text("")
    sys.path.insert(0, str(tmp_path / "mine"))  # (as an operation might: listed again)
    try:
        assert modulecache._Finder.find_spec("json") is None
    finally:
        sys.path.remove(str(tmp_path / "mine"))
    assert modulecache._Finder.find_spec("json") is not None
    modulecache._shadowed[0] = modulecache._shadowing([str(tmp_path / "mine"), stdlib])
    modulecache._shadowed_for[0] = tuple(sys.path)
    assert modulecache._Finder.find_spec("json") is None
    assert modulecache._Finder.find_spec("_json") is not None
    assert "json" in modulecache._entries  # (not stale: another process may be served it)
    zipped = tmp_path / "lib.zip"
    zipped.write_bytes(b"")
    assert modulecache._shadowing([str(zipped), stdlib]) is None


def test_python_minus_o_keeps_a_file_of_its_own() -> None:
    """``python -O`` runs bytecode without asserts: bytecode taken by one level is never
    served to another."""
    name = "from unfurl_lite.load.modulecache import FILE; print(FILE)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain, optimized = (subprocess.run([sys.executable, *flags, "-c", name], env=env, text=True,
                                       capture_output=True, check=True).stdout
                        for flags in ([], ["-O"]))
    assert plain.strip() == modulecache.FILE and optimized.strip() != plain.strip()
