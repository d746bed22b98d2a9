"""The bytecode of the modules a command imports, ours and the standard library's, read
from one file.

Importing a module the usual way walks the import path's finders, stats their
directories, builds the bytecode file's name, stats the source, opens, reads and checks
the bytecode file: about half of what an import costs beyond running the module, and a
deploy imports some 130 of our modules and 80 of the standard library's. The ``unfurl``
command's process keeps their bytecode in one file beside the package's own
(``unfurl_lite/__pycache__``) and a finder placed first serves them from it, each only
while its source has the size and modification time (in nanoseconds) it had when its
bytecode was taken (the check the bytecode file's own header makes, more finely), and only
where the usual search would find that same file: a submodule in its parent's
``__path__``, a top-level name of the standard library only when no directory before the
standard library's on ``sys.path`` (the command's directory, ``PYTHONPATH``) holds a
module of that name. Extension modules of the standard library (``lib-dynload``) are found
the same way and loaded as usual. A module the file lacks, or whose source changed, is
imported the usual way and its bytecode added when the process exits. The file is trusted
as the bytecode beside it is (:mod:`pycache`); only the command's own process does this
(:func:`enable`), a library caller's imports are left alone.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys
from importlib.machinery import ExtensionFileLoader, ModuleSpec, SourceFileLoader
from types import CodeType

from unfurl_lite.load import pycache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

#: bytecode is only read back by the interpreter that wrote it, at the same optimization
#: level (``python -O`` loads bytecode without asserts, from files of its own)
FILE = (f"modules.{sys.implementation.cache_tag}-{sys.version.split()[0]}"
        f"{f'-opt{sys.flags.optimize}' if sys.flags.optimize else ''}.marshal")
MAX_BYTES = 16 * 1024 * 1024  # the whole package's bytecode is about 3 MB
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIRECTORY = PACKAGE + os.sep
PREFIX = "unfurl_lite."
_STDLIB = getattr(sys, "_stdlib_dir", None) or os.path.dirname(os.__file__)
#: where the standard library's top-level modules are: its sources, its extension modules
STDLIB_DIRECTORIES = (_STDLIB, os.path.join(_STDLIB, "lib-dynload"))
_INIT = f"{os.sep}__init__.py"

#: a module's entry: its source (relative to the package's directory, or absolute: the
#: standard library's), its bytecode file (the same; "" for an extension module, which has
#: no bytecode), the source's modification time (ns) and size when the bytecode was taken,
#: and where its bytecode is in the file (start and end), or the bytecode itself (taken in
#: this process)
Entry = tuple[str, str, int, int, int, int] | tuple[str, str, int, int, bytes]
_entries: dict[str, Entry] = {}
#: the file, kept open: its descriptor, where its bytecode starts (after the index) and
#: how many bytes of it there are (a module's bytecode is read when it is imported)
_body: list[int] = [-1, 0, 0]
_changed = [False]  # a module imported the usual way, or an entry found stale
#: the file: the index's length (8 bytes, little-endian), the index (marshal), the bytecode
_LENGTH = 8
#: the names of modules a directory before the standard library's on sys.path holds
#: (None: one that cannot be listed, a zip file: no top-level name is served), and the
#: sys.path they were listed for (listed again when it changes: an operation may add to it)
_shadowed: list[frozenset[str] | None] = [None]
_shadowed_for: list[tuple[str, ...]] = [()]


class _Loader(SourceFileLoader):
    """The usual loader of a source file (its data, source and resources as usual), whose
    code is the one the file holds."""

    span: tuple[int, int] | None = None  # where its bytecode is in the file

    def get_code(self, fullname: str) -> CodeType:
        if self.span is not None:
            code, self.span = _bytecode(*self.span), None
            try:
                found = marshal.loads(code) if code is not None else None
            except (ValueError, EOFError, TypeError):  # what marshal raises on damage
                found = None
            if type(found) is CodeType:
                return found
        return super().get_code(fullname)  # type: ignore[return-value]


class _Finder:
    """First on ``sys.meta_path``: a spec for a module the file holds, when its source is
    unchanged and the usual search would find it there; None otherwise (the usual finders
    then look for it)."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """The spec of the usual loader for the module's file, with the file's code, when
        the usual search would find that file and its source is as it was; None otherwise
        (a stale or damaged entry is dropped and the module taken again at exit)."""
        entry = _entries.get(name)
        if entry is None:
            if name.startswith(PREFIX):
                _changed[0] = True
            return None
        try:  # (the file's entries are checked as they are used: a damaged one is dropped)
            source, cached, mtime, size, start, end = entry  # type: ignore[misc]
            origin = os.path.join(PACKAGE, source)
            package = origin.endswith(_INIT)
            where = origin.rpartition(os.sep)[0]
            if package:
                where = where.rpartition(os.sep)[0]
            if path is None:  # a top-level name: the standard library's, not shadowed
                if tuple(sys.path) != _shadowed_for[0]:
                    _shadowed_for[0] = tuple(sys.path)
                    _shadowed[0] = _shadowing(sys.path)
                shadowed = _shadowed[0]
                if shadowed is None or name in shadowed or where not in STDLIB_DIRECTORIES:
                    return None
            elif where not in path:  # (not where the usual search looks)
                return None
            info = os.stat(origin)
            if not 0 <= start <= end <= _body[2]:
                raise ValueError(end)
            if cached:
                cached = os.path.join(PACKAGE, cached)  # (absolute: not the package's)
        except (OSError, TypeError, ValueError):
            info = None
        if info is None or info.st_mtime_ns != mtime or info.st_size != size:
            del _entries[name]
            _changed[0] = True
            return None
        if not cached:  # an extension module
            return ModuleSpec(name, ExtensionFileLoader(name, origin), origin=origin)
        loader = _Loader(name, origin)
        loader.span = (start, end)
        spec = ModuleSpec(name, loader, origin=origin, is_package=package)
        if package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        spec.has_location = True
        spec.cached = cached
        return spec


def enable(directory: str = pycache.PYCACHE) -> None:
    """Serve the package's modules from the file from now on (before the command's
    modules are imported), and store the file anew when the process exits, if it changed."""
    _read(os.path.join(directory, FILE))
    sys.meta_path.insert(0, _Finder)
    atexit.register(_store, directory)


def _shadowing(search: list[str]) -> frozenset[str] | None:
    """The names of the modules and packages in the directories ``search`` lists before
    the standard library's (None if one of them cannot be listed: a zip file)."""
    names: set[str] = set()
    for entry in search:
        directory = entry or os.getcwd()
        if directory in STDLIB_DIRECTORIES:
            return frozenset(names)
        try:
            names.update(name.partition(".")[0] for name in os.listdir(directory))
        except NotADirectoryError:
            return None
        except OSError:  # (a directory that is not there holds nothing)
            continue
    return None  # the standard library is not on the path as usual


def _read(path: str) -> None:
    """The file's index, the file kept open (each entry is checked when its module is
    looked for; a module's bytecode is read and unmarshalled only when it is imported: the
    file holds every command's modules, reading it whole cost a command 3 ms)."""
    if _body[0] >= 0:
        os.close(_body[0])
    _body[:] = [-1, 0, 0]
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if not pycache.trusted(info, os.path.dirname(path)) or info.st_size > MAX_BYTES:
            raise ValueError(path)
        length = int.from_bytes(os.pread(fd, _LENGTH, 0), "little")
        if not 0 < length <= info.st_size - _LENGTH:
            raise ValueError(length)
        head = os.pread(fd, length, _LENGTH)
        found = marshal.loads(head) if len(head) == length else None
    except (OSError, ValueError, EOFError, TypeError):  # (TypeError: marshal's, on damage)
        found = None
    if type(found) is not dict:
        os.close(fd)
        return
    _entries.update(found)
    _body[:] = [fd, _LENGTH + length, max(0, info.st_size - _LENGTH - length)]


def _bytecode(start: int, end: int) -> bytes | None:
    """A module's bytecode from the file; None when it cannot be read whole."""
    try:
        code = os.pread(_body[0], end - start, _body[1] + start)
    except (OSError, ValueError):
        return None
    return code if len(code) == end - start else None


def _taken(name: str, module: ModuleType) -> Entry | None:
    """The entry for a module imported the usual way, of the package or of the standard
    library, from its source (its bytecode as the usual loader reads it, if the source did
    not change meanwhile), or an extension module of the standard library."""
    spec = getattr(module, "__spec__", None)
    loader = getattr(spec, "loader", None)
    origin = getattr(spec, "origin", None)
    if not isinstance(origin, str):
        return None
    ours = origin.startswith(PACKAGE_DIRECTORY)
    if not ours and not _standard(origin):
        return None
    cached = getattr(spec, "cached", None)
    try:
        before = os.stat(origin)
        if type(loader) is ExtensionFileLoader and not ours:
            cached, code = "", b""
        elif type(loader) is SourceFileLoader and isinstance(cached, str):
            code = marshal.dumps(loader.get_code(name))
        else:
            return None
        after = os.stat(origin)
    except (OSError, ImportError, ValueError):
        return None
    if (before.st_mtime_ns, before.st_size) != (after.st_mtime_ns, after.st_size):
        return None
    if cached.startswith(PACKAGE_DIRECTORY):
        cached = cached[len(PACKAGE_DIRECTORY):]
    source = origin[len(PACKAGE_DIRECTORY):] if ours else origin
    return (source, cached, before.st_mtime_ns, before.st_size, code)


def _standard(origin: str) -> bool:
    """Whether a module's file is the standard library's (not a third party's, installed
    under it without a virtualenv)."""
    if not origin.startswith(_STDLIB + os.sep):
        return False
    return not origin[len(_STDLIB) + 1:].startswith(("site-packages", "dist-packages"))


def _file() -> bytes:
    """The file's bytes: every entry, the bytecode of each in the order of the index."""
    index: dict[str, tuple[str, str, int, int, int, int]] = {}
    codes: list[bytes] = []
    offset = 0
    for name, entry in _entries.items():
        if not _sound(name, entry):
            continue
        source, cached, mtime, size = entry[:4]
        code = entry[4] if len(entry) == 5 else _bytecode(entry[4], entry[5])
        if code is None:
            continue
        index[name] = (source, cached, mtime, size, offset, offset + len(code))
        codes.append(code)
        offset += len(code)
    head = marshal.dumps(index)
    return b"".join([len(head).to_bytes(_LENGTH, "little"), head, *codes])


def _sound(name: object, entry: object) -> bool:
    """Whether an entry has the shape this module writes (the file's unused entries are
    written again only if they do)."""
    if type(name) is not str or type(entry) is not tuple or len(entry) not in (5, 6):
        return False
    if len(entry) == 5:
        return type(entry[4]) is bytes
    return (type(entry[0]) is str and type(entry[1]) is str
            and all(type(n) is int for n in entry[2:])
            and 0 <= entry[4] <= entry[5] <= _body[2])


def _imported() -> list[tuple[str, ModuleType]]:
    """The modules this process imported."""
    return list(sys.modules.items())


def _store(directory: str) -> None:
    """The entries, with the modules this process imported the usual way, written
    atomically when they changed, where and when Python writes bytecode."""
    if sys.dont_write_bytecode:
        return
    changed = _changed[0]
    for name, module in _imported():
        if name not in _entries and not name.startswith("__"):
            entry = _taken(name, module)
            if entry is not None:
                _entries[name] = entry
                changed = True
    if not changed:
        return
    payload = _file()
    if len(payload) <= MAX_BYTES:
        pycache.write(directory, FILE, payload)
