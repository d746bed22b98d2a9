"""The operation of Cloudify's install_new_agents, on our workers: make sure a live worker
serves one node instance's agent queue, and report it.

It runs as a Python operation (its own process, in the project directory) of the
``install_new_agents`` plan, through :func:`~unfurl_lite.api.distributed.ensure_agent`: a
worker of this version already serving the queue is registered; otherwise a local one is
started (``unfurl worker``, its log in ``jobs/worker-NAME.log``) and waited for up to its
``wait_seconds`` input (the workflow's install_agent_timeout, in seconds). Workers already
running, of this version or another, are never stopped, as Cloudify leaves the old agents
installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from unfurl_lite.api.distributed import agent_status, ensure_agent


def install_agent(context: dict[str, Any]) -> dict[str, Any]:
    """The per-instance step (a Python operation's entry point: ``context`` as every
    Python operation gets it); the broker is UNFURL_BROKER, given to this operation alone.
    Returns the report as the task's outputs."""
    inputs = context["inputs"]
    queue = str(inputs["queue"])
    timeout = float(inputs.get("wait_seconds") or 300)
    if context.get("dryrun"):  # a dry run starts nothing: it says what it would do
        status = agent_status(queue)
        would = "already served" if status.ready else f"would start worker {queue}"
        print(f"{context['target']}: agent queue {queue}: {would}" + "".join(
            f"; {w['name']} (unfurl-lite {w['version'] or '?'})" for w in status.workers))
        return {"modified": False, "outputs": {"queue": queue, "started": None,
                                               "workers": [w["name"] for w in status.workers]}}
    status = ensure_agent(queue, Path.cwd(), timeout=timeout)
    used = [w for w in status.workers if w["compatible"]]
    other = [w for w in status.workers if not w["compatible"]]
    how = f"started worker {queue} (pid {status.started})" if status.started \
        else "already served"
    line = f"{context['target']}: agent queue {queue}: {how} by " + ", ".join(
        f"{w['name']} (unfurl-lite {w['version'] or '?'})" for w in used)
    if other:
        line += "; left running, of another version: " + ", ".join(
            f"{w['name']} (unfurl-lite {w['version'] or '?'}, protocol {w['protocol']})"
            for w in other)
    print(line)
    return {
        "modified": bool(status.started),
        "outputs": {"queue": queue, "workers": [w["name"] for w in used],
                    "versions": {w["name"]: w["version"] for w in status.workers},
                    "otherVersions": [w["name"] for w in other], "started": status.started},
    }
