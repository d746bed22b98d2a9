"""The tasks earlier jobs ran, as structured records: each job's ``jobs/job<time>-<id>.yaml``
read field by field (target, operation, reason, digest, outcome).

Planning needs to know what an operation last ran with (deploy's reconfigure, update,
drift); the summary text in jobs.tsv is for people, so nothing here reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unfurl_lite.errors import UnfurlLiteError

log = logging.getLogger(__name__)

JOBS_DIR = "jobs"


@dataclass(frozen=True)
class TaskRecord:
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
    changes = data.get("changes") if isinstance(data, Mapping) else None
    if not isinstance(changes, list) or not changes or not isinstance(changes[0], Mapping):
        return
    workflow = _text(changes[0].get("workflow"))
    for entry in changes[1:]:
        if not isinstance(entry, Mapping) or "target" not in entry:
            continue
        implementation = entry.get("implementation")
        operation = implementation.get("operation") if isinstance(implementation, Mapping) else None
        interface = entry.get("interface")
        yield TaskRecord(
            change_id=_text(entry.get("changeId")),
            target=_text(entry.get("target")),
            operation=_text(operation),
            interface=str(interface) if interface else None,
            reason=_text(entry.get("reason")),
            class_name=_text(implementation.get("className"))
            if isinstance(implementation, Mapping) else "",
            digest_value=_text(entry.get("digestValue")),
            succeeded=entry.get("state") == "succeeded",
            workflow=workflow,
        )


def task_records(project_root: Path) -> list[TaskRecord]:
    """Every recorded task of every job, oldest first (by changeId). A job file that cannot
    be read is skipped with a warning: it takes no part, as a damaged jobs.tsv line."""
    from ruamel.yaml import YAMLError

    from unfurl_lite.load import yamlio

    found: list[TaskRecord] = []
    directory = project_root / JOBS_DIR
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("job*.yaml")):
        try:
            data = yamlio.parse_plain(yamlio.read_text(path))
        except (UnfurlLiteError, YAMLError, ValueError, OSError) as exc:
            log.warning("warning: %s: job record skipped: %s", path, type(exc).__name__)
            continue
        found.extend(_records(data))
    found.sort(key=lambda r: r.change_id)
    return found
