"""Topology queries planners share: the instances a plan works on (recorded plus the
ones still to create), what each requires, what hosts what (Cloudify's ``contained_in``
subgraphs that heal and scale act on), and which templates have nothing to run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from unfurl_lite.errors import PlanError
from unfurl_lite.model import dependencies
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeTemplate, Status, Topology
from unfurl_lite.plan.groups import GROUPS_KEY, member_groups, tag

#: Unfurl's template directives that keep a plan from creating the template's instance
#: (one already recorded, e.g. made by another operation's resultTemplate, is planned as usual)
NOT_INSTANTIATED = {
    "dependent": "skipped: its template has the \"dependent\" directive (only another "
                 "operation creates its instance)",
    # Unfurl looks for it in the ensembles it imports; unfurl-lite imports none, as
    # Unfurl without a home or `external:` ensembles
    "select": "skipped: could not find external instance for template {template} "
              "(\"select\" directive)",
}


def not_instantiated(template: NodeTemplate) -> str | None:
    """Why no plan creates ``template``'s instance (a directive), or None. Unfurl's
    ``conditional`` (defined after 1.2.0, which ignores it): silently left out while a
    requirement it needs is not met."""
    for directive, why in NOT_INSTANTIATED.items():
        if directive in template.directives:
            return why.format(template=template.name)
    if "conditional" in template.directives and template.missing_requirements:
        return ('skipped: its template has the "conditional" directive and is missing '
                f"requirements: {', '.join(template.missing_requirements)}")
    return None


def unrequired_defaults(topology: Topology) -> frozenset[str]:
    """Templates with Unfurl's ``default`` directive that no other template (one without the
    directive, or one such a template requires) requires: deploy leaves them out."""
    templates = topology.templates
    required = [n for n, t in templates.items() if "default" not in t.directives]
    if len(required) == len(templates):
        return frozenset()
    seen = set(required)
    for name in required:
        for target in templates[name].dependencies:
            if target in templates and target not in seen:
                seen.add(target)
                required.append(target)
    return frozenset(templates) - seen


def planned_instances(ensemble: Ensemble) -> dict[str, Instance]:
    """Recorded instances plus new (pending) ones for each template that has none yet.

    As in Cloudify's node-instance model, a template contained in a host that has several
    instances gets its instances once per host instance, each pinned to its host
    (``hostedOn``), so scaling or healing a host carries what it contains. Templates with
    the ``dependent`` or ``select`` directive get none (:data:`NOT_INSTANTIATED`); one with
    ``check`` gets its new instance ``unknown``, so it is checked before anything else runs.
    """
    instances = dict(ensemble.instances)
    recorded_templates = {i.template for i in instances.values()}
    scaled = "policies" in ((ensemble.spec.get("service_template") or {})
                            .get("topology_template") or {})
    templates = ensemble.topology.templates
    done: set[str] = set()

    def plan_template(name: str) -> None:
        """Plan a template's instances after its host's, and its host's after their host's
        (a chain of hosts of any length, without recursion): each template once."""
        chain: list[tuple[str, str | None]] = []  # the template, its host's, theirs...
        walked: set[str] = set()
        current: str | None = name
        while current is not None and current not in done and current not in walked:
            walked.add(current)
            host = templates[current].host  # a walk of its requirements: once
            host = host if host in templates and host != current else None
            chain.append((current, host))
            current = host
        for template_name, host in reversed(chain):  # the outermost host first
            done.add(template_name)
            plan_instances(template_name, host)

    def plan_instances(name: str, host: str | None) -> None:
        """A template's instances: one per host instance (or as many as the template's
        default), none for a template already recorded or not instantiated."""
        template = templates[name]
        if name in recorded_templates or not_instantiated(template):
            return
        hosts = sorted(n for n, i in instances.items() if i.template == host) if host else []
        pins: list[str | None] = [*hosts] if len(hosts) > 1 else [None]
        per = template.default_instances
        group = member_groups(ensemble.spec).get(name) if scaled else None
        copies = int(group.properties.get("default_instances", 1)) if group and not hosts[1:] \
            else 1
        count = per * len(pins) * copies
        # the first keeps the template's name, the others are <template>_<n>, as scale names them
        names = [name, *(f"{name}_{n}" for n in range(1, count))]
        for index, instance_name in enumerate(names):
            pin = pins[index // per] if copies == 1 else None
            new = Instance(
                name=instance_name,
                template=name,
                status=Status.unknown if "check" in template.directives else Status.pending,
                priority=template.priority,
                extra={"hostedOn": pin} if pin else {},
            )
            if group is not None:  # one group instance per copy, named as instances are
                k = index // per
                tag(new, group.name, group.name if not k else f"{group.name}_{k}")
            if pin and GROUPS_KEY in instances[pin].extra:  # in its host's group instance
                new.extra[GROUPS_KEY] = dict(instances[pin].extra[GROUPS_KEY])
            instances.setdefault(instance_name, new)

    for name in templates:
        plan_template(name)
    return instances


def instance_graph(ensemble: Ensemble, instances: dict[str, Instance]) -> dict[str, list[str]]:
    """instance -> the instances it requires (every instance of each required template)."""
    by_template: dict[str, list[str]] = {}
    for inst in instances.values():
        by_template.setdefault(inst.template, []).append(inst.name)
    result: dict[str, list[str]] = {}
    for inst in instances.values():
        template = ensemble.topology.templates.get(inst.template)
        deps: list[str] = []
        if template:
            pinned = inst.extra.get("hostedOn")
            host = template.host if pinned is not None else None  # the same for each
            for req in template.requirements:
                peers = by_template.get(req.node, ())
                if pinned is not None and req.node == host and pinned in peers:
                    peers = [str(pinned)]  # contained in its own host instance only
                deps.extend(peers)
        result[inst.name] = deps
    return result


def operational_needs(
    ensemble: Ensemble, instances: dict[str, Instance],
) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    """instance -> what its check needs operational, as Unfurl 1.2.0 names it: (each
    instance it requires, its host's instance name or else the requirement's name, whether
    it is the host); the same instances as :func:`instance_graph`."""
    by_template: dict[str, list[str]] = {}
    for inst in instances.values():
        by_template.setdefault(inst.template, []).append(inst.name)
    result: dict[str, tuple[tuple[str, str, bool], ...]] = {}
    for inst in instances.values():
        template = ensemble.topology.templates.get(inst.template)
        if template is None:
            continue
        pinned = inst.extra.get("hostedOn")
        needs: list[tuple[str, str, bool]] = []
        for req in template.requirements:
            peers = by_template.get(req.node, ())
            if pinned is not None and req.is_host and pinned in peers:
                peers = [str(pinned)]
            needs.extend((peer, peer if req.is_host else req.name, req.is_host)
                         for peer in peers)
        result[inst.name] = tuple(needs)
    return result


def select(instances: dict[str, Instance], names: Sequence[str]) -> list[str]:
    """Validate --instance names (an instance or a template name selects its instances)."""
    chosen: list[str] = []
    for name in names:
        if name in instances:
            chosen.append(name)
            continue
        of_template = [i.name for i in instances.values() if i.template == name]
        if not of_template:
            raise unknown_instance(name, instances)
        chosen.extend(of_template)
    return chosen


def unknown_instance(name: str, instances: Iterable[str]) -> PlanError:
    """``no instance named 'wbe'`` with the closest instance name, as every command that
    takes an instance's name says it."""
    return PlanError(f"no instance named {name!r}",
                     hint=_closest(name, instances) or "run `unfurl status` to list them")


def unknown_template(name: str, templates: Iterable[str]) -> PlanError:
    """``no node template named 'wbe'`` with the closest template name."""
    return PlanError(f"no node template named {name!r}",
                     hint=_closest(name, templates) or "see `unfurl validate`")


def _closest(name: str, choices: Iterable[str]) -> str | None:
    import difflib  # start-up: a misspelled name only, not every command's imports

    close = difflib.get_close_matches(name, [c for c in choices if c != name], n=1)
    return f"did you mean {close[0]!r}?" if close else None


def known_template(ensemble: Ensemble, name: str) -> None:
    """A job limited to a template (``--template``) names one the topology has."""
    if name not in ensemble.topology.templates:
        import difflib  # start-up: a misspelled name only, not every command's imports

        close = difflib.get_close_matches(name, list(ensemble.topology.templates), n=1)
        raise PlanError(f"specified template not found: {name}",
                        hint=f"did you mean {close[0]!r}?" if close
                        else "the templates are the topology's node_templates")


def _instantiates(interface: str, operation: str) -> bool:
    """Unfurl's ``aggregate_only``: only a Standard or Configure operation, or Install's
    discover, makes a live resource; a check or a custom interface's operation does not."""
    return interface in ("Standard", "Configure") or (interface, operation) == (
        "Install", "discover")


def operationless(topology: Topology) -> frozenset[str]:
    """Templates that are only the sum of their parts (no implemented operation that makes a
    live resource): their instances stay ``pending`` and take their effective status from
    their dependencies (``ok`` without any), as Unfurl."""
    return frozenset(
        name
        for name, template in topology.templates.items()
        if not any(
            op.implementation is not None and _instantiates(interface, op_name)
            for interface, ops in template.interfaces.items()
            for op_name, op in ops.items()
        )
        and not any(
            op.implementation is not None
            for req in template.requirements
            for ops in (*req.interfaces.values(), *req.target_interfaces.values())
            for op in ops.values()
        )
    )


def is_present(instance: Instance) -> bool:
    """Deployed and not taken down: what Cloudify's workflows act on."""
    return instance.present or instance.status in (Status.ok, Status.degraded)


def host_of(ensemble: Ensemble, instances: Mapping[str, Instance], name: str) -> str | None:
    """The instance ``name`` is contained in (a ``host`` or HostedOn/contained_in requirement)."""
    template = ensemble.topology.templates.get(instances[name].template)
    if template is None or template.host is None:
        return None
    hosts = [i.name for i in instances.values() if i.template == template.host]
    pinned = instances[name].extra.get("hostedOn")
    if pinned in hosts:
        return str(pinned)
    return hosts[0] if hosts else None


def contained(ensemble: Ensemble, instances: Mapping[str, Instance], root: str) -> list[str]:
    """``root`` and every instance (transitively) contained in it, root first."""
    children: dict[str, list[str]] = {}
    for name in instances:
        host = host_of(ensemble, instances, name)
        if host is not None:
            children.setdefault(host, []).append(name)
    found: list[str] = []
    stack = [root]
    while stack:
        name = stack.pop(0)
        if name not in found:
            found.append(name)
            stack.extend(children.get(name, ()))
    return found


def root_host(ensemble: Ensemble, instances: Mapping[str, Instance], name: str) -> str:
    """The outermost container of ``name`` (itself when it has no host)."""
    seen = {name}
    while (host := host_of(ensemble, instances, name)) is not None and host not in seen:
        seen.add(host)
        name = host
    return name


def containers(ensemble: Ensemble, instances: Mapping[str, Instance], name: str) -> list[str]:
    """The hosts ``name`` is (transitively) contained in, innermost first."""
    found: list[str] = []
    while (host := host_of(ensemble, instances, name)) is not None and host not in found:
        found.append(host)
        name = host
    return found


def ordered(
    ensemble: Ensemble, instances: Mapping[str, Instance], names: Iterable[str]
) -> list[str]:
    """``names`` in dependency order (what they require first)."""
    wanted = set(names)
    return [
        n for n in dependencies.topological_order(instance_graph(ensemble, dict(instances)))
        if n in wanted
    ]


def hosted_templates(ensemble: Ensemble, root: str) -> list[str]:
    """``root`` and the templates (transitively) hosted on it, hosts first."""
    found = [root]
    for name in found:
        found.extend(
            t.name
            for t in ensemble.topology.templates.values()
            if t.host == name and t.name not in found
        )
    return found


def host_view(
    ensemble: Ensemble, instances: dict[str, Instance], name: str
) -> dict[str, Instance]:
    """Instances as ``name`` sees them: of its host's template, only its own host."""
    template = ensemble.topology.templates[instances[name].template]
    host = host_of(ensemble, instances, name)
    return {
        n: i for n, i in instances.items() if i.template != template.host or n in (host, name)
    }


def with_templates(ensemble: Ensemble, templates: Mapping[str, NodeTemplate]) -> Ensemble:
    """A view of the ensemble whose topology also has ``templates`` (update's removed
    ones); the ensemble itself is left as it is. No extra templates: the ensemble."""
    if not templates:
        return ensemble
    topology = replace(ensemble.topology, templates={**ensemble.topology.templates, **templates})
    return replace(ensemble, topology=topology)


def template_order(topology: Topology) -> dict[str, int]:
    """Each template's place in Unfurl's plan order (its ``order_templates``): the spec's
    order, each template right after the templates its requirements name, depth first; a
    requirement name given twice orders by its last target only (Unfurl walks a template's
    requirements by name), and a loop is walked from its first template."""
    templates = topology.templates
    graph = {name: [node for node in {r.name: r.node for r in t.requirements}.values()
                    if node in templates]
             for name, t in templates.items()}
    return {name: i for i, name in enumerate(dependencies.topological_order(graph))}


def in_plan_order(ensemble: Ensemble, instances: Mapping[str, Instance]) -> dict[str, Instance]:
    """The instances in the order Unfurl plans them: by template (:func:`template_order`),
    a template's instances in their recorded order. The changeIds a job gives its tasks
    follow this order, so it decides what a job records."""
    place = template_order(ensemble.topology)
    last = len(place)
    return dict(sorted(instances.items(), key=lambda item: place.get(item[1].template, last)))


def removal_order(
    ensemble: Ensemble, instances: Mapping[str, Instance], deps: Mapping[str, Sequence[str]]
) -> list[str]:
    """The order Unfurl's undeploy visits instances (``select_dependents``): from each
    top-level instance, in recorded order, what depends on it first (the instances whose
    requirements name it, then those it hosts), depth first, then itself."""
    first: dict[str, str] = {}
    for name, instance in instances.items():
        first.setdefault(instance.template, name)
    hosts = {
        name: host
        for name, instance in instances.items()
        if (host := _recorded_host(ensemble, instances, instance, first)) is not None
    }
    dependents: dict[str, list[str]] = {name: [] for name in instances}
    hosted: dict[str, list[str]] = {name: [] for name in instances}
    for name in instances:
        for dep in dict.fromkeys(deps.get(name, ())):
            if dep in dependents:
                (hosted if hosts.get(name) == dep else dependents)[dep].append(name)
    graph = {name: dependents[name] + hosted[name] for name in instances}
    roots = [n for n in instances if n not in hosts]
    ordered_graph = {n: graph[n] for n in [*roots, *(n for n in instances if n in hosts)]}
    return dependencies.topological_order(ordered_graph)


def _recorded_host(
    ensemble: Ensemble, instances: Mapping[str, Instance], instance: Instance,
    first: Mapping[str, str],
) -> str | None:
    """As :func:`host_of`, with each template's first instance known beforehand."""
    template = ensemble.topology.templates.get(instance.template)
    if template is None or template.host is None or template.host == instance.template:
        return None
    pinned = instance.extra.get("hostedOn")
    if pinned in instances and instances[str(pinned)].template == template.host:
        return str(pinned)
    return first.get(template.host)
