# pyright: reportUnusedImport=false
# (the TYPE_CHECKING imports name for type checkers what EXPORTS offers at run time)
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

from unfurl_lite.exports import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.plan.registry import build
    from unfurl_lite.plan.tasks import Plan, Task

#: public name -> "module:attribute" it is defined in
EXPORTS: dict[str, str] = {
    "Plan": "unfurl_lite.plan.tasks:Plan",
    "Task": "unfurl_lite.plan.tasks:Task",
    "build": "unfurl_lite.plan.registry:build",
}

__all__ = sorted(EXPORTS)  # pyright: ignore[reportUnsupportedDunderAll]  # made from EXPORTS

__getattr__, __dir__ = lazy(__name__, EXPORTS)
