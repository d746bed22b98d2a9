"""What the history page shows of each job beyond jobs.tsv, read from the heads of its
files only: how long it took (its job file's ``startTime``/``endTime``), the command that
ran it and the job it resumed (its journal's first lines).

A journal's first lines are ``key: <JSON>`` each (see record/journal_format.py) and a job
file starts with the job's own entry, so a page of many jobs reads a few lines of each
file, never their tasks.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: the journal keys read, all before its first large value (startInstances)
JOURNAL_HEAD = ("changeId", "resumes", "workflow", "planOptions", "jobOptions", "state")
_TIME = re.compile(r"^\s*(startTime|endTime):\s*['\"]?([\d-]+)", re.MULTILINE)


def journal_head(path: Path) -> dict[str, Any]:
    """The JOURNAL_HEAD keys of one journal (those it has)."""
    found: dict[str, Any] = {}
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle):
                key, sep, value = line.rstrip("\n").partition(": ")
                if key in JOURNAL_HEAD and sep:
                    found[key] = json.loads(value)
                if len(found) == len(JOURNAL_HEAD) or number > 12:
                    break
    except (OSError, ValueError, UnicodeDecodeError):
        pass  # a journal written whole as block YAML (older) or damaged: no head
    return found


def journal_heads(root: Path) -> dict[str, dict[str, Any]]:
    """changeId -> the head of its journal, for every journal under ``jobs/``."""
    # start-up: keeps record.journal (81 modules) off heads's import until journal_heads() runs
    from unfurl_lite.record.journal import PREFIX
    from unfurl_lite.record.records import JOBS_DIR

    heads: dict[str, dict[str, Any]] = {}
    for path in sorted((root / JOBS_DIR).glob(f"{PREFIX}*.yaml")):
        head = journal_head(path)
        if head.get("changeId"):
            heads[str(head["changeId"])] = head
    return heads


def resumers(heads: dict[str, dict[str, Any]]) -> dict[str, str]:
    """changeId of each job another resumed -> the job that resumed it (the newest, when
    it was resumed more than once)."""
    found: dict[str, str] = {}
    for change_id in sorted(heads):
        resumed = heads[change_id].get("resumes")
        if resumed:
            found[str(resumed)] = change_id
    return found


def record_time(text: str) -> datetime | None:
    """A job record's time (``2026-11-23-01-50-20-338000``), in UTC."""
    try:
        return datetime.strptime(text, "%Y-%m-%d-%H-%M-%S-%f").replace(tzinfo=UTC)
    except ValueError:
        return None


def duration_of(job_file: Path | None) -> float | None:
    """Seconds from the job's start to its end, from the head of its job file."""
    if job_file is None:
        return None
    try:
        with job_file.open(encoding="utf-8") as handle:
            head = handle.read(2048)
    except (OSError, UnicodeDecodeError):
        return None
    times = dict(_TIME.findall(head))
    start, end = record_time(times.get("startTime", "")), record_time(times.get("endTime", ""))
    return (end - start).total_seconds() if start and end else None
