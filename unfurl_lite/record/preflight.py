"""Everything that could stop a job's record, decided before its first operation runs.

An operation that ran and could not be recorded is the worst outcome a deployment tool
has: the next deploy runs it again, and undeploy does not know what it created. So before
the first task: the records' paths are confined (``security.paths``), the writer of
ensemble.yaml is chosen (``statusfile.preflight``), and each file and directory the job
will write is tried for writing. The lock and git's index.lock are taken and checked by
the caller before this. A failure here runs nothing.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from unfurl_lite.errors import storage_error
from unfurl_lite.load.yamlio import temp_file
from unfurl_lite.record import records, statusfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.load.loader import Ensemble


def check(ensemble: Ensemble) -> None:
    """Raise (an ``UnfurlLiteError``) if the job's records could not be written."""
    statusfile.preflight(ensemble)
    root = ensemble.project_root
    try:
        for directory in (root, root / records.JOBS_DIR, root / records.CHANGES_DIR,
                          ensemble.jobs_tsv.parent):
            _directory_writable(directory)
        _file_writable(ensemble.path, replaced=True)
        if not ensemble.inline_log:
            _file_writable(ensemble.jobs_tsv, replaced=False)
    except OSError as exc:
        raise storage_error(exc, "nothing was run") from None


def _directory_writable(directory: Path) -> None:
    """A file can be created (and removed) in ``directory``, or in the nearest existing
    folder above it, where the job will create it."""
    while not directory.exists():
        directory = directory.parent
    if not directory.is_dir():
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory))
    fd, name = temp_file(directory, ".unfurl-lite-preflight.")
    os.close(fd)
    os.unlink(name)


def _file_writable(path: Path, replaced: bool) -> None:
    """``path`` can be appended to, or (``replaced``) replaced by a rename. A mode without
    write permission does not stop a rename; an immutable flag or a read-only mount does,
    and opening for writing tells them apart (EPERM, EROFS) from a mode (EACCES)."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        return
    except PermissionError as exc:
        if replaced and exc.errno == errno.EACCES:
            return
        raise
    os.close(fd)
