"""Planning: a workflow and an ensemble become a :class:`Plan`, an ordered graph of
tasks. Planning runs nothing and writes nothing, and leaves the ensemble as it was.

- :mod:`~unfurl_lite.plan.tasks`: Plan, Task, Guard, Note, the reasons, the Builder
- :mod:`~unfurl_lite.plan.lifecycle`: the lifecycle tables and the tasks they become
- :mod:`~unfurl_lite.plan.topology`: instances to plan for, requirements, hosts, subgraphs
- :mod:`~unfurl_lite.plan.registry`: workflow name -> planner, and :func:`build`
- planners: ``deploy`` (deploy, undeploy, check, discover), ``operations``
  (execute_operation, start, stop, restart, run), ``heal``, ``scale``, ``update``,
  ``tosca`` (TOSCA imperative workflows)
- :mod:`~unfurl_lite.plan.baselines` and :mod:`~unfurl_lite.plan.drift`: what was
  deployed against what the spec says now

``build``, ``Plan`` and ``Task`` are importable from here; they load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unfurl_lite.plan.registry import build
    from unfurl_lite.plan.tasks import Plan, Task

__all__ = ["Plan", "Task", "build"]


def __getattr__(name: str) -> Any:
    if name == "build":
        from unfurl_lite.plan import registry

        return registry.build
    if name in ("Plan", "Task"):
        from unfurl_lite.plan import tasks

        return getattr(tasks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
