"""Which agent queue a node's operations go to (Cloudify's per-agent queues).

A node names its agent with ``metadata: {agent: NAME}`` (or ``queue``) or an ``agent``
property; a node that names none runs where its host's agent is, so everything installed
on a compute node goes to that node's agent. Nodes with no agent anywhere on their host
chain go to the default queue (Cloudify's ``cloudify.management`` role).
"""

from __future__ import annotations

from unfurl_lite.model.entities import NodeTemplate, Topology

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_QUEUE = "unfurl.management"


def own_agent(template: NodeTemplate) -> str | None:
    return _name(template.metadata) or _name({"agent": template.properties.get("agent")})


def agent_of(topology: Topology, template_name: str) -> str | None:
    """The template's agent, else its host's (up the host chain); None: the default queue."""
    seen: set[str] = set()
    name: str | None = template_name
    while name and name not in seen:
        seen.add(name)
        template = topology.templates.get(name)
        if template is None:
            return None
        agent = own_agent(template)
        if agent:
            return agent
        name = template.host
    return None


def agent_queues(topology: Topology) -> dict[str, list[str]]:
    """Each queue the topology's nodes use, with the nodes that use it."""
    queues: dict[str, list[str]] = {}
    for name in sorted(topology.templates):
        queues.setdefault(agent_of(topology, name) or DEFAULT_QUEUE, []).append(name)
    return queues


def _name(metadata: dict[str, Any]) -> str | None:
    agent = metadata.get("agent") or metadata.get("queue")
    return str(agent) if agent and isinstance(agent, str | int) else None
