"""Validation of types and requirements: every type used is known, no type derives from
itself, every requirement names a template that exists, and requirements form no cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    did_you_mean,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.load.structure import (
    TargetTypes,
    implied_requirements,
    is_default,
    is_optional,
    split_types,
    type_candidates,
    written_requirements,
)
from unfurl_lite.model.dependencies import find_cycles
from unfurl_lite.model.lineage import ancestry, parents
from unfurl_lite.model.narrow import is_list, is_map

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

_TOSCA_NODES = (
    "Root", "Compute", "SoftwareComponent", "WebServer", "WebApplication", "DBMS",
    "Database", "ObjectStorage", "BlockStorage", "Container.Runtime",
    "Container.Application", "LoadBalancer", "network.Network", "network.Port",
    "Storage.ObjectStorage", "Storage.BlockStorage", "Abstract.Compute",
    "Abstract.Storage", "Abstract.Directory", "network.FloatingIP", "Container.Runtime.Docker",
    "Container.Application.Docker",
)


_UNFURL_NODES = (
    "Installer", "Installation", "Default", "Generic", "Repository", "LocalRepository",
    "CloudAccount", "CloudObject", "ArtifactBuilder", "AWSAccount", "AWSResource",
    "AzureAccount", "AzureResource",
)


#: Unfurl types that come with operations of their own (Unfurl's k8s, DNS and Docker
#: configurators, its Terraform/Ansible installers): a template of one would run nothing
#: here, so it is refused by name rather than accepted as a plain type
_UNFURL_TYPES_WITH_OPERATIONS = (
    "K8sCluster", "K8sNamespace", "K8sRawResource", "K8sSecretResource", "DNSZone",
    "ContainerService", "ContainerHost", "ContainerImage", "Installer.Terraform",
    "Installer.Ansible", "Installer.Helm", "Installer.Docker", "Installer.Kompose",
    "ArtifactInstaller",
)


UNFURL_TYPES_WITH_OPERATIONS: frozenset[str] = frozenset(
    f"unfurl.nodes.{n}" for n in _UNFURL_TYPES_WITH_OPERATIONS)


_CLOUDIFY_NODES = (
    "Root", "Compute", "WebServer", "ApplicationServer", "DBMS", "Database",
    "ApplicationModule", "VirtualIP", "Port", "Network", "Subnet", "Router",
    "SecurityGroup", "SoftwareComponent", "Tier", "Volume", "FileSystem", "ObjectStorage",
    "LoadBalancer", "Container",
)


#: Node types every ensemble may use without defining them: TOSCA's, Unfurl's, Cloudify's.
NORMATIVE_NODE_TYPES: frozenset[str] = frozenset(
    [f"tosca.nodes.{n}" for n in _TOSCA_NODES]
    + [f"tosca:{n}" for n in _TOSCA_NODES]
    + list(_TOSCA_NODES)
    + [f"unfurl.nodes.{n}" for n in _UNFURL_NODES]
    + [f"cloudify.nodes.{n}" for n in _CLOUDIFY_NODES]
)


def _imports(doc: Any) -> bool:
    return bool(get_section(doc, SERVICE).get("imports"))


def known_type(name: str, defined: Any) -> bool:
    """Defined in this document (its imports merged in) or normative."""
    return name in defined or name in NORMATIVE_NODE_TYPES


def _unknown_types(doc: Any, file: str) -> Iterator[Problem]:
    defined = get_section(doc, (*SERVICE, "node_types"))
    imports = _imports(doc)
    for name, body in get_section(doc, (*TOPOLOGY, "node_templates")).items():
        type_name = mapping(body).get("type")
        if isinstance(type_name, str) and not known_type(type_name, defined):
            yield _unknown_type(doc, file, (*TOPOLOGY, "node_templates", name, "type"),
                                f"node template {name!r}", type_name, defined, imports)
    for name, body in defined.items():
        derived_from = mapping(body).get("derived_from")
        for index, parent in enumerate(parents(derived_from)):
            if not known_type(parent, defined):
                where = (*SERVICE, "node_types", name, "derived_from")
                yield _unknown_type(doc, file, (*where, index) if is_list(
                    derived_from) else where, f"node type {name!r}", parent, defined,
                    imports)


def _unknown_type(
    doc: Any, file: str, path: tuple[Any, ...], owner: str, name: str, defined: Any,
    imports: bool = False,
) -> Problem:
    hint = did_you_mean(name, [*defined, *NORMATIVE_NODE_TYPES]) or (
        "define it under spec.service_template.node_types or use a normative type "
        "such as tosca.nodes.Root"
    )
    what = f"{owner} has unknown type {name!r}"
    if name in UNFURL_TYPES_WITH_OPERATIONS or name.startswith("unfurl.nodes.Installer."):
        what = (f"{owner} uses Unfurl's type {name!r}, whose operations come from an Unfurl "
                "configurator: not supported by unfurl-lite")
        hint = "define your own type under node_types with Shell or Python operations"
    elif imports:
        what += " (defined neither here nor in any imported file)"
        hint = hint if hint.startswith("did you") else (
            "define the type under node_types here or in an imported file; a type from an "
            "import with `namespace_prefix: P` is named `P.Type`")
    return problem_at(doc, path, file, what, hint)


def _type_cycles(doc: Any, file: str) -> Iterator[Problem]:
    for section in ("node_types", "relationship_types"):
        types = get_section(doc, (*SERVICE, section))
        graph = {n: [p for p in parents(mapping(b).get("derived_from")) if p in types]
                 for n, b in types.items()}
        for cycle in find_cycles(graph):
            yield problem_at(doc, (*SERVICE, section, cycle[0], "derived_from"), file,
                             f"derived_from cycle: {' -> '.join(cycle)}",
                             "a type cannot be its own ancestor")


def requirement_target(value: Any) -> str | None:
    """The node a requirement names, in the short (``host: x``) or long form."""
    if isinstance(value, str):
        return value
    node = mapping(value).get("node")
    return node if isinstance(node, str) else None


Named = tuple[tuple[int, str, str], ...]
#: (index, requirement name, its relationship) of the requirements of :data:`Named` whose
#: ``relationship`` is a mapping (an inline relationship: interfaces, Cloudify's sides)
Related: TypeAlias = "tuple[tuple[int, str, dict[str, Any]], ...]"
#: each template body's requirements, read once while a document is validated: by the
#: body's id, with the body itself (an id is only its while the body lives)
_read: dict[int, tuple[Any, tuple[Named, Related]]] = {}


@contextmanager
def requirements_read_once(doc: Any) -> Iterator[None]:
    """While validating ``doc``: five checks ask for each template's requirements, which
    are read from its body once (a body of another document is read as before)."""
    _read.clear()
    _read.update((id(body), (body, _named(body)))
                 for body in get_section(doc, (*TOPOLOGY, "node_templates")).values())
    try:
        yield
    finally:
        _read.clear()


def requirements_of(body: Any) -> Iterator[tuple[int, str, str]]:
    """(index, requirement name, node it names) of a template's requirements that name one."""
    found = _read.get(id(body))
    return iter((found[1] if found is not None and found[0] is body else _named(body))[0])


def relationships_of(body: Any) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(index, requirement name, relationship) of the requirements of
    :func:`requirements_of` whose ``relationship`` is a mapping: what the checks of
    interfaces and of Cloudify's relationship sides look at (most of a large ensemble's
    requirements have none, and are not walked again for each check)."""
    found = _read.get(id(body))
    return iter((found[1] if found is not None and found[0] is body else _named(body))[1])


def _named(body: Any) -> tuple[Named, Related]:
    requirements = mapping(body).get("requirements")
    if not is_list(requirements):
        return (), ()
    found = []
    related = []
    for index, item in enumerate(requirements):
        if is_map(item) and len(item) == 1:
            ((name, value),) = item.items()
            target = requirement_target(value)
            if target:
                found.append((index, str(name), target))
                if is_map(value) and is_map(relationship := value.get("relationship")):
                    related.append((index, str(name), relationship))
    return tuple(found), tuple(related)


def _requirement_targets(doc: Any, file: str) -> Iterator[Problem]:
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    types = get_section(doc, (*SERVICE, "node_types"))
    for name, body in templates.items():
        for index, req, target in requirements_of(body):
            if target in templates:
                continue
            if target in types or target in NORMATIVE_NODE_TYPES:
                yield from _type_target(doc, file, str(name), index, req, target)
                continue
            hint = did_you_mean(target, templates) or (
                f"node templates are: {', '.join(templates)}"
            )
            yield problem_at(
                doc, (*TOPOLOGY, "node_templates", name, "requirements", index), file,
                f"requirement {req!r} of {name!r} names unknown node template {target!r}", hint,
            )


def _type_target(doc: Any, file: str, name: str, index: int, req: str,
                 node_type: str) -> Iterator[Problem]:
    """A requirement that names a type is connected to the one template of that type its
    filter passes, as Unfurl 1.2.0 connects it (with none, see
    :func:`_unmatched_requirements`); with several, Unfurl's solver chooses one, not in
    the document's order, so the choice is left to the author."""
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    value = mapping(mapping(mapping(templates[name]).get("requirements", [])[index]).get(req))
    found = type_candidates(name, node_type, value.get("node_filter"), templates,
                            _node_types(doc), value, TargetTypes(get_section(doc, SERVICE)))
    if len(found) > 1:
        yield problem_at(
            doc, (*TOPOLOGY, "node_templates", name, "requirements", index), file,
            f"requirement {req!r} of {name!r} names the type {node_type!r}, which "
            f"{len(found)} templates are ({', '.join(found)}): Unfurl 1.2.0's solver "
            "connects it to one of them, not in the document's order, so the choice is not "
            "made here",
            f"name the template it requires (`- {req}: {found[0]}`), or give a node_filter "
            "that only one of them passes")


def _node_types(doc: Any) -> dict[str, Any]:
    service = get_section(doc, SERVICE)
    return {**split_types(service.get("types"))[0], **mapping(service.get("node_types"))}


def _unmatched_requirements(doc: Any, file: str) -> Iterator[Problem]:
    """A requirement a template writes itself that finds no template, judged as
    tosca-parser judges it when Unfurl 1.2.0 loads the service template: refused when the
    template names its node (a type: "Could not find target template") or when neither it
    nor its type names one ("No matching target template found"); left unconnected, the job
    running, when it is optional (occurrences [0, ...]), when only its type names the node,
    or when the template has the ``default`` directive (Unfurl warns). One its type declares
    and the template does not write is "missing" when a job is created (load/builder.py)."""
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    node_types = _node_types(doc)
    for name, implied in implied_requirements(get_section(doc, SERVICE)).items():
        body = templates.get(name)
        if is_default(body):
            continue
        written = written_requirements(mapping(body).get("requirements"))
        refused: set[str] | None = None
        for req, definition, target in implied:
            if target is not None or req not in written or is_optional(definition):
                continue
            if definition.get("node_filter") is not None:
                if refused is None:  # its filter refused: Unfurl stops there
                    # start-up: as validate's _node_filters (a document with a node_filter)
                    from unfurl_lite.load import node_filter_checks

                    refused = node_filter_checks.refused_requirements(
                        name, mapping(body), get_section(doc, SERVICE))
                if req in refused:
                    continue
            index, value = written[req]
            node = requirement_target(value)
            path = (*TOPOLOGY, "node_templates", name, "requirements", index)
            if node is not None and (node in node_types or node in NORMATIVE_NODE_TYPES):
                others = type_candidates(name, node, None, templates, node_types)
                yield problem_at(
                    doc, path, file,
                    f'Could not find target template "{node}" for requirement "{req}" in '
                    f'node template "{name}" (' + (
                        f"none of the templates of that type ({', '.join(others)}) passes "
                        "its node_filter with a capability it may connect to" if others
                        else "no other template is of that type") + ")",
                    f"add a template of type {node} that it passes, name the template it "
                    "requires, or make it optional (occurrences: [0, 1])")
            elif node is None and definition.get("node") is None and (
                    definition.get("capability") is None and not definition.get("node_filter")):
                yield problem_at(
                    doc, path, file,
                    f'requirement "{req}" of node "{name}" must specify a node_filter, a node '
                    f'or a capability (in node template "{name}"; its relationship type '
                    "declares no valid_target_types)",
                    "name the template it requires (`node: TEMPLATE`), or make it optional "
                    "(occurrences: [0, 1])")
            elif node is None and definition.get("node") is None:
                yield problem_at(
                    doc, path, file,
                    f'No matching target template found for requirement "{req}" in node '
                    f'template "{name}"',
                    "name the template it requires, add a template with the capability it "
                    "asks for, or make it optional (occurrences: [0, 1])")


def _requirement_cycles(doc: Any, file: str) -> Iterator[Problem]:
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    graph = {
        name: [t for _, _, t in requirements_of(body) if t in templates]
        for name, body in templates.items()
    }
    for cycle in find_cycles(graph):
        first = next(i for i, _, t in requirements_of(templates[cycle[0]]) if t == cycle[1])
        yield problem_at(
            doc, (*TOPOLOGY, "node_templates", cycle[0], "requirements", first), file,
            f"requirement cycle: {' -> '.join(cycle)} is not supported (Unfurl 1.2.0 deploys "
            "such templates in their written order, warns that a target \"should have already "
            "been created\" and leaves the requirement without its relationship)",
            "templates cannot depend on each other in a loop; remove one requirement",
        )


#: the most templates a chain of hosts may have above its innermost template: about the
#: longest Unfurl 1.2.0 deploys (at 150 it fails with "maximum recursion depth exceeded").
#: The status nests each instance under its host's, two levels a host: such a chain's
#: status stays within the guard's depth limit (load/guard.MAX_DEPTH), so it reads back
MAX_HOST_CHAIN = 140


def _host_chains(doc: Any, file: str) -> Iterator[Problem]:
    """A chain of more than MAX_HOST_CHAIN hosts (each template hosted on the next),
    reported at the innermost template's host requirement. Walked with its own stack; a
    loop of hosts is left to :func:`_requirement_cycles`."""
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    host_of: dict[str, tuple[str, int]] = {}
    for name, body in templates.items():
        requirements = mapping(body).get("requirements")
        for index, req, target in requirements_of(body):
            entry = requirements[index] if is_list(requirements) else None
            if target in templates and _is_host(req, mapping(entry).get(req)):
                host_of[name] = (target, index)
                break
    if len(host_of) <= MAX_HOST_CHAIN:
        return
    above: dict[str, int] = {}  # template -> how many hosts are above it
    for name in host_of:
        path: list[str] = []
        current = name
        while current in host_of and current not in above and current not in path:
            path.append(current)
            current = host_of[current][0]
        if current in path:  # a loop of hosts
            above.update(dict.fromkeys(path, 0))
            continue
        count = above.get(current, 0)
        for step in reversed(path):
            count += 1
            above[step] = count
    hosts = {target for target, _ in host_of.values()}
    for name, count in above.items():
        if count <= MAX_HOST_CHAIN or name in hosts:
            continue
        chain = [name]
        while len(chain) < 3:
            chain.append(host_of[chain[-1]][0])
        yield problem_at(
            doc, (*TOPOLOGY, "node_templates", name, "requirements", host_of[name][1]), file,
            f"a chain of {count} hosts above {name!r} ({' -> '.join(chain)} -> ...) is longer "
            f"than {MAX_HOST_CHAIN}: Unfurl 1.2.0 fails on such a chain (\"maximum "
            "recursion depth exceeded\"), and the status, which nests each instance under "
            "its host's, would be too deeply nested to read back",
            f"host each template on a real host, at most {MAX_HOST_CHAIN} deep; for an order "
            "alone use a `dependency` requirement",
        )


def _is_host(requirement: str, value: Any) -> bool:
    """The model's test (model/entities.Requirement.is_host) on a requirement as written."""
    relationship = mapping(value).get("relationship")
    if is_map(relationship):
        relationship = relationship.get("type")
    return requirement == "host" or (isinstance(relationship, str) and relationship.endswith(
        ("HostedOn", "contained_in")))


def _topology_root(doc: Any, file: str) -> Iterator[Problem]:
    """Unfurl's ``root: {node: NAME}`` (its alias of ``substitution_mappings``): the one
    form that means something in an ensemble of its own. Its other keys map a topology
    onto a node of an outer one, which is refused like ``substitution_mappings``."""
    topology = get_section(doc, TOPOLOGY)
    if "root" not in topology or topology["root"] is None:
        return
    root = topology["root"]
    # ``substitution_mappings: {node: NAME}`` is read as ``root`` (load/structure.py)
    section = "substitution_mappings" if root is topology.get("substitution_mappings") \
        else "root"
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    for key in mapping(root):
        if key != "node":
            yield problem_at(
                doc, (*TOPOLOGY, "root", key), file,
                f"`root: {{{key}: ...}}` (Unfurl's substitution mapping) is not supported",
                "give only `root: {node: TEMPLATE}`: the template deployed with what it "
                "requires")
    node = mapping(root).get("node")
    if not isinstance(node, str):
        yield problem_at(doc, (*TOPOLOGY, "root"), file,
                         "`root:` needs `node:` naming a node template",
                         "write `root: {node: TEMPLATE}`")
    elif node not in templates:
        yield problem_at(doc, (*TOPOLOGY, section, "node"), file,
                         f"unknown node {node!r} declared as the topology's root",
                         did_you_mean(node, templates)
                         or f"node templates are: {', '.join(map(str, templates))}")


def _artifact_properties(doc: Any, file: str) -> Iterator[Problem]:
    """An artifact's ``properties`` must be declared by its artifact type (the document's
    ``artifact_types`` lineage; TOSCA's own ``tosca.artifacts.*`` declare none): Unfurl
    1.2.0 refuses the ensemble otherwise (UnknownFieldError). A type declared nowhere here
    is not judged."""
    service = get_section(doc, SERVICE)
    artifact_types = mapping(service.get("artifact_types"))
    owners = [(("spec", "service_template", "node_types"), mapping(service.get("node_types"))),
              ((*TOPOLOGY, "node_templates"), get_section(doc, (*TOPOLOGY, "node_templates")))]
    for section, bodies in owners:
        for owner, body in bodies.items():
            artifacts = mapping(body).get("artifacts")
            if artifacts:  # few have any: the path is made for those only
                yield from _undeclared_artifact_properties(
                    doc, file, (*section, owner), artifacts, artifact_types)


def _undeclared_artifact_properties(doc: Any, file: str, path: tuple[Any, ...],
                                    artifacts: Any, artifact_types: Any) -> Iterator[Problem]:
    for name, artifact in mapping(artifacts).items():
        given = mapping(mapping(artifact).get("properties"))
        type_name = mapping(artifact).get("type") or "tosca.artifacts.Root"
        declared = _artifact_type_properties(type_name, artifact_types)
        if not given or declared is None:
            continue
        for prop in given:
            if prop not in declared:
                yield problem_at(
                    doc, (*path, "artifacts", name, "properties", prop), file,
                    f"artifact {name!r}: property {prop!r} is not declared by its type "
                    f"{type_name!r} (Unfurl: unknown field)",
                    "declare it under the artifact type's `properties` (artifact_types),"
                    " or remove it")


def _artifact_type_properties(type_name: Any, artifact_types: Any) -> set[str] | None:
    """The property names an artifact type and its ancestors declare; None when a type
    in its lineage is neither the document's nor TOSCA's."""
    names: set[str] = set()
    for name in ancestry(type_name, lambda t: parents(
            mapping(artifact_types.get(t)).get("derived_from"))):
        body = artifact_types.get(name)
        if body is None:
            if not name.startswith("tosca.artifacts."):
                return None
            continue
        names.update(mapping(mapping(body).get("properties")))
    return names
