"""What deploy does with Unfurl's directives: ``discover`` (only Install.discover, or a
check when the instance's status is unknown, until it is operational), why a template
with a directive has no instance in the plan, and which instances a directive found
rather than created (undeploy leaves those)."""

from __future__ import annotations

from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeTemplate, Status
from unfurl_lite.plan.lifecycle import implemented
from unfurl_lite.plan.tasks import CHECK, DISCOVER, Builder
from unfurl_lite.plan.topology import not_instantiated


def note_directives(
    ensemble: Ensemble, instances: dict[str, Instance], builder: Builder,
    unrequired: frozenset[str],
) -> None:
    """Say why a template with a directive has no instance in the plan."""
    planned = {i.template for i in instances.values()}
    recorded = {i.template for i in ensemble.instances.values()} if unrequired else set()
    for name, template in ensemble.topology.templates.items():
        why = not_instantiated(template) if template.directives else None
        if why and name not in planned:
            builder.note(name, why)
        elif name in unrequired and name not in recorded:
            builder.note(name, 'skipped: a template with the "default" directive that no '
                               "other template requires")


def discover(
    builder: Builder, instance: Instance, template: NodeTemplate, after: list[int]
) -> bool:
    """Unfurl's ``discover`` directive: until its instance is operational, deploy runs only
    Install.discover on it, never its lifecycle. True when the instance is planned here."""
    op = implemented(template, "Install", "discover")
    check = implemented(template, "Install", "check")
    if instance.status == Status.unknown and check is not None:
        # as Unfurl: an instance whose status is unknown (deploy --check) is checked
        # instead, and nothing else runs on it (it is read-only)
        builder.add(instance.name, template.name, check, CHECK, after)
        return True
    if instance.status not in (Status.ok, Status.degraded):
        if op is None:
            builder.note(instance.name, 'not discovered: the "discover" directive, and no '
                                        "Install.discover operation")
        else:
            builder.add(instance.name, template.name, op, DISCOVER, after)
        return True
    return False


def found_not_created(instance: Instance, directives: tuple[str, ...]) -> bool:
    """An instance its ``discover`` or ``check`` directive found rather than created: Unfurl's
    undeploy leaves it ("instance wasn't created by this ensemble")."""
    return not instance.created and bool({"discover", "check"} & set(directives))
