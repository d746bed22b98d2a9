"""Cloudify's install_new_agents as a plan: one task per selected node instance that names
an agent of its own (the queue its operations, and those of what it hosts, go to), which
makes sure a live worker serves that queue: it registers the worker already there
(checking that it speaks this version's protocol) or starts one, and reports it. Workers
already running are left as they are, as Cloudify leaves old agents installed.

The tasks run in the job's own process tree whatever ``--executor`` says (the plan is
``local_only``): the workers they start are what the Celery executor needs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from unfurl_lite.errors import PlanError
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Implementation, Operation
from unfurl_lite.model.routing import agent_of, own_agent
from unfurl_lite.plan.tasks import Builder, Plan
from unfurl_lite.plan.topology import is_present

INSTALL_NEW_AGENTS = "install_new_agents"
INSTALL_AGENT = "unfurl_lite.api.agents:install_agent"
AGENT_REASON = "agent"
#: seconds the operation may take beyond the wait for its worker (starting it, checks)
MARGIN = 30.0
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?)?\s*$")


def seconds(value: object) -> float:
    """Cloudify's ``install_agent_timeout``: a number of seconds, or ``300s``/``5m``."""
    if isinstance(value, bool):
        raise PlanError(f"install_agent_timeout: expected a duration, got {value!r}")
    if isinstance(value, int | float):
        amount, unit = float(value), "s"
    else:
        found = _DURATION.match(str(value))
        if not found:
            raise PlanError(f"install_agent_timeout: expected a duration such as 300s or 5m, "
                            f"got {value!r}")
        amount, unit = float(found[1]), found[2] or "s"
    total = amount * (60 if unit.startswith("m") else 1)
    if total <= 0:
        raise PlanError(f"install_agent_timeout: must be more than 0, got {value!r}")
    return total


def plan_agents(ensemble: Ensemble, selected: Sequence[str], timeout: float) -> Plan:
    """Cloudify's install_new_agents over the ``selected`` instances (its planner, with
    Cloudify's filters, is in plan/operations.py): one task per instance with an agent of
    its own, one at a time per agent queue (the second finds the worker the first started),
    each waiting at most ``timeout`` seconds; an instance without one is noted."""
    topology = ensemble.topology
    builder = Builder(INSTALL_NEW_AGENTS)
    last_on_queue: dict[str, int] = {}
    for name in selected:
        instance = ensemble.instances[name]
        template = topology.templates[instance.template]
        agent = own_agent(template)
        if agent is None:
            queue = agent_of(topology, template.name) or "the management queue"
            builder.note(name, f"no agent of its own: its operations go to {queue}")
            continue
        if not is_present(instance):
            builder.note(name, "not deployed: no agent to install on it yet")
            continue
        operation = Operation(
            "Agent", "install", Implementation(INSTALL_AGENT),
            inputs={"queue": agent, "wait_seconds": timeout},
            timeout=timeout + MARGIN,
            environment={"+UNFURL_BROKER": None},  # where the workers meet
        )
        # one at a time per queue: the second finds the worker the first started
        task = builder.add(name, template.name, operation, AGENT_REASON,
                           [last_on_queue[agent]] if agent in last_on_queue else [])
        last_on_queue[agent] = task.number
    plan = builder.plan({})
    plan.affects_history = False  # agents are not part of an instance's status
    plan.local_only = True
    return plan
