"""Reading jobs.tsv, the log of every job and task (Unfurl's ``jobsLog``): one record per
line, ``changeId`` then ``key=value`` fields. Planning and history read it; the record
package writes it (with :func:`escape_field`, so no value can start a line).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.security.names import is_control

#: characters a jobs.tsv field may not hold raw: they would start a line, end a cell, or
#: reach a terminal as a control sequence
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_ESCAPED = re.compile(r"\\(\\|t|n|r|x[0-9a-f]{2}|u[0-9a-f]{4})")
log = logging.getLogger(__name__)


def escape_field(text: str) -> str:
    """A field as jobs.tsv holds it: backslash, tab, line breaks and every other control
    character escaped (``\\t``, ``\\n``, ``\\x1b``), so no value can start a record."""
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif is_control(char):
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
    path: Path
    number: int  # 1-based
    why: str

    def format(self) -> str:
        return f"{self.path}:{self.number}: damaged line skipped: {self.why}"


_reported: set[tuple[str, int, str]] = set()
_CHANGEID = re.compile(r"A[0-9A-Za-z]{7}[0-9a-f]{4}")
_RECORD = re.compile(r"A[0-9A-Za-z]{7}[0-9a-f]{4}(?:\t[^\t=]*=[^\t]*)*")


def _damage(raw: bytes) -> tuple[str | None, str]:
    """(why the line is damaged or None, its text)."""
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
    starts no record); a damaged line (torn by a crash, not UTF-8, not a record) is
    skipped and reported, once per process, as a warning and in ``damaged``."""
    if not path.exists():
        return
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            why, line = _damage(raw)
            if why is None:
                yield parse_tsv_line(line)
                continue
            found = DamagedLine(path, number, why)
            if damaged is not None:
                damaged.append(found)
            key = (str(path), number, why)
            if key not in _reported:
                _reported.add(key)
                log.warning("warning: %s", found.format())


def last_job_id(path: Path) -> str | None:
    last = None
    for record in read_jobs_tsv(path):
        if record["changeId"].endswith("0000"):
            last = record["changeId"]
    return last
