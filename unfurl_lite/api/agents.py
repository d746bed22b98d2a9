"""The operation of Cloudify's install_new_agents, on our workers: make sure a live worker
serves one node instance's agent queue, and report it.

It runs as a Python operation (its own process, in the project directory) of the
``install_new_agents`` plan: a worker already serving the queue is registered, provided it
speaks this version's protocol (a worker of another protocol is refused, as the Celery
executor would refuse to send it a task); a queue with none gets a local worker
(``unfurl worker``, its log in ``jobs/worker-NAME.log``), waited for up to
``install_agent_timeout``. Workers already running are never stopped, as Cloudify leaves
the old agents installed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from unfurl_lite.api.distributed import _celery, _versions, live_queues, start_worker

POLL_SECONDS = 0.5


def install_agent(context: dict[str, Any]) -> dict[str, Any]:
    """The per-instance step (a Python operation's entry point: ``context`` as every
    Python operation gets it). Returns the report as the task's outputs."""
    inputs = context["inputs"]
    queue = str(inputs["queue"])
    timeout = float(inputs.get("install_agent_timeout") or 300)
    distributed = _celery()
    url = distributed.broker_url(None)  # UNFURL_BROKER, passed to this operation alone
    distributed.check_broker(url)
    app = distributed.make_app(url)
    try:
        serving = live_queues(app).get(queue, [])
        started = None
        if not serving:
            name = "management" if queue == distributed.DEFAULT_QUEUE else queue
            started = start_worker(Path.cwd(), name, queue, url, None).pid
            deadline = time.monotonic() + timeout
            while not serving and time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)
                serving = live_queues(app).get(queue, [])
            if not serving:
                raise RuntimeError(
                    f"no worker came up for queue {queue!r} within {timeout:g} s (see "
                    f"jobs/worker-{name}.log)")
        versions = _versions(distributed, url)
    finally:
        app.close()
    workers = {node.partition("@")[0]: versions.get(node, {}) for node in serving}
    stale = {w: v for w, v in workers.items()
             if v.get("protocol") not in (None, distributed.PROTOCOL)}
    if stale:
        described = ", ".join(f"{w} runs unfurl-lite {v.get('version')} (protocol "
                              f"{v.get('protocol')})" for w, v in stale.items())
        raise RuntimeError(f"queue {queue!r}: {described}; this version speaks protocol "
                           f"{distributed.PROTOCOL}: upgrade or restart those workers")
    how = f"started worker {queue} (pid {started})" if started else "already served"
    print(f"{context['target']}: agent queue {queue}: {how} by "
          + ", ".join(f"{w} (unfurl-lite {v.get('version') or '?'})"
                      for w, v in sorted(workers.items())))
    return {
        "modified": bool(started),
        "outputs": {"queue": queue, "workers": sorted(workers), "started": started,
                    "versions": {w: v.get("version") for w, v in workers.items()}},
    }
