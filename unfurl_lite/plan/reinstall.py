"""Reinstalling instances inside a plan (heal's and update's last step): unlink what
depends on them from outside, uninstall them dependents first, install them dependencies
first, then re-run the relationship operations (preconfigure, postconfigure, establish) of
the instances outside that depend on them, as Cloudify's reinstall does.

Whether an instance is reinstalled may be known only at run time (its check failed, its
heal failed): each instance comes with a :data:`Trigger`, the tasks whose failure decides
it, and every one of its reinstall tasks is guarded on those same tasks. The decision is
made once, from outcomes that do not change, so a step late in the reinstall (an
``establish`` after the instance's own ``start`` made it ok again) still runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance
from unfurl_lite.plan.lifecycle import (
    INSTALL_RELATIONSHIPS,
    UNLINK,
    add_install_tasks,
    add_relationship_tasks,
    add_uninstall_tasks,
)
from unfurl_lite.plan.tasks import REPAIR, Builder, Guard
from unfurl_lite.plan.topology import instance_graph, is_present

#: None: never; an empty set: always; else: if one of these tasks failed (or, for a
#: health check, did not pass)
Trigger = frozenset[int] | None
ALWAYS: Trigger = frozenset()


def either(*triggers: Trigger) -> Trigger:
    """The trigger that fires when any of ``triggers`` does."""
    found: Trigger = None
    for trigger in triggers:
        if trigger is None:
            continue
        if not trigger or found == ALWAYS:
            found = ALWAYS
            continue
        found = trigger if found is None else found | trigger
    return found


def guard_of(trigger: Trigger) -> Guard | None:
    """The guard a task planned for ``trigger`` carries (None: it always runs)."""
    return Guard(if_failed=tuple(sorted(trigger))) if trigger else None


def add_reinstall(
    builder: Builder,
    ensemble: Ensemble,
    instances: dict[str, Instance],
    triggers: Mapping[str, Trigger],
    may_fail: bool,
    after: Iterable[int] = (),
    reason: str = REPAIR,
) -> None:
    """Reinstall the instances ``triggers`` names (in dependency order), each only when its
    trigger fires; ``may_fail`` goes on past failures of the uninstall part."""
    selected = [n for n, t in triggers.items() if t is not None]
    deps = instance_graph(ensemble, instances)
    dependents = dependencies.reverse(deps)
    wanted = set(selected)
    barrier = list(after)
    guards = {name: guard_of(triggers[name]) for name in selected}

    def outside(name: str) -> list[str]:
        return [d for d in dependents.get(name, ())
                if d not in wanted and d in instances and is_present(instances[d])]

    unlinks: dict[str, list[int]] = {}
    for name in selected:  # what stays lets go of what is reinstalled
        for dependent in outside(name):
            unlinks.setdefault(name, []).extend(add_relationship_tasks(
                builder, ensemble, instances, dependent, name, UNLINK, reason,
                [*barrier, *builder.last_of([name])], guard=guards[name],
                may_fail=may_fail,
            ))  # fmt: skip
    uninstalls: list[int] = []
    for name in reversed(selected):
        start = len(builder.tasks)
        before = [d for d in dependents.get(name, ()) if d in wanted]
        add_uninstall_tasks(
            builder, ensemble, instances[name], instances, reason,
            [*barrier, *builder.last_of(before), *unlinks.get(name, ())],
            may_fail=may_fail, stops_always=True,  # as Cloudify's uninstall: see scale in
        )  # fmt: skip
        guard_new(builder, start, guards[name])
        uninstalls.extend(t.number for t in builder.tasks[start:])
    for name in selected:
        start = len(builder.tasks)
        needs = [d for d in deps.get(name, ()) if d in wanted]
        add_install_tasks(
            builder, ensemble, instances[name], instances, reason,
            [*barrier, *uninstalls, *builder.last_of(needs)],
            resume_from_state=False,
        )  # fmt: skip
        guard_new(builder, start, guards[name])
    for name in selected:
        for dependent in outside(name):
            add_relationship_tasks(
                builder, ensemble, instances, dependent, name, INSTALL_RELATIONSHIPS, reason,
                [builder.last[name]], guard=guards[name],
            )  # fmt: skip


def guard_new(builder: Builder, start: int, guard: Guard | None) -> None:
    """Put ``guard`` on the tasks added since ``start`` (they are frozen, so replace them)."""
    if guard is None:
        return
    builder.tasks[start:] = [replace(t, guard=guard) for t in builder.tasks[start:]]

