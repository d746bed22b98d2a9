"""Validated ensembles remembered by the digest of their text, like Python's .pyc files.

Parsing and validating a 10 000-node ensemble costs seconds even with a C parser; loading
the same data back with ``marshal`` costs milliseconds. The key is the SHA-256 of the text
together with this package's version and the JSON schema, so any edit (or an upgrade)
misses and the ensemble is parsed and validated again: a hit can only return data that
passed validation for exactly these bytes. A job that writes an ensemble stores the data it
wrote, so the next command on it starts warm.

The cache lives in ``$UNFURL_LITE_CACHE`` (``off`` turns it off), else
``$XDG_CACHE_HOME/unfurl-lite`` or ``~/.cache/unfurl-lite``; files are private to the user
(an ensemble may hold secrets in its inputs) and the oldest are pruned beyond
:data:`KEEP`. Anything going wrong here only costs a parse: it is never an error.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

ENV = "UNFURL_LITE_CACHE"
KEEP = 64  # entries; one per version of each ensemble recently loaded


def directory() -> Path | None:
    configured = os.environ.get(ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "no") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "unfurl-lite"


@lru_cache(maxsize=1)
def _salt() -> bytes:
    from unfurl_lite import __version__

    schema = resources.files("unfurl_lite").joinpath("schema/ensemble.schema.json").read_bytes()
    return __version__.encode() + b"\0" + hashlib.sha256(schema).digest()


def _entry(root: Path, text: str) -> Path:
    digest = hashlib.sha256(_salt() + text.encode("utf-8", "surrogatepass")).hexdigest()
    return root / f"{digest}.marshal"


def get(text: str) -> Any:
    """The entry stored for exactly this text (see :func:`put`), or None, also when a file
    it was merged from has changed since."""
    root = directory()
    if root is None:
        return None
    try:
        entry = marshal.loads(_entry(root, text).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(entry, dict) or "data" not in entry:
        return None
    deps = entry.get("deps") or {}
    if any(file_digest(Path(name)) != digest for name, digest in deps.items()):
        return None
    return entry


def text_digest(text: str) -> str:
    """SHA-256 of a file's text as read (UTF-8, so it equals :func:`file_digest`)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it is not a readable file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def put(text: str, data: Any, deps: dict[str, str | None] | None = None,
        raw: Any = None) -> None:
    """Remember ``data`` as what ``text`` validates to, given the files it was merged from
    (``deps``: path -> SHA-256, None for absent) and, when merge directives made them
    differ, the text's own ``raw`` data. Silently skipped when it cannot be stored."""
    from unfurl_lite.yamlio import temp_file

    root = directory()
    if root is None:
        return
    try:
        entry = {"data": data, "deps": deps or {}, "raw": raw}
        payload = marshal.dumps(entry)  # ValueError for dates and other non-plain values
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = temp_file(root, ".entry.")  # mode 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, _entry(root, text))
        _prune(root)
    except (OSError, ValueError):
        return


def _prune(root: Path) -> None:
    entries = sorted(root.glob("*.marshal"), key=_mtime, reverse=True)
    for stale in entries[KEEP:]:
        stale.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
