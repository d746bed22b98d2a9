"""Keeping file access inside the project directory.

Ensembles come from repositories other people write, and git stores symlinks, so a
path is judged only after every symlink in it is resolved: ``..``, absolute paths and
links pointing out of the project are all refused the same way.
"""

from __future__ import annotations

import os
import stat
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


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_regular_file(path: Path, limit: int, what: str = "file") -> bytes:
    """A regular file's bytes, at most ``limit`` of them: anything else (a FIFO that would
    block, a device that never ends, a directory) is refused before it is opened, and the
    size is taken from ``stat`` before a byte is read (a 2 GB sparse file is refused at
    once, not after reading it)."""
    try:
        before = os.stat(path)
        _regular(before, path, what)
        if before.st_size > limit:
            raise PathError(f"{what}: {str(path)!r} is larger than {limit} bytes "
                            f"({before.st_size} bytes)")
        # O_NONBLOCK: were it swapped for a FIFO since the stat, opening must not hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise PathError(f"{what}: {str(path)!r} cannot be read: {exc.strerror}") from None
    try:
        _regular(os.fstat(fd), path, what)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise PathError(f"{what}: {str(path)!r} cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > limit:  # it grew after the stat
        raise PathError(f"{what}: {str(path)!r} is larger than {limit} bytes")
    return b"".join(chunks)


def _regular(info: os.stat_result, path: Path, what: str) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
    raise PathError(f"{what}: {str(path)!r} is {kind}, not a regular file",
                    hint="only regular files inside the project can be read")


def _lexical(path: Path) -> Path:
    return Path(os.path.normpath(path))


#: path components no include, import, record or ``file()`` ever reaches: git's own
#: directory and credential stores (after following symlinks), even outside the project
PROTECTED = frozenset({
    ".git", ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
    "gcloud", ".git-credentials", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass",
    ".vault-token", ".boto", ".s3cfg", ".terraformrc", "credentials.tfrc.json",
})


PROTECTED_WHY = "git's own directory and credential stores are never read or written"
PROTECTED_HINT = "keep the file elsewhere in the project and name that path"


def protected_part(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
                   ) -> str | None:
    """The first component of ``path`` that is git's directory or a credential store (of
    its part below ``root`` when it lies there, so a project kept under, say, a ``.kube``
    folder still works), or None."""
    candidate = Path(path)
    if root is not None and candidate.is_absolute() and candidate.is_relative_to(root):
        candidate = candidate.relative_to(root)
    return next((part for part in candidate.parts if part in PROTECTED), None)


def jobs_log_path(
    root: str | os.PathLike[str], value: object, allow_outside: bool = False,
    writing: bool = True,
) -> Path:
    """Where an ensemble's ``jobsLog:`` leads: the one resolution of it, for jobs and
    readers alike. Confined like every other path; never inside git's directory or a
    credential store (``jobsLog: .git/config`` would corrupt git's configuration,
    ``.git/hooks/post-commit`` would write a hook), even with ``allow_outside``; for
    ``writing``, never a directory (readers warn about one and read nothing)."""
    if value is None:
        value = "jobs.tsv"
    if not isinstance(value, str) or not value.strip():
        raise PathError(f"jobsLog {value!r} is not a file name",
                        hint="write a path inside the project, such as jobsLog: jobs.tsv")
    base = Path(root).resolve()
    lexical = protected_part(value)
    path = confine(value, base, allow_outside, "jobsLog")
    store = lexical or protected_part(path, base)
    if store is not None:
        raise PathError(
            f"jobsLog {value!r} is inside {store}: the job log is never written into git's "
            "own directory or a credential store",
            hint="write a path inside the project, such as jobsLog: jobs.tsv")
    if writing and path.is_dir():
        raise PathError(f"jobsLog {value!r} is a directory, not a file",
                        hint="name a file (jobsLog: jobs.tsv), or remove the directory")
    return path


def confine_records(
    root: str | os.PathLike[str], jobs_log: str, allow_outside: bool = False
) -> None:
    """Refuse a job whose records would land outside the project: a hostile ``jobsLog:
    ../../x`` or a committed ``jobs`` symlink pointing elsewhere."""
    jobs_log_path(root, jobs_log, allow_outside)
    base = Path(root).resolve()
    for name, what in (("jobs", "the jobs folder"), ("changes", "the changes folder")):
        path = confine(name, base, allow_outside, what)
        store = protected_part(path, base)
        if store is not None:
            raise PathError(f"{what} leads into {store} (through a symlink)",
                            hint=f"remove the symlink {base / name}")
