"""Validated ensembles remembered by their path and the digest of their text, like .pyc files.

Parsing and validating a 10 000-node ensemble costs seconds even with a C parser; loading
the same data back with ``marshal`` costs milliseconds. The key is the SHA-256 of the
ensemble's resolved path and its text, together with this package's version and the JSON
schema, so any edit (or an upgrade) misses and the ensemble is parsed and validated again.
The path is part of the key because the same text means different things in different
projects: ``+include: env.yaml`` reads *this* project's env.yaml. An entry also names every
file its includes read with the SHA-256 of what it held, and it is used only while each of
those files (all inside the ensemble's own directory) still holds exactly that: a hit can
only return data that passed validation for exactly these bytes in exactly this place. A
job that writes an ensemble stores the data it wrote, so the next command on it starts warm.

The cache is off for a library caller until :func:`enable` (the ``unfurl`` command enables
it): loading an ensemble should not write into someone's home unasked. It lives in
``$UNFURL_LITE_CACHE`` when that is set (``off`` turns it off, even when enabled), else,
once enabled, ``$XDG_CACHE_HOME/unfurl-lite`` or ``~/.cache/unfurl-lite``; files are
private to the user (an ensemble may hold secrets in its inputs) and the oldest are pruned beyond
:data:`KEEP`. A directory or entry that someone else owns, that others may write, that is a
symlink, unreadable or corrupt is ignored (a foreign entry could otherwise decide what a
job runs). Anything going wrong here only costs a parse: it is never an error.
"""

from __future__ import annotations

import marshal
import os
import stat
from functools import lru_cache
from pathlib import Path

from unfurl_lite.load import pycache, schemacheck
from unfurl_lite.model.narrow import YAMLValue, is_map

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:  # CPython's own SHA-256: importing hashlib starts OpenSSL, a few ms of every command
    from _sha256 import sha256
except ImportError:  # another interpreter, or Python 3.12+ (_sha2)
    from hashlib import sha256

#: bytes from which a digest is OpenSSL's: CPython's own SHA-256 takes about 5 ms a MB
#: where OpenSSL's takes under 1, and starting OpenSSL costs about 5 ms once
LARGE = 1 << 20


def large_digest(data: bytes) -> bytes:
    """SHA-256 of ``data``, by OpenSSL when the data is large enough to repay its start
    (a 5 MB ensemble: 27 ms by CPython's, 4 ms by OpenSSL's)."""
    if len(data) < LARGE:
        return sha256(data).digest()
    import hashlib  # start-up: OpenSSL only for a large text, where it repays its start

    return hashlib.sha256(data).digest()

ENV = "UNFURL_LITE_CACHE"
KEEP = 64  # entries; one per version of each ensemble recently loaded
SLACK = 16  # entries beyond KEEP before the oldest are removed
_enabled = False


def enable(on: bool = True) -> None:
    """Use the default cache directory (the ``unfurl`` command does; a library caller may)."""
    global _enabled
    _enabled = on


def directory() -> Path | None:
    configured = os.environ.get(ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "no") else Path(configured)
    if not _enabled:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "unfurl-lite"


#: the packages whose code decides what a cached entry holds (what is valid, and how)
VALIDATING = ("load", "expressions", "model", "security")


def code_stamp(package: Path, folders: tuple[str, ...] = VALIDATING) -> bytes:
    """The size and mtime of every module that decides what is valid: a checkout moved to
    another commit (the same version) never reuses an entry the old code validated."""
    stamps = []
    for folder in folders:  # (os.scandir: a third of pathlib's glob and stat, at each start)
        with os.scandir(os.path.join(package, folder)) as entries:
            for entry in entries:
                if entry.name.endswith(".py"):
                    info = entry.stat()
                    stamps.append(f"{folder}/{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    return sha256("\n".join(sorted(stamps)).encode()).digest()


@lru_cache(maxsize=1)
def _salt() -> bytes:
    # start-up: __version__ reads the package's metadata when first asked
    from unfurl_lite import __version__

    schema = schemacheck.SCHEMA.read_bytes()
    return (__version__.encode() + b"\0" + sha256(schema).digest()
            + code_stamp(_package()))


@lru_cache(maxsize=4)
def _stamp(folders: tuple[str, ...]) -> bytes:
    return code_stamp(_package(), folders)


def _package() -> Path:
    return Path(__file__).resolve().parent.parent


def key_for(file: Path, text: str, *more: bytes, code: tuple[str, ...] = ()) -> bytes:
    """A key for something else decided from exactly this text at this path (see
    :mod:`~unfurl_lite.plan.verdicts`): what the parse cache's own key covers, ``more``,
    and the modules of ``code``'s packages, whose change must miss."""
    parts = [_salt(), _stamp(code), _identity(file, text), *more]
    return sha256(b"\0".join(parts)).digest()


def _entry(root: Path, file: Path, text: str) -> Path:
    digest = sha256(_salt() + _identity(file, text)).hexdigest()
    return root / f"{digest}.marshal"


def _identity(file: Path, text: str) -> bytes:
    return os.fsencode(str(file)) + b"\0" + _text_digest(text)


#: the last text digested and its digest: a load asks for it up to three times (the
#: entry's name and key on a miss, then again to store), 0.1 s each for a 7 MB ensemble
_last_digest: list[tuple[str, bytes]] = []


def _text_digest(text: str) -> bytes:
    if _last_digest and (_last_digest[0][0] is text or _last_digest[0][0] == text):
        return _last_digest[0][1]  # (the same text read twice: compared, not digested)
    digest = large_digest(text.encode("utf-8", "surrogatepass"))
    _last_digest[:] = [(text, digest)]
    return digest


def _owned_privately(info: os.stat_result) -> bool:
    """Ours alone: owned by this user, writable by nobody else."""
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _usable_directory(root: Path) -> bool:
    try:
        info = os.lstat(root)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _owned_privately(info)


def _read_entry(path: Path) -> bytes | None:
    """The entry's bytes, unless it is not a regular file of ours (a symlink, another
    user's, readable or writable by others)."""
    return pycache.read_if(path, lambda info: stat.S_ISREG(info.st_mode)
                           and _owned_privately(info) and not info.st_mode & 0o077
                           and bool(info.st_mode & stat.S_IRUSR))


def get(file: Path, text: str) -> Any:
    """The entry stored for exactly this text at this path (see :func:`put`), or None,
    also when a file it was merged from has changed since or the entry is not to be
    trusted."""
    root = directory()
    if root is None or not _usable_directory(root):
        return None
    payload = _read_entry(_entry(root, file, text))
    if payload is None:
        return None
    try:
        entry = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):  # what marshal raises on a damaged entry
        return None
    if (not is_map(entry) or "data" not in entry
            or entry.get("key") != _identity(file, text)):
        return None
    deps: YAMLValue = entry.get("deps") or {}
    if not is_map(deps):
        return None
    project = file.parent
    for name, digest in deps.items():
        if not isinstance(name, str) or not Path(name).is_relative_to(project):
            return None
        if file_digest(Path(name)) != digest:
            return None
    return entry


def stored(name: str) -> bytes | None:
    """The bytes of the cache's entry ``name``, None when there is none or it is not to be
    trusted (see :func:`get`)."""
    root = directory()
    if root is None or not _usable_directory(root):
        return None
    return _read_entry(root / name)


def text_digest(text: str) -> str:
    """SHA-256 of a file's text as read (UTF-8, so it equals :func:`file_digest`)."""
    return large_digest(text.encode("utf-8", "surrogatepass")).hex()


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it is not a readable file."""
    try:
        return large_digest(path.read_bytes()).hex()
    except OSError:
        return None


def put(file: Path, text: str, data: Any, deps: dict[str, str | None] | None = None,
        raw: Any = None) -> None:
    """Remember ``data`` as what ``text`` at ``file`` (resolved) validates to, given the
    files it was merged from
    (``deps``: path -> SHA-256, None for absent) and, when merge directives made them
    differ, the text's own ``raw`` data. Silently skipped when it cannot be stored."""
    root = directory()
    if root is None:
        return
    try:
        entry = {"key": _identity(file, text), "data": data, "deps": deps or {}, "raw": raw}
        payload = marshal.dumps(entry)  # ValueError for dates and other non-plain values
    except ValueError:
        return
    store(_entry(root, file, text).name, payload)


def store(name: str, payload: bytes) -> None:
    """Keep ``payload`` as the entry ``name`` (private to the user, replaced whole);
    silently skipped when it cannot be stored."""
    # start-up: keeps load.yamlio (13 modules) off parsecache's import until store() runs
    from unfurl_lite.load.yamlio import temp_file

    root = directory()
    if root is None:
        return
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _usable_directory(root):
            return
        fd, tmp = temp_file(root, ".entry.")  # mode 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, root / name)
        _prune(root)
    except OSError:
        return


def _prune(root: Path) -> None:
    """Down to the newest :data:`KEEP` entries once there are :data:`SLACK` more: a store
    lists the directory, and reads the entries' times only then (a job stores two or
    three entries: their 64 ``stat`` calls and an ``unlink`` each were a job's every time)."""
    with os.scandir(root) as found:
        names = [entry.name for entry in found if entry.name.endswith(".marshal")]
    if len(names) <= KEEP + SLACK:
        return
    entries = sorted((root / name for name in names), key=_mtime, reverse=True)
    for stale in entries[KEEP:]:
        stale.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
