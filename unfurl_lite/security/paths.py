"""Keeping file access inside the project directory.

Ensembles come from repositories other people write, and git stores symlinks, so a
path is judged only after every symlink in it is resolved: ``..``, absolute paths and
links pointing out of the project are all refused the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

from unfurl_lite.errors import PathError

ALLOW_HINT = "pass --allow-outside-paths to allow paths outside the project directory"


def confine(
    path: str | os.PathLike[str], root: str | os.PathLike[str], allow_outside: bool = False,
    what: str = "path",
) -> Path:
    """The absolute, symlink-free form of ``path`` (relative to ``root``), if it stays inside.

    ``allow_outside`` is the explicit escape hatch; without it an absolute path, a ``..``
    that climbs out or a symlink that points out raises :class:`PathError`.
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise PathError(f"{what} {text!r} contains a NUL byte")
    base = Path(root).resolve()
    candidate = Path(text)
    joined = candidate if candidate.is_absolute() else base / candidate
    resolved = joined.resolve()
    if allow_outside:
        return resolved
    if candidate.is_absolute() and not resolved.is_relative_to(base):
        raise PathError(f"{what} {text!r} is an absolute path outside the project {base}",
                        hint=ALLOW_HINT)
    if not resolved.is_relative_to(base):
        how = "through a symlink" if _lexical(joined).is_relative_to(base) else "with '..'"
        raise PathError(f"{what} {text!r} escapes the project directory {base} {how}",
                        hint=ALLOW_HINT)
    return resolved


def _lexical(path: Path) -> Path:
    return Path(os.path.normpath(path))


def confine_records(
    root: str | os.PathLike[str], jobs_log: str, allow_outside: bool = False
) -> None:
    """Refuse a job whose records would land outside the project: a hostile ``jobsLog:
    ../../x`` or a committed ``jobs`` symlink pointing elsewhere."""
    for name, what in ((jobs_log, "jobsLog"), ("jobs", "the jobs folder"),
                       ("changes", "the changes folder")):
        confine(name, root, allow_outside, what)
