"""The journal's file format: a YAML document whose values are JSON, plus appended events.

Each top-level key sits on one line as ``key: <JSON>`` (JSON is valid YAML flow style, so
any YAML reader still reads the file), and the last key, ``events``, is a block sequence
that grows by one ``- <JSON>`` line per task transition. Appending a line is O(1), and
JSON is two orders of magnitude faster to write and read than ruamel's round trip. A
line torn by a crash mid-write is ignored by the reader, so the journal is always exact
up to the last complete transition.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unfurl_lite import yamlio

EVENTS = "events"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def write_journal(path: Path, data: dict[str, Any]) -> None:
    """The whole journal, atomically; ``events`` starts empty."""
    lines = [f"{key}: {_json(value)}" for key, value in data.items() if key != EVENTS]
    lines.append(f"{EVENTS}:")
    yamlio.atomic_write(path, "\n".join(lines) + "\n")


def append_event(path: Path, event: dict[str, Any]) -> None:
    yamlio.atomic_append(path, f"- {_json(event)}\n")


def fold(data: dict[str, Any], event: dict[str, Any]) -> None:
    """Apply one event to the journal's data: later records replace earlier ones."""
    task = event.get("task")
    if isinstance(task, dict):
        tasks = data.setdefault("tasks", [])
        for index, known in enumerate(tasks):
            if known.get("number") == task.get("number"):
                tasks[index] = task
                break
        else:
            tasks.append(task)
    instances = event.get("instances")
    if isinstance(instances, dict):
        data.setdefault("instances", {}).update(instances)
    for key, value in event.items():
        if key not in ("task", "instances"):
            data[key] = value


def read_journal(path: Path) -> dict[str, Any] | None:
    """The journal's data with every complete event folded in; None if the file is not
    in this format (an older journal, written whole as block YAML)."""
    text = path.read_text(encoding="utf-8")
    data: dict[str, Any] = {}
    lines = text.split("\n")
    complete = lines[:-1]  # the part after the last newline is torn or empty
    in_events = False
    events: list[dict[str, Any]] = []
    for line in complete:
        if in_events:
            if not line.startswith("- "):
                return None
            try:
                events.append(json.loads(line[2:]))
            except ValueError:
                break  # torn by a crash: nothing after it was written either
            continue
        if line == f"{EVENTS}:":
            in_events = True
            continue
        key, sep, value = line.partition(": ")
        if not sep or not key.isidentifier():
            return None
        try:
            data[key] = json.loads(value)
        except ValueError:
            return None
    if not in_events:
        return None
    tasks = data.get("tasks") or []
    data["tasks"] = tasks
    by_number = {t.get("number"): i for i, t in enumerate(tasks)}
    for event in events:
        task = event.get("task")
        if isinstance(task, dict) and task.get("number") in by_number:
            tasks[by_number[task["number"]]] = task
            event = {k: v for k, v in event.items() if k != "task"}
        fold(data, event)
    return data
