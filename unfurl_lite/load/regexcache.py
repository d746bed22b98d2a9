"""The regular expressions modules compile as they are imported, compiled once, like bytecode.

``re.compile`` parses a pattern and builds its matching code in pure Python: the seventy
or so patterns a command's modules compile at import (the YAML readers', the guard's,
click's and gettext's) cost it 12-16 ms at every start, an eighth of a cold ``plan``
beyond the interpreter's own start. What ``re`` builds depends only on the pattern, its
flags and the interpreter, so the ``unfurl`` command's process keeps the built code of the
patterns compiled by a module's own body (constants of the code, never a pattern made
from a document or an option) beside the package's bytecode, and the next start hands it
to the regular-expression engine (which checks it, as it checks any code) instead of
building it again. Only the command's own process does this (:func:`enable`); the file is
trusted as the bytecode beside it is (:mod:`pycache`).
"""

from __future__ import annotations

import _sre
import atexit
import marshal
import os
import re
import sys
from re import _compiler, _parser  # type: ignore[attr-defined]

from unfurl_lite.load import pycache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the code is the engine's own format: only read back by the interpreter that wrote it
FILE = f"regex-code.{sys.implementation.cache_tag}-{sys.version.split()[0]}.marshal"
MAX_BYTES = 2 * 1024 * 1024
MAX_PATTERNS = 256  # re keeps 512 compiled patterns; the module bodies' take a few dozen

Key = tuple[str | bytes, int]
Entry = tuple[str | bytes, int, int, list[int], int, dict[str, int], tuple[str | None, ...]]

_entries: dict[Key, Entry] = {}  # what the file held, and what this process added
_added: list[Key] = []  # compiled by a module body in this process, not yet in the file
_compile = re.compile
_UNCACHED = int(re.DEBUG) | 1  # re.DEBUG is never cached by re; 1 is re.TEMPLATE (deprecated)
#: ``inspect.CO_NEWLOCALS``: the code of a function; a module's or a class's body has none
_NEW_LOCALS = 0x2


def enable(directory: str = pycache.PYCACHE) -> None:
    """Put the patterns the file holds into ``re``'s own cache (call it before the
    modules that compile them are imported); note those module bodies compile from now
    on, and store the new ones when the process exits."""
    known: dict[Any, Any] = vars(re)["_cache"]  # re's own: what re.compile looks in first
    for entry in _read(os.path.join(directory, FILE)):
        compiled = _build(entry)
        if compiled is not None:
            _entries[entry[0], entry[1]] = entry
            known.setdefault((type(entry[0]), entry[0], entry[1]), compiled)
    re.compile = _noting
    atexit.register(_store, directory)


def _build(entry: Entry) -> re.Pattern[Any] | None:
    """The engine's pattern object from its stored code; None if the engine refuses it."""
    pattern, _, flags, code, groups, groupindex, indexgroup = entry
    try:
        return _sre.compile(pattern, flags, code, groups, groupindex, indexgroup)
    except (RuntimeError, TypeError, ValueError, OverflowError):  # "invalid SRE code" and kin
        return None


def _read(path: str) -> list[Entry]:
    payload = pycache.read(path, MAX_BYTES)
    if payload is None:
        return []
    try:
        found = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):  # what marshal raises on damage
        return []
    if not isinstance(found, list):
        return []
    return [e for e in found if _well_formed(e)][:MAX_PATTERNS]


def _well_formed(entry: Any) -> bool:
    """The entry's shape (the code's items are the engine's to check: it refuses any
    that is not a small enough integer, and :func:`_build` drops the entry)."""
    return (type(entry) is tuple and len(entry) == 7 and type(entry[0]) in (str, bytes)
            and type(entry[1]) is int and type(entry[2]) is int and type(entry[3]) is list
            and type(entry[4]) is int and type(entry[5]) is dict and type(entry[6]) is tuple)


def _noting(pattern: Any, flags: Any = 0) -> re.Pattern[Any]:
    """``re.compile``; a pattern a module's body or a class body compiles (the caller's
    frame is a module being imported, or a class statement in one: ``textwrap``'s and
    ``logging``'s patterns are their classes') and the file does not hold is noted for
    :func:`_store`."""
    compiled = _compile(pattern, flags)
    if type(pattern) in (str, bytes) and len(_entries) + len(_added) < MAX_PATTERNS \
            and not int(flags) & _UNCACHED:
        key = (pattern, int(flags))
        if key not in _entries and not sys._getframe(1).f_code.co_flags & _NEW_LOCALS:
            _entries[key] = (pattern, int(flags), 0, [], 0, {}, ())  # placeholder: once
            _added.append(key)
    return compiled


def entry_for(pattern: str | bytes, flags: int) -> Entry | None:
    """What the engine is given for ``pattern`` (as ``re``'s compiler builds it), checked
    against ``re.compile``'s own result; None when they differ in anything visible."""
    try:
        parsed = _parser.parse(pattern, flags)
        code = _compiler._code(parsed, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        entry: Entry = (pattern, flags, flags | parsed.state.flags, [int(c) for c in code],
                        parsed.state.groups - 1, groupindex, tuple(indexgroup))
        expected = _compile(pattern, flags)
    except Exception:  # anything re's internals raise: not cached
        return None
    built = _build(entry)
    if built is None or (built.pattern, built.flags, built.groups, dict(built.groupindex)) != (
            expected.pattern, expected.flags, expected.groups, dict(expected.groupindex)):
        return None
    return entry


def _store(directory: str) -> None:
    """The patterns' code, written atomically when this process compiled new ones, where
    and when Python writes bytecode; silently skipped when it cannot be."""
    if not _added or sys.dont_write_bytecode:
        return
    for key in _added:
        entry = entry_for(*key)
        if entry is None:
            del _entries[key]
        else:
            _entries[key] = entry
    _added.clear()
    try:
        payload = marshal.dumps([e for e in _entries.values() if e[3]])
    except ValueError:
        return
    if len(payload) <= MAX_BYTES:
        pycache.write(directory, FILE, payload)
