"""The lifecycle of an instance a task's ``resultTemplate`` created, planned in the job
that created it.

As Unfurl 1.2.0: an instance a resultTemplate creates without a ``readyState`` is not
known to exist, so the same deploy job runs its own lifecycle (its Install.check first,
when it has one, then its install steps for the reason ``missing``, skipped when the
check found it ok); the first operation that creates it is its creator, and undeploy
deletes it. One created with a ``readyState`` is managed by its creator: nothing runs on
it (Unfurl plans a reconfigure that finds nothing to do, which only takes a changeId
number) and undeploy leaves it.
"""

from __future__ import annotations

from dataclasses import replace

from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.plan.lifecycle import add_install_tasks, implemented
from unfurl_lite.plan.tasks import CHECK, MISSING, RECONFIGURE, Builder, Task


def unmanaged(instance: Instance) -> bool:
    """Made by a resultTemplate without a readyState: no operation created it yet."""
    return instance.created is None and instance.status == Status.unknown


def plan_created(ensemble: Ensemble, instances: dict[str, Instance], names: list[str],
                 first: int) -> list[Task]:
    """The tasks of each unmanaged instance in ``names``, numbered from ``first``."""
    builder = Builder("deploy")
    for name in names:
        instance = instances[name]
        template = ensemble.topology.templates.get(instance.template)
        if template is None or not unmanaged(instance):
            continue
        check = implemented(template, "Install", "check")
        skip_when = None
        if check is not None:
            builder.add(name, template.name, check, CHECK, [])
            skip_when = Status.ok
        add_install_tasks(builder, ensemble, instance, instances, MISSING, [], skip_when,
                          pass_through=False)
    offset = first - 1
    return [replace(t, number=t.number + offset, after=tuple(a + offset for a in t.after))
            for t in builder.tasks]


def managed_tasks(ensemble: Ensemble, instances: dict[str, Instance], names: list[str],
                  first: int) -> list[Task]:
    """Unfurl's reconfigure of each managed instance in ``names`` (one with a configure
    operation), numbered from ``first``: it finds nothing to do and is skipped."""
    tasks: list[Task] = []
    for name in names:
        instance = instances[name]
        template = ensemble.topology.templates.get(instance.template)
        op = implemented(template, "Standard", "configure") if template else None
        if op is not None and not unmanaged(instance):
            tasks.append(Task(first + len(tasks), name, instance.template, op, RECONFIGURE,
                              "deploy"))
    return tasks


__all__ = ["managed_tasks", "plan_created", "unmanaged"]
