"""Distributed execution: operations run on Celery workers, fed through a Redis broker.

Four parts: the wire format (``run/executors/wire.py``: JSON, never pickle, secrets
marked), the app both sides share (:mod:`.application`: protocol, keys, timings, the broker),
the worker (:mod:`.worker`: the task body, lease, heartbeat, kill on revoke) and the
controller (:mod:`.controller`: the executor a job uses). Task arguments are never shown
in Celery's logs, and no message carries the broker's URL.

This package is also the Celery app for ``celery -A unfurl_lite.run.executors.celery
worker``: ``app`` is built when first used, never at import.
"""

from __future__ import annotations

from typing import Any

from unfurl_lite.model.routing import DEFAULT_QUEUE
from unfurl_lite.run.executors.celery.application import (
    DEFAULT_BROKER,
    PROTOCOL,
    WORKER_NAME_ENV,
    broker_url,
    check_broker,
    default_concurrency,
    live_workers,
    redacted_url,
    without_broker,
    worker_name,
)
from unfurl_lite.run.executors.celery.controller import CeleryExecutor
from unfurl_lite.run.executors.celery.factory import make_app
from unfurl_lite.run.executors.wire import (
    decode,
    decode_request,
    decode_result,
    encode,
    encode_request,
    encode_result,
)

__all__ = ["DEFAULT_BROKER", "DEFAULT_QUEUE", "PROTOCOL", "WORKER_NAME_ENV", "CeleryExecutor",
           "broker_url", "check_broker", "decode", "decode_request", "decode_result",
           "default_concurrency", "encode", "encode_request", "encode_result", "live_workers",
           "make_app", "redacted_url", "without_broker", "worker_name"]


def __getattr__(name: str) -> Any:
    """``app`` (Celery's ``-A`` looks it up): built on first use, then kept."""
    if name == "app":
        built = globals()["app"] = make_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
