"""The methods ``@dataclass`` writes for each model class, compiled once, like bytecode.

Every ``@dataclass`` writes the source of its ``__init__``, ``__repr__``, ``__eq__`` (and
``__setattr__``/``__delattr__`` when frozen) and compiles it when its module is imported:
about a fifth of a command's imports, paid at each start (a deploy imports some fifty
model classes). The source depends only on the class's fields, so the ``unfurl``
command's process keeps each compiled text beside the package's own bytecode
(``unfurl_lite/__pycache__``, when Python may write bytecode there) and the next start
loads it instead of compiling it. Only the command's own process does this
(:func:`enable`); a library caller's interpreter is left alone. The file is trusted as the
bytecode beside it is: a regular file, owned by this user or by the package's owner,
that nobody else can write; anything else is ignored.

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize`` and six
more: 4-6 ms of a command's start) for one thing only, the signature it writes as the
docstring of a class that has none, and every class of ours has one
(``tests/test_import_budget.py``). So the command's process loads ``inspect`` when
something first reads it, not when ``dataclasses`` is imported (:func:`enable`); the same
for more that a job's modules import for what it rarely does: ``traceback`` (with
``linecache`` and ``tokenize``: ``logging``'s, for formatting an exception, and
``concurrent.futures`` imports ``logging``), ``locale`` (``subprocess``'s, for a
text-mode pipe's encoding: git's are bytes), ``copy`` (``dataclasses``' for ``asdict``;
its import looks for Jython's ``org.python.core`` along the whole path) and ``ipaddress``
(``urllib.parse``'s for a bracketed host; ``pathlib`` imports ``urllib.parse``).
"""

from __future__ import annotations

import atexit
import importlib.util
import marshal
import os
import sys
import threading
import types
from types import CodeType

from unfurl_lite.load import pycache
from unfurl_lite.model.narrow import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: marshalled code is only read back by the interpreter that wrote it
FILE = f"dataclass-code.{sys.implementation.cache_tag}-{sys.version.split()[0]}.marshal"
MAX_BYTES = 4 * 1024 * 1024
PYCACHE = pycache.PYCACHE

#: modules the command's process runs only when one of their names is first read
DEFERRED = ("inspect", "traceback", "locale", "copy", "ipaddress")
#: each text's code, or (read from the file and not used yet) its marshalled bytes
_compiled: dict[str, CodeType | bytes] = {}
_added = 0  # texts compiled in this process and not yet in the file


def enable(directory: str = PYCACHE) -> None:
    """Compile dataclasses' methods through the cache from now on (call it before the
    model's modules are imported), and store the new ones when the process exits."""
    global _added
    for name in DEFERRED:
        defer_import(name)
    import dataclasses  # start-up: after inspect is deferred: it keeps it off every command

    found = _read(os.path.join(directory, FILE))
    _compiled.update(found)
    if any(type(code) is CodeType for code in found.values()):
        _added += 1  # a file of an earlier version (code, not bytes): written anew
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # dataclasses' global, not the builtin
    atexit.register(_store, directory)


def defer_import(name: str) -> None:
    """Module ``name`` put in ``sys.modules`` now and run when one of its attributes is
    first read, unless it is imported already or cannot be found. (``importlib.util``'s
    LazyLoader would not do: ``import name`` itself reads the module's ``__spec__``,
    which runs it.)"""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _Deferred
    sys.modules[name] = module


def deferred() -> list[str]:
    """The modules :func:`defer_import` put in ``sys.modules`` that nothing has used yet:
    listed there, never run (what counts a command's imports leaves them out)."""
    return [name for name, module in list(sys.modules.items()) if type(module) is _Deferred]


class _Deferred(types.ModuleType):
    """A module whose code runs when a name it does not hold yet is first read."""

    def __getattr__(self, name: str) -> Any:
        with _deferring:
            if type(self) is _Deferred:  # not run by another thread meanwhile
                loader = getattr(self.__spec__, "loader", None)  # (defer_import's: found)
                object.__setattr__(self, "__class__", types.ModuleType)  # an ordinary one now
                if loader is not None:
                    loader.exec_module(self)
        return getattr(self, name)


_deferring = threading.RLock()


def _read(path: str) -> dict[str, CodeType | bytes]:
    """The file's entries: each text with its code still marshalled, made into code only
    when a class needs it (the file holds every command's classes, some 500 texts: reading
    all their code cost a command 8 ms; a deploy uses a fifth of them)."""
    payload = pycache.read(path, MAX_BYTES)
    if payload is None:
        return {}
    try:
        found = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):  # what marshal raises on damage
        return {}
    if not isinstance(found, dict):
        return {}
    entries = cast("dict[Any, Any]", found)  # anything marshal wrote: each entry checked
    return {k: v for k, v in entries.items()
            if isinstance(k, str) and (type(v) is bytes or type(v) is CodeType)}


def code_of(source: str) -> CodeType | None:
    """The code kept for ``source``, made from its bytes the first time it is asked for;
    None when none is kept, or what is kept is not code (then it is dropped)."""
    found = _compiled.get(source)
    if type(found) is bytes:
        try:
            found = marshal.loads(found)
        except (ValueError, EOFError, TypeError):
            found = None
        if type(found) is not CodeType:
            del _compiled[source]
            return None
        _compiled[source] = found
    return found if type(found) is CodeType else None


def _exec(source: Any, globals: Any = None, locals: Any = None) -> None:
    """``exec`` as dataclasses calls it (the text of a function maker, its globals, a
    namespace), with the text compiled once; the same flags as the text alone gets (none
    inherited from this module)."""
    global _added
    if type(source) is str:
        code = code_of(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _compiled[source] = code
            _added += 1
        source = code
    exec(source, globals, locals)


def _store(directory: str) -> None:
    """The compiled texts, written atomically when this process compiled new ones, where
    and when Python writes bytecode; silently skipped when they cannot be."""
    if not _added:
        return
    try:
        payload = marshal.dumps({k: v if type(v) is bytes else marshal.dumps(v)
                                 for k, v in _compiled.items()})
    except ValueError:
        return
    if len(payload) <= MAX_BYTES:
        pycache.write(directory, FILE, payload)
