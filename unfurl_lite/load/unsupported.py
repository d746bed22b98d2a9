"""What validation refuses by name: Unfurl sections, directives, configurators and
implementation keys, and Cloudify constructs that unfurl-lite does not build. The rule:
a construct Unfurl or Cloudify defines is either built as they do, or refused here,
never accepted and ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from unfurl_lite.errors import Problem
from unfurl_lite.expressions.names import did_you_mean
from unfurl_lite.load.interface_checks import interface_owners, keyed_owners, operations_of
from unfurl_lite.load.problems import (
    SERVICE,
    TOPOLOGY,
    get_section,
    mapping,
    problem_at,
)
from unfurl_lite.load.structure import is_root_form, split_types
from unfurl_lite.load.type_checks import relationships_of
from unfurl_lite.model.entities import OPERATION_KINDS, canonical_interface
from unfurl_lite.model.lineage import lineage
from unfurl_lite.model.narrow import YAMLValue, is_list, is_map

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Unfurl sections unfurl-lite refuses by name, with why and what to do
_UNSUPPORTED_SECTIONS: dict[tuple[str, ...], tuple[str, str]] = {
    ("spec", "discovered"): (
        "Unfurl's `spec.discovered` (discovered node templates) is not supported",
        "declare the templates under node_templates, or run `unfurl discover`",
    ),
    ("spec", "resource_templates"): (
        "Unfurl's `spec.resource_templates` is not supported",
        "declare the templates under node_templates",
    ),
    ("spec", "service_template", "decorators"): (
        "Unfurl's `decorators:` (properties and requirements merged into the templates a "
        "query matches) is not supported",
        "write those properties and requirements into the templates themselves",
    ),
    ("spec", "service_template", "topology_template", "substitution_mappings"): (
        "TOSCA `substitution_mappings` (a topology standing in for a node) is not supported "
        "beyond `{node: NAME}` (Unfurl's `root`: that template and what it requires; with "
        "`node_type: T`, Unfurl 1.2.0 deploys only a template '_substitution_mapping' of type "
        "T that it makes up, and what that requires)",
        "declare the template you mean under node_templates and write `substitution_mappings: "
        "{node: NAME}` (or `root: {node: NAME}`), or remove it to deploy every template",
    ),
}


def _unsupported_structure(doc: Any, file: str) -> Iterator[Problem]:
    for path, (message, hint) in _UNSUPPORTED_SECTIONS.items():
        parent = get_section(doc, path[:-1])
        if path[-1] in parent and parent[path[-1]] and not (
                path[-1] == "substitution_mappings" and is_root_form(parent[path[-1]])):
            yield problem_at(doc, path, file, message, hint)
    yield from _unsupported_directives(doc, file)
    yield from _unsupported_environment(doc, file)
    yield from _requirement_counts(doc, file)
    yield from _unread_type_keys(doc, file)
    yield from _short_capabilities(doc, file)


#: keys of a type the schema let through that nothing reads and Unfurl 1.2.0 refuses
#: ('Nodetype "X" contains unknown field "directives"'): (kind, key) -> what to do instead
_UNREAD_TYPE_KEYS = {
    ("node", "directives"): "give the directives to the templates (`directives: [...]` of "
                            "each node template)",
    ("relationship", "default_for"): "give `default_for` to a relationship template",
}


def _unread_type_keys(doc: Any, file: str) -> Iterator[Problem]:
    service = get_section(doc, SERVICE)
    nodes, relationships = split_types(service.get("types"))
    sections = (("node", "node_types", mapping(service.get("node_types"))),
                ("relationship", "relationship_types",
                 mapping(service.get("relationship_types"))),
                ("node", "types", nodes), ("relationship", "types", relationships))
    for kind, section, types in sections:
        for name, body in types.items():
            for (wanted, key), hint in _UNREAD_TYPE_KEYS.items():
                if wanted == kind and isinstance(body, dict) and key in body:
                    yield problem_at(doc, (*SERVICE, section, name, key), file,
                                     f"`{key}` on a {kind} type is not supported (Unfurl "
                                     f'1.2.0 refuses it too: unknown field "{key}")', hint)


def _short_capabilities(doc: Any, file: str) -> Iterator[Problem]:
    """A node type's capability in TOSCA's short form (``api: tosca.capabilities.Endpoint``),
    which Unfurl 1.2.0 cannot load once a template is of that type or one derived from it
    ("'str' object has no attribute 'get'", probed: tests/load/test_target_capabilities.py),
    refused by name."""
    service = get_section(doc, SERVICE)
    sections = {"types": split_types(service.get("types"))[0],
                "node_types": mapping(service.get("node_types"))}
    short = [(section, str(name), str(cap), value) for section, types in sections.items()
             for name, body in types.items()
             for cap, value in mapping(mapping(body).get("capabilities")).items()
             if isinstance(value, str)]
    if not short:
        return
    node_types = {**sections["types"], **sections["node_types"]}
    used = {t for body in mapping(get_section(doc, TOPOLOGY).get("node_templates")).values()
            for t in lineage(mapping(body).get("type"), node_types)}
    for section, name, cap, value in short:
        if name in used:
            yield problem_at(
                doc, (*SERVICE, section, name, "capabilities", cap), file,
                f"capability {cap!r} of node type {name!r} in TOSCA's short form "
                f"(`{cap}: {value}`) is not supported: Unfurl 1.2.0 cannot load a template "
                "of the type (\"'str' object has no attribute 'get'\")",
                f"write it `{cap}: {{type: {value}}}`")


def _requirement_counts(doc: Any, file: str) -> Iterator[Problem]:
    """A requirement's ``min``/``max``, which the schema let through and nothing read
    (Unfurl 1.2.0 refuses both: 'contains unknown field "min"'), refused by name."""
    from unfurl_lite.load import expression_checks  # start-up: as validate._unknown_filters

    if expression_checks.text_lacks("min", "max"):
        return
    service = get_section(doc, SERVICE)
    owners: list[tuple[tuple[Any, ...], Any]] = [
        ((*TOPOLOGY, "node_templates", name), body) for name, body in mapping(
        get_section(doc, TOPOLOGY).get("node_templates")).items()]
    owners += [((*SERVICE, section, name), body) for section in ("types", "node_types")
               for name, body in mapping(service.get(section)).items()]
    for path, body in owners:
        requirements = mapping(body).get("requirements")
        for index, entry in enumerate(requirements if isinstance(requirements, list) else ()):
            for name, spec in mapping(entry).items():
                for key in ("min", "max"):
                    if isinstance(spec, dict) and key in spec:
                        yield problem_at(
                            doc, (*path, "requirements", index, name, key), file,
                            f"requirement key `{key}` is not supported (Unfurl 1.2.0 refuses "
                            f'it too: unknown field "{key}")',
                            "give the count as `occurrences: [MIN, MAX]`")


#: the keys of an ensemble's ``environment:`` section that unfurl-lite reads
_ENVIRONMENT_READ = frozenset({"inputs", "deployment_blueprint"})


def _unsupported_environment(doc: Any, file: str) -> Iterator[Problem]:
    """An ensemble's own ``environment:`` section: its ``inputs`` are read (merged over
    ``spec.inputs``, as Unfurl does) and its ``deployment_blueprint`` chosen
    (load/blueprints.py); the rest of what Unfurl merges into the job's environment from
    it (variables, secrets, locals, connections...) is refused by name."""
    for key, value in mapping(mapping(doc).get("environment")).items():
        if key not in _ENVIRONMENT_READ and value not in (None, {}, []):
            yield problem_at(
                doc, ("environment", key), file,
                f"Unfurl's `environment.{key}` in an ensemble is not supported",
                "give topology inputs under `environment.inputs` or `spec.inputs`; set "
                "environment variables in the operation's `environment`")


#: template directives built here, as Unfurl 1.2.0 defines them (docs/ensemble-format.md)
SUPPORTED_DIRECTIVES = frozenset(
    {"protected", "dependent", "select", "discover", "default", "check", "conditional"}
)
#: what Unfurl does with the directives unfurl-lite refuses, for the message
_DIRECTIVE_MEANING = {
    "virtual": "its instance is never recorded, yet every deploy runs its operations again",
    "substitute": "the topology of an imported file whose `substitution_mappings` names "
                  "the template's type is instantiated in its place, as instances "
                  "'TEMPLATE:INNER' recorded under its `substitution:`; unfurl-lite has no "
                  "nested topologies",
}
#: what to do instead of a refused directive
_DIRECTIVE_HINTS = {
    "substitute": "declare the nested topology's templates in this topology_template, "
                  "connected to the others by requirements, and remove the directive (an "
                  "imported file's `substitution_mappings` is then ignored, as Unfurl 1.2.0 "
                  "ignores it for a template without the directive)",
}


def _unsupported_directives(doc: Any, file: str) -> Iterator[Problem]:
    for name, body in get_section(doc, (*TOPOLOGY, "node_templates")).items():
        directives = mapping(body).get("directives")
        for index, directive in enumerate(directives if is_list(directives) else ()):
            if isinstance(directive, str) and directive in SUPPORTED_DIRECTIVES:
                continue
            meaning = _DIRECTIVE_MEANING.get(str(directive))
            what = (f" (in Unfurl: {meaning})" if meaning
                    else " (Unfurl 1.2.0 ignores a directive it does not know)")
            hint = _DIRECTIVE_HINTS.get(str(directive), "remove it") + (
                "; unfurl-lite supports the directives: " + ", ".join(
                    sorted(SUPPORTED_DIRECTIVES)))
            yield problem_at(
                doc, (*TOPOLOGY, "node_templates", name, "directives", index), file,
                f"template directive {directive!r} on {name!r}{what} is not supported", hint)


#: Cloudify interfaces that exist to drive Cloudify's agents, which unfurl-lite has none of
CLOUDIFY_AGENT_INTERFACES = ("cloudify.interfaces.monitoring_agent",
                             "cloudify.interfaces.cloudify_agent", "cloudify.interfaces.host")


_RELATIONSHIP_INTERFACE_KEYS = ("source_interfaces",)
_TOSCA_RELATIONSHIP_HINT = ("write the source side's operations as TOSCA relationship interfaces: "
                            "`relationship: {type: ..., interfaces: {Configure: {operations: "
                            "{add_target: ...}}}}` (see docs/workflows.md, Lifecycle interfaces)")
#: what runs on the target side, by the TOSCA form where there is one
_TARGET_SIDE_HINT = (
    "TOSCA names the target side's operations in the relationship's `interfaces`: "
    "Configure.pre_configure_target, post_configure_target, add_source, remove_source; "
    "`target_interfaces` takes only cloudify.interfaces.relationship_lifecycle (preconfigure, "
    "postconfigure, establish, unlink), which has no TOSCA form")


def _cloudify_unsupported(doc: Any, file: str) -> Iterator[Problem]:
    """Cloudify constructs that would otherwise be accepted and never run, refused by name."""
    for path, interfaces in interface_owners(doc):
        for interface in mapping(interfaces):
            if str(interface) in CLOUDIFY_AGENT_INTERFACES:
                yield problem_at(
                    doc, (*path, interface), file,
                    f"Cloudify's agent interface {interface!r} is not supported: unfurl-lite "
                    "installs no agents, so its operations would never run",
                    "use cloudify.interfaces.monitoring (start/stop) or "
                    "cloudify.interfaces.lifecycle (poststart/prestop) for the same commands",
                )
    templates = get_section(doc, (*TOPOLOGY, "node_templates"))
    for name, body in templates.items():
        base = (*TOPOLOGY, "node_templates", name)
        if "relationships" in mapping(body):
            yield problem_at(
                doc, (*base, "relationships"), file,
                f"Cloudify's `relationships:` list (on {name!r}) is not supported",
                "write each relationship as a TOSCA requirement (`requirements: [{dependency: "
                "{node: db, relationship: ...}}]`, `host:` for contained_in)",
            )
        for index, req, relationship in relationships_of(body):
            at = (*base, "requirements", index, req, "relationship")
            yield from _relationship_sides(doc, file, at, relationship)
    for name, body in get_section(doc, (*TOPOLOGY, "relationship_templates")).items():
        yield from _relationship_sides(
            doc, file, (*TOPOLOGY, "relationship_templates", name), mapping(body))


def _relationship_sides(
    doc: Any, file: str, path: tuple[Any, ...], relationship: Mapping[str, Any]
) -> Iterator[Problem]:
    """Cloudify's ``source_interfaces`` has a TOSCA form (``interfaces``): refused by name.
    Its ``target_interfaces`` runs relationship_lifecycle on the target (no TOSCA form);
    any other interface there has one, and is refused by name."""
    for key in _RELATIONSHIP_INTERFACE_KEYS:
        if key in relationship:
            yield problem_at(doc, (*path, key), file, f"Cloudify's {key!r} is not supported",
                             _TOSCA_RELATIONSHIP_HINT)
    for interface in mapping(relationship.get("target_interfaces")):
        if canonical_interface(str(interface)) != "RelationshipLifecycle":
            yield problem_at(
                doc, (*path, "target_interfaces", interface), file,
                f"interface {interface!r} in `target_interfaces` is not supported",
                _TARGET_SIDE_HINT,
            )


#: Unfurl's configurators that unfurl-lite does not implement, by their short names
UNFURL_ONLY_CONFIGURATORS = (
    "Ansible", "Terraform", "Kompose", "Supervisor", "DNS", "Octodns", "Cmd", "Cluster",
    "Connection", "Resource", "CheckGoogleCloudConnection", "PythonPackageCheck", "Delegate",
)


#: implementation keys Unfurl 1.2.0 acts on that unfurl-lite does not: refused, never ignored
#: the ``operation_host`` values that name the orchestrator: Unfurl 1.2.0 runs such an
#: operation exactly as one without ``operation_host`` (find_operation_host: the
#: `localhost` instance either way), so they are read as that; any other is refused
ORCHESTRATOR_HOSTS = ("ORCHESTRATOR", "localhost")
UNFURL_ONLY_IMPLEMENTATION_KEYS = {
    "operation_host": "runs the operation on another host; here operations run on this "
                      "machine, or on the Celery worker their routing picks",
    "dependencies": "installs artifacts before the operation runs",
}


_UNFURL_CLASS = re.compile(r"^unfurl(?:\.\w+)+$")
_PYTHON_FILE_CLASS = re.compile(r"^\S+\.py#\w+$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*(?::|\.)[A-Za-z_]\w*$")


def _unsupported_implementations(doc: Any, file: str) -> Iterator[Problem]:
    """An operation that would only fail when the job reaches it is refused up front."""
    artifacts = _artifact_names(doc)
    clean: set[bytes] = set()  # interfaces found without a problem: an equal one has none
    for path, interfaces, key in keyed_owners(doc):
        if key in clean:
            continue
        found = list(_implementations_of(doc, file, path, interfaces, artifacts))
        yield from found
        if not found and key is not None:
            clean.add(key)


def _implementations_of(doc: Any, file: str, path: tuple[Any, ...], interfaces: Any,
                        artifacts: set[str]) -> Iterator[Problem]:
    """The implementations of one owner's interfaces refused: a verdict of what they hold
    (and the document's artifacts), the owner's path only saying where."""
    for interface, body in mapping(interfaces).items():
        for shared in (("defaults", "implementation"), ("implementation",)):
            value = mapping(mapping(body).get(shared[0])).get(shared[1]) \
                if len(shared) == 2 else mapping(body).get(shared[0])
            why = _implementation_problem(value, artifacts) if value is not None else None
            if why is not None:  # applied to every operation of the interface
                yield problem_at(doc, (*path, interface, *shared), file, why,
                                 _IMPLEMENTATION_HINT)
        for subpath, _ in operations_of(body):
            definition: Any = mapping(body)
            for part in subpath:
                definition = mapping(definition).get(part)
            yield from _output_mappings(doc, file, (*path, interface, *subpath),
                                        definition)
            for key in _UNREAD_OPERATION_KEYS.keys() & mapping(definition).keys():
                yield problem_at(doc, (*path, interface, *subpath, key), file,
                                 *_UNREAD_OPERATION_KEYS[key])
            short = isinstance(definition, str)  # `create: COMMAND`, TOSCA's short form
            implementation: YAMLValue = (definition if short
                                         else mapping(definition).get("implementation"))
            if (isinstance(implementation, dict) and implementation.get("className")
                    in OPERATION_KINDS and _INSPECTED_KEYS.isdisjoint(implementation)):
                continue  # the everyday `{className: Shell}`: nothing below can object
            where = (*path, interface, *subpath) + (() if short else ("implementation",))
            why = _implementation_problem(implementation, artifacts)
            if why is not None:
                yield problem_at(doc, where, file, why, _IMPLEMENTATION_HINT)
            elif not short:
                given = {**mapping(mapping(body).get("inputs")),
                         **mapping(mapping(definition).get("inputs"))}
                unknown = _unknown_configurator(implementation, "command" in given)
                if unknown is not None:
                    yield problem_at(doc, where, file, *unknown)
            for key in _UNSUPPORTED_IMPLEMENTATION_KEYS:
                if key in mapping(implementation):
                    yield problem_at(
                        doc, (*where, key), file,
                        f"implementation key {key!r} is not supported by unfurl-lite",
                        "remove it (Unfurl's TOSCA extension; no equivalent here)",
                    )
            if "preConditions" in mapping(implementation):
                why = _schema_problem(mapping(implementation)["preConditions"])
                if why is not None:
                    yield problem_at(doc, (*where, "preConditions"), file, why,
                                     "give a JSON schema the target's values must meet,"
                                     " e.g. {required: [name]}")


#: keys of an operation the schema lets through that nothing here reads: refused by name
_UNREAD_OPERATION_KEYS = {
    "entry_state": (
        "operation key `entry_state` is not supported (Unfurl 1.2.0 holds the operation "
        "until the instances its target depends on reach that state, and takes a template "
        "whose operations all say `initial` for one with no resource of its own)",
        "remove it: here an operation runs once the instances its target requires are "
        "deployed"),
    "workflow": (
        'operation key `workflow` is not supported (Unfurl 1.2.0 refuses it too: unknown '
        'field "workflow")', "remove it; a TOSCA workflow goes under "
        "topology_template.workflows"),
    "pre_conditions": (
        'operation key `pre_conditions` is not supported (Unfurl 1.2.0 refuses it too: '
        'unknown field "pre_conditions")', "remove it, or give the implementation "
        "`preConditions:` (a JSON schema the target's values must meet)"),
    "invoke": (
        "operation key `invoke` is not supported (Unfurl 1.2.0 runs the operation it "
        "names in this one's place)", "remove it, and give this operation the other's "
        "implementation and inputs"),
    "resultTemplate": (
        "operation key `resultTemplate` is not supported beside `implementation` (Unfurl "
        '1.2.0 refuses it too: unknown field "resultTemplate")', "move it under the "
        "operation's inputs: `inputs: {resultTemplate: ...}`"),
}


def _output_mappings(doc: Any, file: str, where: tuple[Any, ...],
                     definition: Any) -> Iterator[Problem]:
    """An operation's ``outputs:`` mapping in a form Unfurl 1.2.0 only fails on when the
    task ends ("invalid or unsupported mapping for output"): refused up front."""
    for output, target in mapping(mapping(definition).get("outputs")).items():
        if target is None or isinstance(target, str) or (
                isinstance(target, list) and len(target) == 2 and target[0] == "SELF"
                and isinstance(target[1], str)):
            continue
        yield problem_at(
            doc, (*where, "outputs", output), file,
            f"the mapping of operation output {output!r} ({target!r}) is not supported",
            "map an output to an attribute of the operation's instance: `NAME`, "
            "`[SELF, NAME]`, or `.status` / `.state` (as Unfurl 1.2.0); null maps nothing")


#: keys Unfurl allows in an implementation that unfurl-lite does not build
_UNSUPPORTED_IMPLEMENTATION_KEYS = ("invoke",)
#: the keys of an implementation mapping the checks here look at, beside ``className``
_INSPECTED_KEYS = frozenset({"primary", "preConditions", *UNFURL_ONLY_IMPLEMENTATION_KEYS,
                             *_UNSUPPORTED_IMPLEMENTATION_KEYS})
_IMPLEMENTATION_HINT = ("use `className: Shell` with the equivalent command (for example "
                        "`ansible-playbook site.yml`), `Template`, or a Python "
                        "operation `package.module:function`")


#: every configurator name an implementation may give (here or refused by name)
_CONFIGURATORS = ("Shell", "Template", *UNFURL_ONLY_CONFIGURATORS)


def _unknown_configurator(implementation: Any, has_command: bool) -> tuple[str, str] | None:
    """``implementation: Shel`` is a configurator's name misspelt, not a command: it is one
    word close to a configurator's name, or the operation gives its command as an input
    (Unfurl 1.2.0 then runs that command, whatever the name says)."""
    name = implementation.strip() if isinstance(implementation, str) else mapping(
        implementation).get("className")
    if not isinstance(name, str) or name in OPERATION_KINDS:
        return None
    lowered = {c.lower(): c for c in _CONFIGURATORS}
    import difflib  # start-up: an implementation not a configurator's name only (`validate`)

    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.8)
    one_word = re.fullmatch(r"[A-Za-z_][\w.]*", name) is not None
    if isinstance(implementation, str) and not (one_word and (close or has_command)):
        return None
    if not isinstance(implementation, str) and not close:
        return None
    guess = f"did you mean {lowered[close[0]]!r}?" if close else did_you_mean(name, _CONFIGURATORS)
    message = f"unknown configurator {name!r}" + (f"; {guess}" if guess else "")
    return message, ("the configurators here are Shell and Template, or a Python "
                     "operation package.module:function; a shell command is written as "
                     "`implementation: COMMAND` without a `command` input")


def _artifact_names(doc: Any) -> set[str]:
    """Artifacts the templates and types declare: an implementation naming one runs the
    artifact in Unfurl (a shell command of that name here, were it accepted)."""
    service = get_section(doc, SERVICE)
    owners = [*mapping(get_section(doc, (*TOPOLOGY, "node_templates"))).values(),
              *mapping(service.get("node_types")).values(), *mapping(service.get("types")).values()]
    return {str(name) for owner in owners for name in mapping(mapping(owner).get("artifacts"))}


def _implementation_problem(implementation: Any,
                            artifacts: frozenset[str] | set[str] = frozenset()) -> str | None:
    """Why an operation's implementation cannot run here (artifacts, Unfurl's other
    configurators, Python files by path), said by name at validate instead of being ignored."""
    if isinstance(implementation, str) and implementation.strip() in artifacts:
        named = implementation  # (a `primary` naming an artifact has its own message)
        return (f"the implementation names the artifact {named.strip()!r}: in Unfurl that runs "
                "the artifact's own operations; artifacts are not supported by unfurl-lite")
    if isinstance(implementation, str):
        name = implementation.strip()
        if name in UNFURL_ONLY_CONFIGURATORS:
            return f"Unfurl's {name} configurator is not supported by unfurl-lite"
        if _UNFURL_CLASS.match(name) and name not in OPERATION_KINDS:
            return f"Unfurl's configurator {name!r} is not supported by unfurl-lite"
        if _PYTHON_FILE_CLASS.match(name):
            return (f"a configurator class in a Python file ({name!r}, Unfurl's "
                    "`file.py#Class`) is not supported: it needs Unfurl's Configurator API")
        return None
    for key, what in UNFURL_ONLY_IMPLEMENTATION_KEYS.items():
        value = mapping(implementation).get(key)
        if value not in (None, [], {}) and not (key == "operation_host"
                                                and value in ORCHESTRATOR_HOSTS):
            return f"implementation key `{key}` (in Unfurl it {what}) is not supported"
    primary = mapping(implementation).get("primary")
    if is_map(primary):
        return ("an inline artifact as `primary` is not supported: give a shell command, or "
                "`className`")
    if isinstance(primary, str) and primary.strip() in UNFURL_ONLY_CONFIGURATORS:
        return f"Unfurl's {primary.strip()} configurator is not supported by unfurl-lite"
    if isinstance(primary, str) and primary.strip() not in OPERATION_KINDS:
        return (f"`primary: {primary.strip()!r}` is not supported: Unfurl 1.2.0 takes `primary` "
                "as the name of an artifact (and runs its file) or of a configurator, and runs "
                "nothing when it is neither; write the command as the implementation itself "
                "(`implementation: COMMAND`, which both tools run as a shell command), or "
                "`className: Shell` with a `command` input")
    class_name = mapping(implementation).get("className")
    if not isinstance(class_name, str) or class_name in OPERATION_KINDS:
        return None
    if class_name.startswith("unfurl.") or class_name in UNFURL_ONLY_CONFIGURATORS:
        return f"Unfurl's configurator {class_name!r} is not supported by unfurl-lite"
    if not _CALLABLE.match(class_name):
        guess = _unknown_configurator(implementation, False)
        return (f"className {class_name!r} is neither a built-in operation (Shell, Template"
                ") nor a Python callable (package.module:function)"
                + (guess[0].partition(";")[1] + guess[0].partition(";")[2]
                   if guess and ";" in guess[0] else ""))
    return None


def _schema_problem(conditions: Any) -> str | None:
    """What is wrong with an implementation's ``preConditions`` as a JSON schema (Unfurl
    checks the target's values against it before the operation runs)."""
    if not isinstance(conditions, dict):
        return f"preConditions must be a JSON schema (a mapping), not {conditions!r}"
    from jsonschema import Draft7Validator, SchemaError  # start-up: only for preConditions

    try:
        Draft7Validator.check_schema(conditions)
    except SchemaError as exc:
        return f"preConditions is not a valid JSON schema: {exc.message}"
    return None
