"""Temp files that killed processes left behind (and a journal's events file its journal
already holds: :func:`journal_format.stale_events`).

Every write is atomic: a temp file beside the target, then a rename. A process killed
with ``kill -9`` between the two leaves the temp file (``.ensemble.yaml.<pid>-….tmp``,
``jobs/.journal….tmp``, ``.unfurl-lite.lock.….tmp``). Its name holds its writer's pid, so
the next command removes those whose writer is gone, and never one still being written.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from unfurl_lite.load.yamlio import temp_file_owner
from unfurl_lite.record.journal_format import stale_events
from unfurl_lite.record.liveness import pid_alive


def sweep(directories: Iterable[Path]) -> list[Path]:
    """Remove the temp files of dead writers in ``directories``; the paths removed."""
    removed: list[Path] = []
    for directory in dict.fromkeys(directories):
        try:
            names = os.listdir(directory)
        except OSError:  # missing, not a directory, unreadable: nothing of ours to sweep
            continue
        for name in names:
            if name.endswith(".events") and stale_events(directory / name):
                with contextlib.suppress(OSError):
                    (directory / name).unlink()
                    removed.append(directory / name)
                continue
            owner = temp_file_owner(name)
            if owner is None or owner == os.getpid() or pid_alive(owner):
                continue
            path = directory / name
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed


def project_directories(project_root: Path, jobs_tsv: Path | None = None) -> list[Path]:
    """Where a job writes atomically: the ensemble's directory, jobs/, changes/ and the
    jobs log's directory."""
    # start-up: keeps record.records off tempfiles's import until project_directories() runs
    from unfurl_lite.record.records import CHANGES_DIR, JOBS_DIR

    found = [project_root, project_root / JOBS_DIR, project_root / CHANGES_DIR]
    if jobs_tsv is not None:
        found.append(jobs_tsv.parent)
    return found
