"""The Celery app shared by the controller and its workers, and what both must agree on:
the protocol, the task's name, the Redis keys, the timings, where the broker is.

Nothing here runs at import time; the app itself is built by
:func:`~unfurl_lite.run.executors.celery.factory.make_app`, above this module and the worker.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import unfurl_lite.run.executors.celery.credentials as credentials
from unfurl_lite.errors import JobError
from unfurl_lite.security.redaction import redact_text
from unfurl_lite.security.taint import REDACTED

if TYPE_CHECKING:
    pass

#: bumped whenever the task message or the reply changes shape; a controller never sends
#: to a worker speaking another one
PROTOCOL = 3
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
TASK_NAME = "unfurl_lite.run_operation"
PREFIX = "unfurl-lite:"  # the keys of a job and its tasks are in lineage.py
WORKER_KEY = PREFIX + "worker:"  # + Celery node name: version, protocol, queues
WORKER_NAME_ENV = "UNFURL_WORKER_NAME"
PROTOCOL_ENV = "UNFURL_WORKER_PROTOCOL"  # a worker speaking another protocol (for tests)
VERSION_ENV = "UNFURL_WORKER_VERSION"  # a worker claiming another version (for tests)
BROKER_ENV = credentials.VARIABLES
REDACTED_ARGS = f"({REDACTED},)"
SWEEP_SECONDS = 1.0
PING_SECONDS = 2.0
LOST_AFTER_MISSED_PINGS = 3
HEARTBEAT_SECONDS = 2.0
LEASE_SECONDS = 6.0
#: a controller renews its job's ``alive`` key this often and for this long: a worker
#: starts no task of a job whose key is gone (ended, or its controller died)
JOB_ALIVE_SECONDS = 10.0
#: a message not started by then is dropped by the worker that finds it (its own clock);
#: the controller sends a fresh copy of a task still queued on a busy queue before
DEADLINE_SECONDS = 600.0
BROKER_DOWN_SECONDS = 30.0
REPLY_DELIVERY_SECONDS = 60.0
REPLY_TTL_SECONDS = 24 * 3600
#: a reply waits on a thread that wants the GIL: hand it over sooner than Python's 5 ms
SWITCH_INTERVAL = 0.0005


def patch_kombu() -> None:
    """kombu's Redis channel, closed after the broker went away, raises AttributeError
    (not a connection error) when it is asked to ack or restore; Celery's consumer calls
    that unrecoverable and the worker exits. Make it the connection error it is, so the
    consumer reconnects (the message is restored or sent again: at least once)."""
    # optional: redis, kombu's redis transport (distributed extra) until patch_kombu() runs
    import redis.exceptions
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
    kombu_redis.Channel._create_client = _one_client(  # type: ignore[method-assign]
        kombu_redis.Channel._create_client)


def _one_client(create: Any) -> Any:
    """kombu builds a new Redis client (its ~170 response callbacks) for every publish,
    every unacked-message record and every ack: several per task, on both sides. A
    client over a connection pool is safe to share between threads, so each channel
    keeps one per pool (a new pool after a reconnect gets a new client)."""

    def _create_client(self: Any, asynchronous: bool = False) -> Any:
        if asynchronous:
            return create(self, True)
        pool = self.pool  # made again (or refused, channel closed) after a disconnect
        kept = self.__dict__.get("_unfurl_client")
        if kept is None or kept[0] is not pool:
            kept = self.__dict__["_unfurl_client"] = (pool, create(self, False))
        return kept[1]

    return _create_client


def default_concurrency() -> int:
    """Operations a worker runs at once unless told: they are subprocesses that mostly
    wait (on networks, on package managers, on ``sleep``), so a thread pool well above
    the cores, as the local executor's would be for the same job."""
    return max(32, 8 * (os.cpu_count() or 2))


def broker_url(broker: str | None = None) -> str:
    """The broker's URL with its password (see credentials.py for where that is kept)."""
    url = credentials.inherited() or broker or os.environ.get("UNFURL_BROKER") or DEFAULT_BROKER
    return credentials.with_password(url, credentials.password())


def visibility_timeout() -> float:
    return float(os.environ.get("UNFURL_VISIBILITY_TIMEOUT") or 3600)


def keep_seconds() -> int:
    """How long markers of a job and its tasks are kept in Redis: as long as one of its
    messages could still be delivered again."""
    return int(max(visibility_timeout() * 2 + 3600, REPLY_TTL_SECONDS))


def protocol() -> int:
    return int(os.environ.get(PROTOCOL_ENV) or PROTOCOL)


def worker_version() -> str:
    # start-up: __version__ reads the package's metadata when first asked
    from unfurl_lite import __version__

    return os.environ.get(VERSION_ENV) or __version__


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
    import redis.exceptions  # optional: redis (distributed extra, 144 modules)

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
