"""The Celery app shared by the controller and its workers, and what both must agree on:
the protocol, the task's name, the Redis keys, the timings, where the broker is.

Nothing here runs at import time: :func:`make_app` builds an app when one is needed (the
controller when a job starts, ``unfurl worker`` when it starts, ``celery -A`` on first use
of ``unfurl_lite.run.executors.celery.app``).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from unfurl_lite.errors import JobError
from unfurl_lite.run.routing import DEFAULT_QUEUE
from unfurl_lite.security.redaction import REDACTED, redact_text

if TYPE_CHECKING:
    from celery import Celery

#: bumped whenever the task message or the reply changes shape; a controller never sends
#: to a worker speaking another one
PROTOCOL = 2
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
TASK_NAME = "unfurl_lite.run_operation"
PREFIX = "unfurl-lite:"
SUPERSEDED_KEY = PREFIX + "superseded:"  # + Celery id: the controller gave up on it
ENDED_KEY = PREFIX + "ended:"  # + job key: the job has ended
LEASE_KEY = PREFIX + "lease:"  # + job key + changeId: held by the run in progress
WORKER_KEY = PREFIX + "worker:"  # + Celery node name: version, protocol, queues
WORKER_NAME_ENV = "UNFURL_WORKER_NAME"
PROTOCOL_ENV = "UNFURL_WORKER_PROTOCOL"  # a worker speaking another protocol (for tests)
BROKER_ENV = ("UNFURL_BROKER", "UNFURL_BACKEND", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
REDACTED_ARGS = f"({REDACTED},)"
SWEEP_SECONDS = 1.0
PING_SECONDS = 2.0
LOST_AFTER_MISSED_PINGS = 3
HEARTBEAT_SECONDS = 2.0
LEASE_SECONDS = 6.0
BROKER_DOWN_SECONDS = 30.0
REPLY_DELIVERY_SECONDS = 60.0
REPLY_TTL_SECONDS = 24 * 3600
#: a reply waits on a thread that wants the GIL: hand it over sooner than Python's 5 ms
SWITCH_INTERVAL = 0.0005


def _patch_kombu() -> None:
    """kombu's Redis channel, closed after the broker went away, raises AttributeError
    (not a connection error) when it is asked to ack or restore; Celery's consumer calls
    that unrecoverable and the worker exits. Make it the connection error it is, so the
    consumer reconnects (the message is restored or sent again: at least once)."""
    import redis
    from kombu.transport import redis as kombu_redis

    original = kombu_redis.Channel._connparams
    if getattr(original, "_unfurl_patched", False):
        return

    def _connparams(self: Any, asynchronous: bool = False) -> Any:
        if getattr(self.connection, "client", None) is None:
            raise redis.exceptions.ConnectionError("the broker connection was closed")
        return original(self, asynchronous)

    _connparams._unfurl_patched = True  # type: ignore[attr-defined]
    kombu_redis.Channel._connparams = _connparams  # type: ignore[method-assign]


def broker_url(broker: str | None = None) -> str:
    return broker or os.environ.get("UNFURL_BROKER") or DEFAULT_BROKER


def visibility_timeout() -> float:
    return float(os.environ.get("UNFURL_VISIBILITY_TIMEOUT") or 3600)


def protocol() -> int:
    return int(os.environ.get(PROTOCOL_ENV) or PROTOCOL)


def make_app(broker: str | None = None, backend: str | None = None) -> Celery:
    from celery import Celery

    from unfurl_lite.run.executors.celery import worker

    _patch_kombu()
    url = broker_url(broker)
    app = Celery("unfurl_lite", broker=url, backend=backend or url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,  # a message is acknowledged when its operation has finished
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=False,  # the worker tells the controller itself (reply list)
        task_default_queue=DEFAULT_QUEUE,
        result_expires=3600,
        result_extended=False,
        worker_pool="unfurl_lite.run.executors.celery.worker:ThreadPool",
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_send_task_events=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        broker_connection_timeout=3.0,
        broker_transport_options={
            "visibility_timeout": visibility_timeout(),
            # kombu scans for messages past the visibility timeout every interval x
            # throttle seconds: every few seconds, so the timeout means what it says
            "unacked_restore_interval": max(1, min(5, int(visibility_timeout() / 2))),
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": 3.0,
            "retry_on_timeout": True,
        },
        redis_socket_connect_timeout=3.0,
        redis_socket_timeout=10.0,
        redis_retry_on_timeout=True,
        redis_backend_health_check_interval=5,
    )
    worker.install(app, url)
    return app


def worker_name(hostname: str | None) -> str:
    """What UNFURL_WORKER and the records call a worker: ``unfurl worker --name``."""
    return os.environ.get(WORKER_NAME_ENV) or (hostname or "celery")


def without_broker(env: dict[str, str], url: str | None) -> dict[str, str]:
    """``env`` without the broker's settings or anything that contains its URL or password."""
    secrets = {s for s in (url, urlsplit(url).password if url else None) if s}
    return {k: v for k, v in env.items()
            if k not in BROKER_ENV and not any(s in str(v) for s in secrets)}


def live_workers(client: Any) -> dict[str, dict[str, Any]]:
    """Celery node name -> what the worker said of itself (version, protocol, queues)."""
    keys = list(client.scan_iter(match=WORKER_KEY + "*", count=1000))
    workers: dict[str, dict[str, Any]] = {}
    for _key, value in zip(keys, client.mget(keys) if keys else [], strict=True):
        with contextlib.suppress(ValueError, TypeError):
            info = json.loads(value)
            workers[str(info["node"])] = info
    return workers


def redacted_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:{REDACTED}@{parts.hostname}"
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def check_broker(url: str, timeout: float = 3.0) -> None:
    """Fail at job start, clearly, when the broker cannot be reached."""
    import redis

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise JobError(
            f"unsupported broker {redacted_url(url)!r}",
            hint="use a Redis URL such as redis://127.0.0.1:6379/0",
        )
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        client.ping()
        client.close()
    except redis.exceptions.RedisError as exc:
        raise JobError(
            f"cannot reach the broker at {redacted_url(url)}: "
            f"{redact_text(str(exc), {url, urlsplit(url).password or url})}",
            hint="start it (redis-server --port 6379) or pass --broker / set UNFURL_BROKER; "
            "see docs/distributed.md",
        ) from None
