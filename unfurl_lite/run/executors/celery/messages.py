"""A task's message as Celery sends it through kombu's Redis transport: one JSON document
on the list named after its queue, with the task's arguments in a base64 body (Celery's
message protocol 2, JSON serializer).

The controller writes it with one ``LPUSH`` and the worker's own consumer reads it with
``BRPOP`` (consumer.py), instead of kombu's producer and Celery's consumer: the same
bytes, a fraction of the work. Any Celery worker serving the queue (``celery -A
unfurl_lite.run.executors.celery worker``, any pool) reads them as its own.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import uuid
from typing import TYPE_CHECKING, Any

from unfurl_lite.run.executors.celery.application import REDACTED_ARGS, TASK_NAME

if TYPE_CHECKING:
    from unfurl_lite.model.narrow import YAMLValue

#: what Celery puts in a message's embed when the task has no callbacks or chain
_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def task_message(celery_id: str, queue: str, payload: dict[str, Any]) -> str:
    """The message that runs ``TASK_NAME(payload)`` on a worker of ``queue``."""
    body = json.dumps([[payload], {}, _EMBED]).encode()
    return json.dumps({
        "body": base64.b64encode(body).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py", "task": TASK_NAME, "id": celery_id, "shadow": None, "eta": None,
            "expires": None, "group": None, "group_index": None, "retries": 0,
            "timelimit": [None, None], "root_id": celery_id, "parent_id": None,
            "argsrepr": REDACTED_ARGS, "kwargsrepr": "{}", "origin": _origin(),
            "ignore_result": False, "replaced_task_nesting": 0, "stamped_headers": None,
            "stamps": {},
        },
        "properties": {
            "correlation_id": celery_id, "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue}, "priority": 0,
            "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
        },
    })


def publish(client: Any, queue: str, celery_id: str, payload: dict[str, Any]) -> None:
    """Queue the task's message (kombu's Redis transport: ``LPUSH`` on the queue's list,
    taken from the other end)."""
    client.lpush(queue, task_message(celery_id, queue, payload))


def parse(raw: bytes | str) -> tuple[str, str, list[YAMLValue]]:
    """(task id, task name, positional arguments) of a message on a queue's list."""
    message = json.loads(raw)
    headers: dict[str, Any] = message.get("headers") or {}
    body: Any = message.get("body") or ""
    properties: dict[str, Any] = message.get("properties") or {}
    if properties.get("body_encoding") == "base64":
        body = base64.b64decode(body)
    decoded: YAMLValue = json.loads(body)
    args: list[Any] = decoded[0] if isinstance(decoded, list) and decoded else []
    return str(headers.get("id") or ""), str(headers.get("task") or ""), list(args or [])


def _origin() -> str:
    """Celery's ``gen<pid>@<host>``: who sent it (``celery inspect`` shows it)."""
    return f"gen{os.getpid()}@{socket.gethostname()}"
