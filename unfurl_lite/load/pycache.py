"""Files the ``unfurl`` command keeps beside the package's own bytecode
(``unfurl_lite/__pycache__``): what a start would otherwise compute again each time
(the methods ``@dataclass`` writes, the text of ``unfurl --help``).

Read only when trusted as the bytecode beside them is: a regular file (not a link) that
nobody but its owner can write, owned by this user or by the package's owner; written
atomically, and only where and when Python writes bytecode. Only ``os`` and ``stat`` at
import: ``unfurl --help`` reads its text through this module before anything else loads.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

PYCACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "__pycache__")


def trusted(info: os.stat_result, directory: str) -> bool:
    """A regular file nobody but its owner can write, owned by us or by whoever owns the
    package (whose bytecode the interpreter runs anyway)."""
    if not stat.S_ISREG(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    try:
        owner = os.stat(os.path.dirname(directory)).st_uid
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    return getuid is None or info.st_uid in (getuid(), owner)


def read(path: str, max_bytes: int) -> bytes | None:
    """The file's bytes, or None when it is missing, not to be trusted or too large."""
    return read_if(path, lambda info: trusted(info, os.path.dirname(path))
                   and info.st_size <= max_bytes)


def read_if(path: str | os.PathLike[str], accept: Callable[[os.stat_result], bool]
            ) -> bytes | None:
    """The bytes of the file at ``path`` (never through a symlink, never blocking on a
    FIFO) when ``accept`` takes what the open file is; None otherwise."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not accept(os.fstat(fd)):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def write(directory: str, name: str, payload: bytes) -> None:
    """``payload`` as the file ``name``, atomically; silently nothing when Python writes
    no bytecode or the directory cannot take it."""
    if sys.dont_write_bytecode:
        return

    from pathlib import Path  # start-up: pathlib off pycache's import (ipaddress deferred)

    # start-up: keeps load.yamlio (13 modules) off pycache's import until write() runs
    from unfurl_lite.load.yamlio import temp_file

    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = temp_file(Path(directory), f".{name}.", mode=0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, os.path.join(directory, name))
    except OSError:
        return
