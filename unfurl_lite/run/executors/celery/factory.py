"""The Celery app both sides use, configured once: the controller builds it when a job
starts, ``unfurl worker`` when it starts, ``celery -A`` on first use of
``unfurl_lite.run.executors.celery.app``. It installs the worker's task, so it sits above
both :mod:`.application` (what both sides agree on) and :mod:`.worker`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from unfurl_lite.model.routing import DEFAULT_QUEUE
from unfurl_lite.run.executors.celery.application import (
    broker_url,
    patch_kombu,
    visibility_timeout,
)

if TYPE_CHECKING:
    from celery import Celery


def make_app(broker: str | None = None, backend: str | None = None) -> Celery:
    """The configured Celery app both sides use: JSON only, a broker retried without end,
    and a worker that takes its tasks itself (consumer.py); the settings of Celery's own
    consumer (late acknowledgement, one task prefetched) apply to whatever else runs the
    task through it."""
    from celery import Celery  # start-up: celery loads only when an app is built

    # start-up: keeps amqp, billiard (214 modules) off factory's import until make_app() runs
    from unfurl_lite.run.executors.celery.consumer import install as take_tasks
    from unfurl_lite.run.executors.celery.worker import (
        install,  # start-up: imports celery's worker side
    )

    patch_kombu()
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
    install(app, url)
    take_tasks(app)
    return app
