"""The tasks earlier jobs ran, as structured records: each job's ``jobs/job<time>-<id>.yaml``
read field by field (target, operation, reason, digest, outcome).

Planning needs to know what an operation last ran with (deploy's reconfigure, update,
drift); the summary text in jobs.tsv is for people, so nothing here reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.load import yamlio
from unfurl_lite.model.narrow import is_list, is_mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

log = logging.getLogger(__name__)

JOBS_DIR = "jobs"
#: the fields of a job record planning reads; the rest (inputs, results) is not parsed
FIELDS = frozenset({"changeId", "workflow", "target", "implementation", "reason",
                    "digestValue", "state", "interface"})


@dataclass(frozen=True)
class TaskRecord:
    """One task as an earlier job recorded it, for planning and resume."""
    change_id: str
    target: str  # as recorded: ``::name``, or ``::source::.requirements::[.name=r]``
    operation: str  # the operation's name, as Unfurl records it (``configure``)
    interface: str | None  # None in records written before it was recorded
    reason: str
    class_name: str  # "" for a task that ran no operation (a state change only)
    digest_value: str
    succeeded: bool
    workflow: str

    @property
    def instance(self) -> str | None:
        """The node instance the task ran on; None for a relationship's operation."""
        name = self.target[2:] if self.target.startswith("::") else ""
        return name if name and "::" not in name else None

    @property
    def qualified_name(self) -> str | None:
        return f"{self.interface}.{self.operation}" if self.interface else None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _records(data: Any) -> Iterator[TaskRecord]:
    changes = data.get("changes") if is_mapping(data) else None
    if not is_list(changes) or not changes or not is_mapping(changes[0]):
        return
    workflow = _text(changes[0].get("workflow"))
    for entry in changes[1:]:
        if not is_mapping(entry) or "target" not in entry:
            continue
        implementation = entry.get("implementation")
        operation = implementation.get("operation") if is_mapping(implementation) else None
        interface = entry.get("interface")
        yield TaskRecord(
            change_id=_text(entry.get("changeId")),
            target=_text(entry.get("target")),
            operation=_text(operation),
            interface=str(interface) if interface else None,
            reason=_text(entry.get("reason")),
            class_name=_text(implementation.get("className"))
            if is_mapping(implementation) else "",
            digest_value=_text(entry.get("digestValue")),
            succeeded=entry.get("state") == "succeeded",
            workflow=workflow,
        )


#: first characters that make a YAML scalar something other than its own text
_INDICATORS = frozenset("'\"!&*|>%@`{}[],#?-")


def _scalar(raw: str) -> str | None:
    """The string a one-line scalar holds, or None when it is not that simple: a plain
    scalar (its text), or a single-quoted one. The writer quotes any string YAML would
    read as something else (``'true'``, ``'0123'``), so plain text is always a string."""
    value = raw.strip(" \t")  # YAML trims spaces and tabs only (not NBSP)
    if not value:
        return None
    if value[0] == "'":
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != "'" or "'" in inner.replace("''", ""):
            return None
        return inner.replace("''", "'")
    if value[0] in _INDICATORS or " #" in value or ": " in value or value.endswith(":"):
        return None
    return value


def _scan(text: str) -> dict[str, Any] | None:
    """:data:`FIELDS` of each entry read line by line: a job's inputs and outputs are most
    of its file and nearly all the time a YAML parser would take. The record package
    writes block YAML (entries at column 0, their keys at column 2, ``implementation``'s at
    column 4); anything not that plain (a multi-line or double-quoted value, another
    layout) gives None, and the caller parses the whole file as YAML instead."""
    entries: list[dict[str, Any]] = []
    entry: dict[str, Any] | None = None
    key: str | None = None
    for line in text.splitlines():
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if not body:
            continue
        if indent == 0 and body.startswith("- "):
            entry = {}
            entries.append(entry)
            body, indent = body[2:], 2
        elif indent == 0:
            if body != "changes:" and not body.startswith("manifest: "):
                return None
            entry, key = None, None
            continue
        if entry is None:
            continue
        if indent == 2:
            name, colon, raw = body.partition(":")
            if not colon:
                return None
            key = name if name in FIELDS else None
            if key == "implementation":
                if raw.strip():
                    return None
                entry[key] = {}
            elif key is not None:
                value = _scalar(raw)
                if value is None:
                    return None
                entry[key] = value
        elif key == "implementation" and indent == 4:
            name, colon, raw = body.partition(":")
            value = _scalar(raw)
            if not colon or value is None:
                return None
            entry[key][name] = value
        elif key is not None:  # a wanted value goes on over more lines
            return None
    return {"changes": entries}


def _parse(text: str) -> Any:
    scanned = _scan(text)
    return scanned if scanned is not None else yamlio.parse_plain(text)


def task_records(project_root: Path) -> list[TaskRecord]:
    """Every recorded task of every job, oldest first (by changeId). A job file that cannot
    be read is skipped with a warning: it takes no part, as a damaged jobs.tsv line."""
    from ruamel.yaml import YAMLError  # start-up: keeps ruamel off taskrecords's import

    found: list[TaskRecord] = []
    directory = project_root / JOBS_DIR
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("job*.yaml")):
        try:
            data = _parse(yamlio.read_text(path))
        except (UnfurlLiteError, YAMLError, ValueError, OSError) as exc:
            log.warning("warning: %s: job record skipped: %s", path, type(exc).__name__)
            continue
        found.extend(_records(data))
    found.sort(key=lambda r: r.change_id)
    return found
