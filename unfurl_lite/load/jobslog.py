"""Reading jobs.tsv, the log of every job and task (Unfurl's ``jobsLog``): one record per
line, ``changeId`` then ``key=value`` fields. Planning and history read it; the record
package writes it (with :func:`escape_field`, so no value can start a line).

An ensemble with a ``changes:`` list and no ``jobsLog`` keeps its log inline, as Unfurl
does then: one entry per task, no job lines. :func:`inline_records` reads those entries in
jobs.tsv's shape (with a job line made for each job), so every reader works on either.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.load import yamlio
from unfurl_lite.model.narrow import YAMLValue, is_map
from unfurl_lite.security.characters import is_control

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

#: characters a jobs.tsv field may not hold raw: they would start a line, end a cell, or
#: reach a terminal as a control sequence
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_ESCAPED = re.compile(r"\\(\\|t|n|r|x[0-9a-f]{2}|u[0-9a-f]{4})")
log = logging.getLogger(__name__)


def escape_field(text: str) -> str:
    """A field as jobs.tsv holds it: backslash, tab, line breaks and every other control
    character escaped (``\\t``, ``\\n``, ``\\x1b``), so no value can start a record; a
    lone surrogate (not text, so not UTF-8) too (``\\ud800``)."""
    if text.isprintable() and "\\" not in text:
        return text
    out: list[str] = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif is_control(char) or "\ud800" <= char <= "\udfff":  # or not text at all
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def unescape_field(text: str) -> str:
    """Undo ``\\\\`` only: escaped control characters stay visible text, so what a reader
    shows can never move a terminal's cursor or forge a line."""
    if "\\" not in text:
        return text
    return _ESCAPED.sub(lambda m: "\\" if m.group(1) == "\\" else m.group(0), text)


def parse_tsv_line(line: str) -> dict[str, str]:
    cells = line.rstrip("\n").split("\t")
    record = {"changeId": cells[0]}
    for cell in cells[1:]:
        key, _, value = cell.partition("=")
        record[key] = unescape_field(value)
    return record


@dataclass(frozen=True)
class DamagedLine:
    """A line of a record that could not be read, kept to say where and why."""
    path: Path
    number: int  # 1-based
    why: str

    def format(self) -> str:
        if not self.number:  # the whole file
            return f"{self.path}: {self.why}"
        return f"{self.path}:{self.number}: damaged line skipped: {self.why}"


_reported: set[tuple[str, int, str]] = set()
_CHANGEID = re.compile(r"A[0-9A-Za-z]{7}[0-9a-f]{4}")
_RECORD = re.compile(r"A[0-9A-Za-z]{7}[0-9a-f]{4}(?:\t[^\t=]*=[^\t]*)*")


def _damage(raw: bytes) -> tuple[str | None, str]:
    """(why the line is damaged or None, its text)."""
    if raw == _TOO_LONG:
        return f"longer than {MAX_LINE} bytes", ""
    if not raw.endswith(b"\n"):
        return "incomplete (its write was interrupted)", ""
    try:
        line = raw[:-1].decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte {exc.start + 1} of the line)", ""
    if _RECORD.fullmatch(line):
        return None, line
    first = line.split("\t", 1)[0]
    if not _CHANGEID.fullmatch(first):
        return f"does not start with a changeId: {escape_field(first[:20])!r}", line
    return "a field has no '=' (the line was torn)", line


def read_jobs_tsv(path: Path, damaged: list[DamagedLine] | None = None) -> Iterator[dict[str, str]]:
    """Stream jobs.tsv records. Lines are split on ``\\n`` only (a raw carriage return
    starts no record; one right before the line end is git's ``core.autocrlf`` and is
    dropped); a damaged line (torn by a crash, not UTF-8, not a record) is skipped and
    reported, once per process, as a warning and in ``damaged``. A log that cannot be
    read at all (a directory, no permission) is reported the same way and reads as empty."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the last line
    except FileNotFoundError:
        return
    except OSError as exc:
        reason = "is a directory, not a file" if path.is_dir() else (exc.strerror or str(exc))
        _warn(DamagedLine(path, 0, f"{reason}: no job records read from it"), damaged)
        return
    with handle:
        for number, raw in enumerate(_lines(handle), 1):
            if not raw.strip():
                continue
            if raw.endswith(b"\r\n"):
                raw = raw[:-2] + b"\n"
            why, line = _damage(raw)
            if why is None:
                yield parse_tsv_line(line)
                continue
            _warn(DamagedLine(path, number, why), damaged)


#: a longer line is no record (they are a few hundred bytes): read in bounded memory
MAX_LINE = 1024 * 1024
_TOO_LONG = b"\0too long\n"


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """The file's lines, a line longer than :data:`MAX_LINE` read past in chunks and given
    as ``_TOO_LONG`` (so reading a hostile log never holds more than a chunk)."""
    while raw := handle.readline(MAX_LINE + 1):
        if len(raw) <= MAX_LINE or raw.endswith(b"\n"):
            yield raw
            continue
        while chunk := handle.read(MAX_LINE):  # to the next line, a chunk at a time
            end = chunk.find(b"\n")
            if end >= 0:
                handle.seek(end + 1 - len(chunk), os.SEEK_CUR)
                break
        yield _TOO_LONG


def _warn(found: DamagedLine, damaged: list[DamagedLine] | None) -> None:
    if damaged is not None:
        damaged.append(found)
    key = (str(found.path), found.number, found.why)
    if key not in _reported:
        _reported.add(key)
        log.warning("warning: %s", found.format())


def jobs_log_setting(text: str) -> Any:
    """An ensemble's top-level ``jobsLog:`` value, read without the rest of the spec: from
    its column-0 line when it has one (a column-0 key is top-level), else from the whole
    document (a flow-style top level), as the loader would read it; None when absent."""
    if "jobsLog" not in text:
        return None
    match = re.search(r"^jobsLog[ \t]*:.*$", text, re.MULTILINE)
    for source in ([match.group(0)] if match else []) + [text]:
        try:
            doc = yamlio.parse_plain(source)
        except Exception:  # libyaml refuses some YAML 1.2: the round trip, as the loader
            try:
                doc = yamlio.round_trip().load(source)
            except Exception:  # unreadable here: the loader will say why
                continue
        if is_map(doc):
            return doc.get("jobsLog")
    return None


def last_job_id(path: Path, inline: list[dict[str, Any]] | None = None) -> str | None:
    last = None
    for record in log_records(path, inline):
        if record["changeId"].endswith("0000"):
            last = record["changeId"]
    return last


def log_records(
    jobs_tsv: Path, inline: list[dict[str, Any]] | None = None,
    last_job: Mapping[str, Any] | None = None,
) -> Iterator[dict[str, str]]:
    """The job log's records, oldest first: the inline ``changes:`` entries (when the
    ensemble has them), then jobs.tsv's lines."""
    if inline:
        yield from inline_records(inline, last_job)
    yield from read_jobs_tsv(jobs_tsv)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _task_record(entry: Mapping[str, Any]) -> dict[str, str]:
    implementation: YAMLValue = entry.get("implementation")
    ready: YAMLValue = entry.get("readyState")
    return {
        "changeId": _text(entry.get("changeId")),
        "previousId": _text(entry.get("previousId")),
        "status": _text((ready.get("effective") or ready.get("local"))
                        if isinstance(ready, Mapping) else ""),
        "target": _text(entry.get("target")),
        "operation": _text(implementation.get("operation"))
        if isinstance(implementation, Mapping) else "",
        "digestKeys": _text(entry.get("digestKeys")),
        "digestValue": _text(entry.get("digestValue")),
        "digestPut": _text(entry.get("digestPut")),
        "summary": _text(entry.get("summary")),
    }


def _job_record(job_id: str, tasks: list[dict[str, str]],
                last_job: Mapping[str, Any] | None) -> dict[str, str]:
    """A job line for the tasks of one job: the ensemble's ``lastJob`` when it is that job,
    else what its tasks tell (Unfurl writes no job entries inline)."""
    if last_job and last_job.get("changeId") == job_id:
        ready: YAMLValue = last_job.get("readyState")
        record = {"changeId": job_id}
        if last_job.get("previousId"):
            record["previousId"] = _text(last_job["previousId"])
        record.update(
            status=_text((ready.get("effective") or ready.get("local"))
                         if isinstance(ready, Mapping) else ""),
            startTime=_text(last_job.get("startTime")),
            specDigest=_text(last_job.get("specDigest")),
            startCommit=_text(last_job.get("startCommit")),
            summary=_text(last_job.get("summary")),
        )
        return record
    failed = sum(1 for t in tasks if t["status"] not in ("ok", ""))
    # no summary: history takes it from the job's record in jobs/, when there is one
    return {"changeId": job_id, "status": "error" if failed else "ok", "summary": ""}


def inline_records(
    changes: list[dict[str, Any]], last_job: Mapping[str, Any] | None = None
) -> Iterator[dict[str, str]]:
    """jobs.tsv-shaped records of an inline ``changes:`` log, a job line before each job's
    tasks. An entry that is not a task with a changeId is skipped."""
    jobs: dict[str, list[dict[str, str]]] = {}
    for entry in changes:
        if not isinstance(entry, Mapping):
            continue
        cid = _text(entry.get("changeId"))
        if not _CHANGEID.fullmatch(cid) or cid.endswith("0000"):
            continue
        jobs.setdefault(cid[:8] + "0000", []).append(_task_record(entry))
    for job_id in sorted(jobs):
        yield _job_record(job_id, jobs[job_id], last_job)
        yield from jobs[job_id]
