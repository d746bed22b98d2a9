# pyright: reportUnusedImport=false
# (the TYPE_CHECKING imports name for type checkers what EXPORTS offers at run time)
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

from typing import TYPE_CHECKING, Any

from unfurl_lite.exports import lazy

if TYPE_CHECKING:
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

#: public name -> "module:attribute" it is defined in
EXPORTS: dict[str, str] = {
    "DEFAULT_QUEUE": "unfurl_lite.model.routing:DEFAULT_QUEUE",
    "DEFAULT_BROKER": "unfurl_lite.run.executors.celery.application:DEFAULT_BROKER",
    "PROTOCOL": "unfurl_lite.run.executors.celery.application:PROTOCOL",
    "WORKER_NAME_ENV": "unfurl_lite.run.executors.celery.application:WORKER_NAME_ENV",
    "broker_url": "unfurl_lite.run.executors.celery.application:broker_url",
    "check_broker": "unfurl_lite.run.executors.celery.application:check_broker",
    "default_concurrency": "unfurl_lite.run.executors.celery.application:default_concurrency",
    "live_workers": "unfurl_lite.run.executors.celery.application:live_workers",
    "redacted_url": "unfurl_lite.run.executors.celery.application:redacted_url",
    "without_broker": "unfurl_lite.run.executors.celery.application:without_broker",
    "worker_name": "unfurl_lite.run.executors.celery.application:worker_name",
    "CeleryExecutor": "unfurl_lite.run.executors.celery.controller:CeleryExecutor",
    "make_app": "unfurl_lite.run.executors.celery.factory:make_app",
    "decode": "unfurl_lite.run.executors.wire:decode",
    "decode_request": "unfurl_lite.run.executors.wire:decode_request",
    "decode_result": "unfurl_lite.run.executors.wire:decode_result",
    "encode": "unfurl_lite.run.executors.wire:encode",
    "encode_request": "unfurl_lite.run.executors.wire:encode_request",
    "encode_result": "unfurl_lite.run.executors.wire:encode_result",
}

__all__ = sorted(EXPORTS)  # pyright: ignore[reportUnsupportedDunderAll]  # made from EXPORTS

_exported, __dir__ = lazy(__name__, EXPORTS)


def __getattr__(name: str) -> Any:
    """``app`` (Celery's ``-A`` looks it up): built on first use, then kept; the exported
    names imported when first used."""
    if name == "app":
        # start-up: keeps run.executors.celery.factory off celery's import until __getattr__() runs
        from unfurl_lite.run.executors.celery.factory import make_app

        built = globals()["app"] = make_app()
        return built
    return _exported(name)
