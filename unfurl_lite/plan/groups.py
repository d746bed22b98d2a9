"""Scaling groups (Cloudify's ``cloudify.policies.scaling`` targeting a group): which
templates scale together, and which group instance each node instance belongs to.

A group instance is one of each member template's instances, made together and removed
together. Its id is recorded on each of its node instances (``scalingGroups: {GROUP: ID}``,
as Cloudify's node instances carry their ``scaling_groups``); ids are named as instances
are: the first keeps the group's name, the next ones are ``<group>_<n>``. An instance
recorded before ids were, takes the id its own name's number gives (``vm_2`` -> ``G_2``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from unfurl_lite.errors import PlanError
from unfurl_lite.model.entities import Instance
from unfurl_lite.model.narrow import is_mapping, new_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUPS_KEY = "scalingGroups"


@dataclass(frozen=True)
class ScalingEntity:
    """What ``scale`` acts on: a node template, or a scaling group of member templates."""

    name: str
    members: tuple[str, ...]
    properties: dict[str, Any] = field(default_factory=new_dict)
    is_group: bool = False


def _topology(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    service: object = spec.get("service_template") or {}
    return (service.get("topology_template") or {}) if is_mapping(service) else {}


def _policies(value: Any) -> list[Mapping[str, Any]]:
    """TOSCA writes policies as a mapping or as a list of one-key mappings."""
    if is_mapping(value):
        return [v for v in value.values() if is_mapping(v)]
    found: list[Mapping[str, Any]] = []
    items: Iterable[Any] = value or []
    for item in items:
        if is_mapping(item):
            found.extend(v for v in item.values() if is_mapping(v))
    return found


def scaling_groups(spec: Mapping[str, Any]) -> dict[str, ScalingEntity]:
    """Every group a scaling policy targets, by name."""
    topology = _topology(spec)
    groups: object = topology.get("groups") or {}
    found: dict[str, ScalingEntity] = {}
    for policy in _policies(topology.get("policies")):
        if "scal" not in str(policy.get("type", "")).lower():
            continue
        targets: Iterable[Any] = policy.get("targets") or []
        for target in targets:
            group = groups.get(target) if is_mapping(groups) else None
            if not is_mapping(group):
                continue
            listed: Iterable[Any] = group.get("members") or ()
            members = tuple(str(m) for m in listed)
            found[str(target)] = ScalingEntity(
                str(target), members, dict(policy.get("properties") or {}), True)
    return found


def find_entity(spec: Mapping[str, Any], name: str) -> ScalingEntity:
    """The scaling group or node template named ``name``, with its scaling properties."""
    group = scaling_groups(spec).get(name)
    if group is not None:
        return group
    topology = _topology(spec)
    templates: Mapping[str, Any] = topology.get("node_templates") or {}
    template: object = templates.get(name)
    if not is_mapping(template):
        # start-up: keeps load.problems (9 modules) off `status` until find_entity() runs
        from unfurl_lite.load.problems import did_you_mean

        groups: Mapping[str, Any] = topology.get("groups") or {}
        names = [*templates, *groups]
        raise PlanError(
            f"nothing to scale named {name!r}",
            hint=did_you_mean(name, names) or "give a node template or a scaling group: "
            + ", ".join(names[:10]) + (f" (and {len(names) - 10} more)" if len(names) > 10 else ""),
        )
    capabilities: Mapping[str, Any] = template.get("capabilities") or {}
    scalable: Mapping[str, Any] = capabilities.get("scalable") or {}
    return ScalingEntity(name, (name,), dict(scalable.get("properties") or {}))


def number_of(name: str, base: str) -> int | None:
    """0 for ``base`` itself, n for ``<base>_<n>``, None for any other name."""
    if name == base:
        return 0
    head, _, tail = name.rpartition("_")
    return int(tail) if head == base and tail.isdigit() else None


def next_name(base: str, taken: Iterable[str]) -> str:
    """``<base>_<n>``, the first n >= 1 not taken (the first of all keeps ``base``)."""
    used = set(taken)
    n = 1
    while f"{base}_{n}" in used:
        n += 1
    return f"{base}_{n}"


def group_id(instance: Instance, group: str) -> str:
    """The group instance ``instance`` belongs to (recorded, else from its name's number)."""
    recorded = instance.extra.get(GROUPS_KEY)
    if is_mapping(recorded) and recorded.get(group):
        return str(recorded[group])
    n = number_of(instance.name, instance.template)
    return group if not n else f"{group}_{n}"


def tag(instance: Instance, group: str, ident: str) -> None:
    instance.extra[GROUPS_KEY] = {**(instance.extra.get(GROUPS_KEY) or {}), group: ident}


def member_groups(spec: Mapping[str, Any]) -> dict[str, ScalingEntity]:
    """template -> the scaling group it is a member of (the first, if several)."""
    found: dict[str, ScalingEntity] = {}
    for group in scaling_groups(spec).values():
        for member in group.members:
            found.setdefault(member, group)
    return found
