"""Is a merged ensemble something we can plan from? Every problem at once, located.

Two layers: the JSON Schema says what shape each section has; the semantic checks then
look across sections (requirement targets, types, cycles, operation names), which a
schema cannot. Both report into :class:`Problem` so the user gets one list, in file order.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import Problem
from unfurl_lite.load import merge, schemacheck, yamlio
from unfurl_lite.model.entities import (
    INTERFACE_ALIASES,
    INTERFACE_OPERATIONS,
    OPERATION_KINDS,
    canonical_interface,
)

if TYPE_CHECKING:  # jsonschema is imported only to explain a document the quick check refused
    import jsonschema
    from jsonschema.exceptions import ValidationError

SERVICE = ("spec", "service_template")
TOPOLOGY = (*SERVICE, "topology_template")

_TOSCA_NODES = (
    "Root", "Compute", "SoftwareComponent", "WebServer", "WebApplication", "DBMS",
    "Database", "ObjectStorage", "BlockStorage", "Container.Runtime",
    "Container.Application", "LoadBalancer", "network.Network", "network.Port",
    "Storage.ObjectStorage", "Storage.BlockStorage", "Abstract.Compute",
    "Abstract.Storage", "Abstract.Directory",
)
_UNFURL_NODES = (
    "Installer", "Installation", "Default", "Generic", "Repository", "LocalRepository",
    "CloudAccount", "CloudObject",
)
#: Unfurl types that come with operations of their own (Unfurl's k8s, DNS and Docker
#: configurators, its Terraform/Ansible installers): a template of one would run nothing
#: here, so it is refused by name rather than accepted as a plain type
_UNFURL_TYPES_WITH_OPERATIONS = (
    "K8sCluster", "K8sNamespace", "K8sRawResource", "K8sSecretResource", "DNSZone",
    "ContainerService", "ContainerHost", "ContainerImage", "Installer.Terraform",
    "Installer.Ansible", "Installer.Helm", "Installer.Docker", "Installer.Kompose",
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
_INTERFACE_KEYS = frozenset({"type", "description", "inputs", "metadata", "operations",
                             "notifications", "implementation", "outputs"})


def check(doc: Any, file: str) -> list[Problem]:
    """Every problem in a merged ensemble document, sorted by file and line; [] if valid."""
    semantic = semantic_problems(doc, file)
    named = {(p.line, p.column) for p in semantic if p.message.startswith("Cloudify's")}
    problems = [p for p in schema_problems(doc, file) if (p.line, p.column) not in named]
    problems += semantic
    return sorted(problems, key=lambda p: (p.file or "", p.line or 0, p.column or 0))


# --- locating -------------------------------------------------------------------------


def locate(doc: Any, path: tuple[Any, ...] | list[Any], file: str) -> tuple[str, int | None,
                                                                             int | None]:
    """(file, line, column) of a path in the merged document, down to the deepest known node."""
    node, container, key = doc, None, None
    for part in path:
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        ):
            container, key, node = node, part, node[part]
        else:
            break
    if container is None:
        line, column = yamlio.location(node)
        return merge.source_file(node) or file, line, column
    line, column = yamlio.location(container, key)
    return merge.source_file(container, key) or file, line, column


def problem_at(
    doc: Any, path: tuple[Any, ...] | list[Any], file: str, message: str, hint: str | None
) -> Problem:
    where, line, column = locate(doc, path, file)
    return Problem(message, file=where, line=line, column=column,
                   path=merge.format_path(list(path)) or None, hint=hint)


def did_you_mean(word: str, choices: Any) -> str | None:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


# --- schema layer ---------------------------------------------------------------------


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("unfurl_lite").joinpath("schema/ensemble.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(_schema())


@cache
def _quick_check() -> schemacheck.Check:
    try:
        return schemacheck.compile_schema(_schema())
    except schemacheck.Unsupported:
        return lambda doc: False  # jsonschema decides everything


def schema_problems(doc: Any, file: str) -> Iterator[Problem]:
    plain = doc if type(doc) is dict else yamlio.to_plain(doc)
    if _quick_check()(plain):
        return
    seen: set[tuple[str | None, str]] = set()
    for error in _validator().iter_errors(plain):
        for problem in (p for leaf in _leaves(error) for p in _explain(doc, file, leaf)):
            if (problem.path, problem.message) not in seen:
                seen.add((problem.path, problem.message))
                yield problem


def _leaves(error: ValidationError) -> list[ValidationError]:
    """For anyOf/oneOf, the errors of the branch that fits best, not "no branch fit".

    Branches whose type does not even match the value are ignored: a mapping with a typo
    should hear about the typo, not that it is not a string. All errors of the chosen
    branch are kept, so two bad operations in one interface are both reported.
    """
    if not error.context:
        return [error]
    depth = len(error.absolute_path)
    relevant = [
        e for e in error.context if not (e.validator == "type" and len(e.absolute_path) == depth)
    ]
    if not relevant:
        return [error]
    from jsonschema.exceptions import relevance

    branch = max(relevant, key=relevance).relative_schema_path[0]
    chosen = [e for e in relevant if e.relative_schema_path[0] == branch]
    return [leaf for e in chosen for leaf in _leaves(e)]


def _explain(doc: Any, file: str, error: ValidationError) -> Iterator[Problem]:
    path = list(error.absolute_path)
    schema: Any = error.schema
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = schema.get("properties", {})
        for key in error.instance:
            if key not in allowed:
                hint = did_you_mean(key, allowed) or f"allowed keys: {', '.join(allowed)}"
                yield problem_at(doc, [*path, key], file, f"unknown key {key!r}", hint)
        return
    yield problem_at(doc, path, file, _message(error), _hint(error))


def _message(error: ValidationError) -> str:
    value: Any = error.instance
    expected: Any = error.validator_value
    if error.validator == "type":
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {_article(expected)}, got {_kind(value)} {_short(value)}"
    if error.validator == "required":
        missing = [k for k in expected if k not in _mapping(value)]
        return f"missing required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if error.validator == "enum":
        return f"{_short(value)} is not one of {', '.join(map(str, expected))}"
    if error.validator == "pattern":
        return f"{_short(value)} does not look like a changeId"
    if error.validator in ("minProperties", "maxProperties"):
        return "a requirement must be a mapping with exactly one key (its name)"
    if error.validator in ("anyOf", "oneOf") and error.context:
        types: list[Any] = [e.validator_value for e in error.context if e.validator == "type"]
        names = [t for group in types for t in (group if isinstance(group, list) else [group])]
        if names:
            wanted = " or ".join(dict.fromkeys(map(str, names)))
            return f"expected {_article(wanted)}, got {_kind(value)} {_short(value)}"
    return error.message


def _hint(error: ValidationError) -> str | None:
    if error.validator == "required" and list(error.absolute_path)[-1:] == ["implementation"]:
        return "write `implementation: {className: Shell}` or a shell command string"
    if error.validator == "enum":
        choices: Any = error.validator_value
        return did_you_mean(str(error.instance), choices)
    if error.validator in ("minProperties", "maxProperties"):
        return "write `- host: server` or `- host: {node: server, relationship: ...}`"
    if error.validator == "pattern":
        return "changeIds are 'A' followed by 11 letters or digits"
    return None


def _article(name: str) -> str:
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def _kind(value: Any) -> str:
    names = {dict: "mapping", list: "list", str: "string", bool: "boolean", type(None): "null",
             int: "integer", float: "number"}
    return names.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, dict | list) else ""
    return text if len(text) <= 40 else text[:37] + "..."


# --- semantic layer -------------------------------------------------------------------


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _get(doc: Any, path: tuple[Any, ...]) -> dict:
    node = doc
    for part in path:
        node = _mapping(node).get(part)
    return _mapping(node)


def semantic_problems(doc: Any, file: str) -> list[Problem]:
    problems: list[Problem] = list(_unsupported_structure(doc, file))
    view = _with_types_section(doc)
    for check_one in (_unknown_types, _type_cycles, _requirement_targets,
                      _requirement_cycles, _undeclared_interfaces, _untyped_type_interfaces,
                      _unknown_operations, _unsupported_implementations,
                      _duplicate_templates, _workflows, _cloudify_unsupported,
                      _unknown_filters):
        problems += check_one(view, file)
    return problems


def _any_filter(value: dict[Any, Any] | list[Any]) -> bool:
    """Whether any string in the value could use a filter (the quick pass: most specs
    have none, and a large spec is mostly plain strings)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        for child in (item.values() if isinstance(item, dict) else item):
            if isinstance(child, str):
                if "|" in child and "{" in child:
                    return True
            elif isinstance(child, dict | list):
                stack.append(child)
    return False


def _unknown_filters(doc: Any, file: str) -> Iterator[Problem]:
    """A Jinja2 filter the template sandbox does not have would fail its task at run
    time; say so now, naming Unfurl's filters that are not supported here."""
    from unfurl_lite.expressions.filters import UNSUPPORTED, _known, unknown_filters

    spec = _mapping(doc).get("spec")
    if not isinstance(spec, dict | list) or not _any_filter(spec):
        return
    stack: list[tuple[tuple[Any, ...], Any]] = [(("spec",), spec)]
    found: list[tuple[tuple[Any, ...], str]] = []
    while stack:  # only containers are pushed: a large spec is mostly plain strings
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, str):
                if "|" in item and "{" in item:
                    found += (((*path, key), name) for name in
                              dict.fromkeys(unknown_filters(item)))
            elif isinstance(item, dict | list):
                stack.append(((*path, key), item))
    for path, name in found:
        message = (f"Unfurl's filter {name!r} is not supported" if name in UNSUPPORTED
                   else f"unknown filter {name!r}: not supported")
        hint = did_you_mean(name, sorted(_known())) or (
            "the filters here are Jinja2's built-ins and Unfurl's eval, ref, map_value, "
            "sensitive, abspath")
        yield problem_at(doc, path, file, message, hint)


def _with_types_section(doc: Any) -> Any:
    """``doc`` with the node and relationship types of Unfurl's ``types:`` section seen as
    if declared under ``node_types`` and ``relationship_types`` (a shallow view)."""
    from unfurl_lite.load import structure

    service = _get(doc, SERVICE)
    if not _mapping(service.get("types")):
        return doc
    nodes, relationships = structure.split_types(service["types"])
    view_service = dict(service)
    view_service["node_types"] = {**nodes, **_mapping(service.get("node_types"))}
    view_service["relationship_types"] = {
        **relationships, **_mapping(service.get("relationship_types"))
    }
    return {**doc, "spec": {**_mapping(doc.get("spec")), "service_template": view_service}}


#: Unfurl sections unfurl-lite refuses by name, with why and what to do
_UNSUPPORTED_SECTIONS: dict[tuple[str, ...], tuple[str, str]] = {
    ("changes",): (
        "an inline `changes:` log (Unfurl records jobs in ensemble.yaml when it has no "
        "jobsLog) is not supported",
        "remove `changes:`; unfurl-lite records every job in jobs.tsv and changes/",
    ),
    ("spec", "discovered"): (
        "Unfurl's `spec.discovered` (discovered node templates) is not supported",
        "declare the templates under node_templates, or run `unfurl discover`",
    ),
    ("spec", "resource_templates"): (
        "Unfurl's `spec.resource_templates` is not supported",
        "declare the templates under node_templates",
    ),
    ("spec", "deployment_blueprints"): (
        "Unfurl's `spec.deployment_blueprints` is not supported",
        "merge the blueprint's templates into the service template",
    ),
    ("spec", "service_template", "decorators"): (
        "Unfurl's `decorators:` (properties and requirements merged into the templates a "
        "query matches) is not supported",
        "write those properties and requirements into the templates themselves",
    ),
    ("spec", "service_template", "topology_template", "substitution_mappings"): (
        "TOSCA `substitution_mappings` (a topology standing in for a node) is not supported",
        "remove it: an ensemble's templates are deployed directly",
    ),
}


def _unsupported_structure(doc: Any, file: str) -> Iterator[Problem]:
    for path, (message, hint) in _UNSUPPORTED_SECTIONS.items():
        parent = _get(doc, path[:-1])
        if path[-1] in parent and (path == ("changes",) or parent[path[-1]]):
            yield problem_at(doc, path, file, message, hint)
    yield from _unsupported_directives(doc, file)
    yield from _missing_requirements(doc, file)


def _missing_requirements(doc: Any, file: str) -> Iterator[Problem]:
    """A required requirement nothing matches: Unfurl refuses to plan ("Node template X is
    missing requirements: R")."""
    from unfurl_lite.load import structure

    for name, implied in structure.implied_requirements(_get(doc, SERVICE)).items():
        missing = [r for r, d, t in implied if t is None and not structure.is_optional(d)]
        if missing:
            yield problem_at(
                doc, (*TOPOLOGY, "node_templates", name), file,
                f"node template {name!r} is missing requirements: {', '.join(missing)}",
                f"connect it (`requirements: [{{{missing[0]}: TEMPLATE}}]`), add a template "
                "with the capability it asks for, or make it optional (occurrences: [0, 1])",
            )


#: template directives built here (Unfurl's ``protected``: undeploy leaves the instance)
SUPPORTED_DIRECTIVES = frozenset({"protected"})
#: what Unfurl does with the directives unfurl-lite refuses, for the message
_DIRECTIVE_MEANING = {
    "dependent": "instantiated only when another template requires it",
    "select": "selects an existing instance from an imported ensemble",
    "discover": "discovered by deploy instead of created",
    "default": "used only when no other template matches a requirement",
    "check": "checked before deploy decides what to do",
    "virtual": "never instantiated (abstract)",
    "substitute": "substituted by a nested topology",
}


def _unsupported_directives(doc: Any, file: str) -> Iterator[Problem]:
    for name, body in _get(doc, (*TOPOLOGY, "node_templates")).items():
        directives = _mapping(body).get("directives")
        for index, directive in enumerate(directives if isinstance(directives, list) else ()):
            if isinstance(directive, str) and directive in SUPPORTED_DIRECTIVES:
                continue
            meaning = _DIRECTIVE_MEANING.get(str(directive))
            what = f" (in Unfurl: {meaning})" if meaning else ""
            yield problem_at(
                doc, (*TOPOLOGY, "node_templates", name, "directives", index), file,
                f"template directive {directive!r} on {name!r}{what} is not supported",
                "remove it; unfurl-lite supports the directives: "
                + ", ".join(sorted(SUPPORTED_DIRECTIVES)),
            )


def _workflows(doc: Any, file: str) -> Iterator[Problem]:
    from unfurl_lite.load import workflows

    return workflows.problems(doc, file)


def _imports(doc: Any) -> bool:
    return bool(_get(doc, SERVICE).get("imports"))


def known_type(name: str, defined: Any) -> bool:
    """Defined in this document or normative. A type that only an ``imports:`` entry could
    define is unknown: unfurl-lite does not load TOSCA imports, and a template of a type it
    cannot see would run no operation at all."""
    return name in defined or name in NORMATIVE_NODE_TYPES


def _unknown_types(doc: Any, file: str) -> Iterator[Problem]:
    defined = _get(doc, (*SERVICE, "node_types"))
    imports = _imports(doc)
    for name, body in _get(doc, (*TOPOLOGY, "node_templates")).items():
        type_name = _mapping(body).get("type")
        if isinstance(type_name, str) and not known_type(type_name, defined):
            yield _unknown_type(doc, file, (*TOPOLOGY, "node_templates", name, "type"),
                                f"node template {name!r}", type_name, defined, imports)
    for name, body in defined.items():
        parent = _mapping(body).get("derived_from")
        if isinstance(parent, str) and not known_type(parent, defined):
            yield _unknown_type(doc, file, (*SERVICE, "node_types", name, "derived_from"),
                                f"node type {name!r}", parent, defined, imports)


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
        what += (" (TOSCA `imports:` are not supported: unfurl-lite does not load them, so "
                 "no imported type is known)")
        hint = ("define the type under spec.service_template.node_types, or bring its "
                "definition in with `+include`")
    return problem_at(doc, path, file, what, hint)


def _type_cycles(doc: Any, file: str) -> Iterator[Problem]:
    for section in ("node_types", "relationship_types"):
        for name, body in _get(doc, (*SERVICE, section)).items():
            if isinstance(_mapping(body).get("derived_from"), list):
                yield problem_at(
                    doc, (*SERVICE, section, name, "derived_from"), file,
                    f"type {name!r} derives from a list of types (Unfurl's multiple "
                    "inheritance), which is not supported",
                    "derive from one type and copy what it needs from the others",
                )
        types = _get(doc, (*SERVICE, section))
        parents = {n: _mapping(b).get("derived_from") for n, b in types.items()}
        graph = {n: [p] if isinstance(p, str) and p in types else [] for n, p in parents.items()}
        for cycle in find_cycles(graph):
            yield problem_at(doc, (*SERVICE, section, cycle[0], "derived_from"), file,
                             f"derived_from cycle: {' -> '.join(cycle)}",
                             "a type cannot be its own ancestor")


def requirement_target(value: Any) -> str | None:
    """The node a requirement names, in the short (``host: x``) or long form."""
    if isinstance(value, str):
        return value
    node = _mapping(value).get("node")
    return node if isinstance(node, str) else None


def _requirements(body: Any) -> Iterator[tuple[int, str, str]]:
    requirements = _mapping(body).get("requirements")
    for index, item in enumerate(requirements if isinstance(requirements, list) else []):
        if isinstance(item, dict) and len(item) == 1:
            ((name, value),) = item.items()
            target = requirement_target(value)
            if target:
                yield index, str(name), target


def _requirement_targets(doc: Any, file: str) -> Iterator[Problem]:
    templates = _get(doc, (*TOPOLOGY, "node_templates"))
    types = _get(doc, (*SERVICE, "node_types"))
    for name, body in templates.items():
        for index, req, target in _requirements(body):
            if target in templates or target in types or target in NORMATIVE_NODE_TYPES:
                continue
            hint = did_you_mean(target, templates) or (
                f"node templates are: {', '.join(templates)}"
            )
            yield problem_at(
                doc, (*TOPOLOGY, "node_templates", name, "requirements", index), file,
                f"requirement {req!r} of {name!r} names unknown node template {target!r}", hint,
            )


def _requirement_cycles(doc: Any, file: str) -> Iterator[Problem]:
    templates = _get(doc, (*TOPOLOGY, "node_templates"))
    graph = {
        name: [t for _, _, t in _requirements(body) if t in templates]
        for name, body in templates.items()
    }
    for cycle in find_cycles(graph):
        first = next(i for i, _, t in _requirements(templates[cycle[0]]) if t == cycle[1])
        yield problem_at(
            doc, (*TOPOLOGY, "node_templates", cycle[0], "requirements", first), file,
            f"requirement cycle: {' -> '.join(cycle)}",
            "templates cannot depend on each other in a loop; remove one requirement",
        )


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Each distinct cycle once, as ``[a, b, a]``, starting from its first node in graph order."""
    order = {name: i for i, name in enumerate(graph)}
    found: dict[tuple[str, ...], list[str]] = {}

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            loop = trail[trail.index(node):]
            start = min(range(len(loop)), key=lambda i: order.get(loop[i], 0))
            loop = loop[start:] + loop[:start]
            found.setdefault(tuple(loop), [*loop, loop[0]])
            return
        if node in done:
            return
        for child in graph.get(node, []):
            visit(child, [*trail, node])
        done.add(node)

    done: set[str] = set()
    for name in graph:
        visit(name, [])
    return list(found.values())


def _interface_owners(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, interfaces mapping) of everything that can declare operations."""
    for section in ("node_types", "relationship_types"):
        for name, body in _get(doc, (*SERVICE, section)).items():
            yield (*SERVICE, section, name, "interfaces"), _mapping(body).get("interfaces")
    for section in ("node_templates", "relationship_templates"):
        for name, body in _get(doc, (*TOPOLOGY, section)).items():
            base = (*TOPOLOGY, section, name)
            yield (*base, "interfaces"), _mapping(body).get("interfaces")
            if section == "node_templates":
                for index, req, _ in _requirements(body):
                    value = _mapping(body)["requirements"][index][req]
                    relationship = _mapping(value).get("relationship")
                    yield ((*base, "requirements", index, req, "relationship", "interfaces"),
                           _mapping(relationship).get("interfaces"))


def _operations(body: Any) -> Iterator[tuple[tuple[str, ...], str]]:
    body = _mapping(body)
    for key in body:
        if key not in _INTERFACE_KEYS:
            yield (key,), key
    for key in _mapping(body.get("operations")):
        yield ("operations", key), key


#: Interfaces every node type has: TOSCA's Standard and Unfurl's Install (declared by
#: tosca.nodes.Root), and Cloudify's node interfaces (accepted on any node, see the docs).
NODE_INTERFACES = ("Standard", "Install", "Lifecycle", "Validation", "Monitoring")


#: Interfaces every relationship type has (Unfurl 1.2.0 accepts these on any relationship).
RELATIONSHIP_INTERFACES = ("Configure", "Install", "Standard", "RelationshipLifecycle")


def declared_interfaces(
    type_name: str, types: dict[str, Any], base: tuple[str, ...] = NODE_INTERFACES,
    normative: Callable[[str], bool] = NORMATIVE_NODE_TYPES.__contains__,
) -> set[str] | None:
    """The interfaces a type declares, with its ancestors'; None when a type in the chain
    is not defined here (an import may declare more)."""
    declared = set(base)
    seen: set[str] = set()
    while type_name in types and type_name not in seen:
        seen.add(type_name)
        body = _mapping(types[type_name])
        declared |= {canonical_interface(str(i)) for i in _mapping(body.get("interfaces"))}
        parent = body.get("derived_from")
        if not isinstance(parent, str):
            return declared
        type_name = parent
    if type_name in seen or normative(type_name):
        return declared
    return None


def _normative_relationship(name: str) -> bool:
    return name.startswith(("tosca.relationships.", "cloudify.relationships.")) or name in (
        "DependsOn", "HostedOn", "ConnectsTo", "AttachesTo", "RoutesTo")


def _relationship_owners(doc: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, relationship body) of relationship templates and inline relationships."""
    for name, body in _get(doc, (*TOPOLOGY, "relationship_templates")).items():
        yield (*TOPOLOGY, "relationship_templates", name), body
    for name, body in _get(doc, (*TOPOLOGY, "node_templates")).items():
        for index, req, _ in _requirements(body):
            value = _mapping(body)["requirements"][index][req]
            relationship = _mapping(value).get("relationship")
            if isinstance(relationship, dict):
                yield ((*TOPOLOGY, "node_templates", name, "requirements", index, req,
                        "relationship"), relationship)


def _undeclared(doc: Any, file: str, path: tuple[Any, ...], body: Any, type_name: str,
                declared: set[str], types: dict[str, Any], kind: str) -> Iterator[Problem]:
    for interface in _mapping(_mapping(body).get("interfaces")):
        if canonical_interface(str(interface)) in declared or interface == "defaults":
            continue
        spelled = sorted(declared | {a for a, c in INTERFACE_ALIASES.items() if c in declared})
        where = (f"in {kind}_types: {type_name}: interfaces: {interface}: {{...}}"
                 if type_name in types else
                 f"in a {kind} type derived from {type_name} ({kind}_types: MyType: "
                 f"{{derived_from: {type_name}, interfaces: {{{interface}: {{...}}}}}}) "
                 "and give the template that type")
        hint = did_you_mean(str(interface), spelled) or (
            f"declare it {where}; {type_name} declares {', '.join(sorted(declared))}"
        )
        yield problem_at(doc, (*path, "interfaces", interface), file,
                         f"interface {interface!r} is not declared by type {type_name!r}", hint)


def _undeclared_interfaces(doc: Any, file: str) -> Iterator[Problem]:
    """TOSCA lets a template assign operations only to interfaces its type declares; an
    undeclared one (``Standrad:``) would otherwise be silently never run."""
    node_types = _get(doc, (*SERVICE, "node_types"))
    for name, body in _get(doc, (*TOPOLOGY, "node_templates")).items():
        type_name = _mapping(body).get("type")
        declared = declared_interfaces(type_name, node_types) if isinstance(
            type_name, str) else None
        if declared is not None:
            yield from _undeclared(doc, file, (*TOPOLOGY, "node_templates", name), body,
                                   str(type_name), declared, node_types, "node")
    relationship_types = _get(doc, (*SERVICE, "relationship_types"))
    for path, body in _relationship_owners(doc):
        type_name = _mapping(body).get("type")
        if not isinstance(type_name, str):
            type_name = "tosca.relationships.Root"
        declared = declared_interfaces(
            type_name, relationship_types, RELATIONSHIP_INTERFACES, _normative_relationship)
        if declared is not None:
            yield from _undeclared(doc, file, path, body, type_name, declared,
                                   relationship_types, "relationship")


def _untyped_type_interfaces(doc: Any, file: str) -> Iterator[Problem]:
    """A type's interface with no ``type:`` must be a well-known one: ``Standrad:`` in a
    node type would declare a new, never-run interface (Unfurl: "Interface type ... not
    found")."""
    known = set(INTERFACE_OPERATIONS) | set(INTERFACE_ALIASES)
    for section in ("node_types", "relationship_types"):
        for name, body in _get(doc, (*SERVICE, section)).items():
            for interface, definition in _mapping(_mapping(body).get("interfaces")).items():
                if str(interface) in known or interface == "defaults" or _mapping(
                        definition).get("type"):
                    continue
                hint = did_you_mean(str(interface), sorted(known)) or (
                    f"give its interface type: {interface}: {{type: my.interfaces."
                    f"{interface}}}")
                owner = f"{section[:-1].replace('_', ' ')} {name!r}"
                yield problem_at(doc, (*SERVICE, section, name, "interfaces", interface),
                                 file, f"interface {interface!r} of {owner} has no type and is "
                                 "not a TOSCA, Unfurl or Cloudify interface", hint)


def _unknown_operations(doc: Any, file: str) -> Iterator[Problem]:
    for path, interfaces in _interface_owners(doc):
        for interface, body in _mapping(interfaces).items():
            known = INTERFACE_OPERATIONS.get(canonical_interface(str(interface)))
            if known is None:
                continue
            for subpath, op in _operations(body):
                if op not in known:
                    hint = did_you_mean(op, [*known, *_INTERFACE_KEYS]) or (
                        f"{interface} declares {', '.join(known)}")
                    yield problem_at(doc, (*path, interface, *subpath), file,
                                     f"unknown operation {op!r} on interface {interface!r}", hint)


#: Cloudify interfaces that exist to drive Cloudify's agents, which unfurl-lite has none of
CLOUDIFY_AGENT_INTERFACES = ("cloudify.interfaces.monitoring_agent",
                             "cloudify.interfaces.cloudify_agent", "cloudify.interfaces.host")
_RELATIONSHIP_INTERFACE_KEYS = ("source_interfaces", "target_interfaces")
_TOSCA_RELATIONSHIP_HINT = ("write the operations as TOSCA relationship interfaces: a requirement "
                            "with `relationship: {type: ..., interfaces: {Configure: {operations: "
                            "{add_target: ...}}}}` (see docs/workflows.md, Lifecycle interfaces)")


def _cloudify_unsupported(doc: Any, file: str) -> Iterator[Problem]:
    """Cloudify constructs that would otherwise be accepted and never run, refused by name."""
    for path, interfaces in _interface_owners(doc):
        for interface in _mapping(interfaces):
            if str(interface) in CLOUDIFY_AGENT_INTERFACES:
                yield problem_at(
                    doc, (*path, interface), file,
                    f"Cloudify's agent interface {interface!r} is not supported: unfurl-lite "
                    "installs no agents, so its operations would never run",
                    "use cloudify.interfaces.monitoring (start/stop) or "
                    "cloudify.interfaces.lifecycle (poststart/prestop) for the same commands",
                )
    templates = _get(doc, (*TOPOLOGY, "node_templates"))
    for name, body in templates.items():
        base = (*TOPOLOGY, "node_templates", name)
        if "relationships" in _mapping(body):
            yield problem_at(
                doc, (*base, "relationships"), file,
                f"Cloudify's `relationships:` list (on {name!r}) is not supported",
                "write each relationship as a TOSCA requirement (`requirements: [{dependency: "
                "{node: db, relationship: ...}}]`, `host:` for contained_in)",
            )
        for index, req, _ in _requirements(body):
            relationship = _mapping(_mapping(_mapping(body)["requirements"][index][req])
                                    .get("relationship"))
            for key in _RELATIONSHIP_INTERFACE_KEYS:
                if key in relationship:
                    yield problem_at(
                        doc, (*base, "requirements", index, req, "relationship", key), file,
                        f"Cloudify's {key!r} is not supported", _TOSCA_RELATIONSHIP_HINT,
                    )
    for section in (("relationship_templates",), ):
        for name, body in _get(doc, (*TOPOLOGY, *section)).items():
            for key in _RELATIONSHIP_INTERFACE_KEYS:
                if key in _mapping(body):
                    yield problem_at(
                        doc, (*TOPOLOGY, *section, name, key), file,
                        f"Cloudify's {key!r} is not supported", _TOSCA_RELATIONSHIP_HINT,
                    )


#: Unfurl's configurators that unfurl-lite does not implement, by their short names
UNFURL_ONLY_CONFIGURATORS = (
    "Ansible", "Terraform", "Kompose", "Supervisor", "DNS", "Octodns", "Cmd", "Cluster",
    "Connection", "Resource", "CheckGoogleCloudConnection", "PythonPackageCheck",
)
#: implementation keys Unfurl 1.2.0 acts on that unfurl-lite does not: refused, never ignored
UNFURL_ONLY_IMPLEMENTATION_KEYS = {
    "operation_host": "runs the operation on another host; here operations run on this "
                      "machine, or on the Celery worker their routing picks",
    "dependencies": "installs artifacts before the operation runs",
}
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*(?::|\.)[A-Za-z_]\w*$")


def _unsupported_implementations(doc: Any, file: str) -> Iterator[Problem]:
    """An operation that would only fail when the job reaches it is refused up front."""
    for path, interfaces in _interface_owners(doc):
        for interface, body in _mapping(interfaces).items():
            for subpath, _ in _operations(body):
                definition: Any = _mapping(body)
                for part in subpath:
                    definition = _mapping(definition).get(part)
                implementation = _mapping(definition).get("implementation")
                where = (*path, interface, *subpath, "implementation")
                why = _implementation_problem(implementation)
                if why is not None:
                    yield problem_at(doc, where, file, why, _IMPLEMENTATION_HINT)
                for key in _UNSUPPORTED_IMPLEMENTATION_KEYS:
                    if key in _mapping(implementation):
                        yield problem_at(
                            doc, (*where, key), file,
                            f"implementation key {key!r} is not supported by unfurl-lite",
                            "remove it (Unfurl's TOSCA extension; no equivalent here)",
                        )


#: keys Unfurl allows in an implementation that unfurl-lite does not build
_UNSUPPORTED_IMPLEMENTATION_KEYS = ("preConditions", "invoke")


_IMPLEMENTATION_HINT = ("use `className: Shell` with the equivalent command (for example "
                        "`ansible-playbook site.yml`), `Template`, `Delegate`, or a Python "
                        "operation `package.module:function`")


def _implementation_problem(implementation: Any) -> str | None:
    if isinstance(implementation, str):
        name = implementation.strip()
        if name in UNFURL_ONLY_CONFIGURATORS:
            return f"Unfurl's {name} configurator is not supported by unfurl-lite"
        return None
    for key, what in UNFURL_ONLY_IMPLEMENTATION_KEYS.items():
        if _mapping(implementation).get(key) not in (None, [], {}):
            return f"implementation key `{key}` (in Unfurl it {what}) is not supported"
    primary = _mapping(implementation).get("primary")
    if isinstance(primary, dict):
        return ("an inline artifact as `primary` is not supported: give a shell command, or "
                "`className`")
    if isinstance(primary, str) and primary.strip() in UNFURL_ONLY_CONFIGURATORS:
        return f"Unfurl's {primary.strip()} configurator is not supported by unfurl-lite"
    class_name = _mapping(implementation).get("className")
    if not isinstance(class_name, str) or class_name in OPERATION_KINDS:
        return None
    if class_name.startswith("unfurl.") or class_name in UNFURL_ONLY_CONFIGURATORS:
        return f"Unfurl's configurator {class_name!r} is not supported by unfurl-lite"
    if not _CALLABLE.match(class_name):
        return (f"className {class_name!r} is neither a built-in operation (Shell, Template, "
                "Delegate) nor a Python callable (package.module:function)")
    return None


def _duplicate_templates(doc: Any, file: str) -> Iterator[Problem]:
    """Two files that each define a template in full (with a type) clash; an override that
    only changes some keys of an included template is what merging is for."""
    templates = _get(doc, (*TOPOLOGY, "node_templates"))
    for name in templates:
        full = [d for d in merge.merged_from(templates, name) if "type" in _mapping(d.value)]
        if len({d.file for d in full}) > 1:
            places = ", ".join(f"{d.file}:{d.line}" for d in full)
            yield problem_at(doc, (*TOPOLOGY, "node_templates", name), file,
                             f"node template {name!r} is defined more than once ({places})",
                             "rename one, or drop `type` from the one meant as an override")
