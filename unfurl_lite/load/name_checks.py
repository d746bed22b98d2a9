"""Names an operation's templates read that cannot exist, found without running anything:
``{{ SELF.wrokdir }}`` when the template and its types declare ``workdir``,
``{{ inputs.nosuch }}``, ``{{ TOPOLOGY.inputs.typo }}``, a variable no template has.

Only what is known statically is judged: a name counts as existing when the template, its
types (TOSCA's normative ones included) or the recorded status declare it, or an
operation of the ensemble could set it. Where operations could set any attribute (a
Python operation, a ``resultTemplate`` written as text, discovery, a type this tool does
not know), the instance's attributes are open and nothing is reported about them; a
template that tests a name (``is defined``, ``| default``) is never reported for it.

``validate`` reports each with its file and line (in a requirement's relationship
operations too, whose TARGET and SOURCE it knows); a job checks the operations it is about
to run and refuses to start, as Unfurl 1.2.0 aborts a job whose templates fail to render.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from unfurl_lite.errors import Problem, RenderRefused
from unfurl_lite.expressions.analysis import (
    MAPPING_METHODS,
    TemplateNames,
    analyse,
    could_be_template,
)
from unfurl_lite.expressions.names import (
    OPERATION_VARIABLES,
    VIEW_FIELDS,
    did_you_mean,
)
from unfurl_lite.model.entities import NodeTemplate, Operation, canonical_interface
from unfurl_lite.model.lineage import NORMATIVE_ATTRIBUTES, normative_name
from unfurl_lite.model.narrow import YAMLValue, is_list, is_mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from unfurl_lite.model.ensemble import Ensemble

#: inputs evaluated after the operation ran: their variables are its result
_POST_INPUTS = frozenset({"resultTemplate", "done"})
#: TOSCA's normative node types whose every property and attribute is known here
_KNOWN_NORMATIVE = frozenset({
    "tosca.nodes.Root", "tosca.nodes.Compute", "tosca.nodes.SoftwareComponent",
    "tosca.nodes.WebServer", "tosca.nodes.WebApplication", "tosca.nodes.DBMS",
    "tosca.nodes.Database", "tosca.nodes.Container.Runtime",
    "tosca.nodes.Container.Application",
})


@dataclass(frozen=True)
class NameProblem:
    """A name that cannot exist, in the value ``key`` (then ``subpath``) of an operation's
    inputs (``operation`` None: of a property of ``template``)."""

    template: str
    interface: str | None
    operation: str | None
    key: str
    subpath: tuple[Any, ...]
    message: str
    hint: str | None
    #: the requirement whose relationship operation reads it (validate's scan)
    requirement: str | None = None


class _Declared:
    """What each template's instances are known to have, computed once per template."""

    def __init__(self, ensemble: Ensemble) -> None:
        self.ensemble = ensemble
        self.topology = ensemble.topology
        self._attributes: dict[str, frozenset[str] | None] = {}
        self._others_open = _sets_others(self.topology.templates.values())
        self._recorded: dict[str, set[str]] = {}  # template -> attributes in the status
        for instance in ensemble.instances.values():
            self._recorded.setdefault(instance.template, set()).update(instance.attributes)

    def properties(self, template: NodeTemplate) -> frozenset[str]:
        return frozenset(template.properties)

    def attributes(self, template: NodeTemplate) -> frozenset[str] | None:
        """The attribute names an instance of ``template`` may have; None when any."""
        if template.name not in self._attributes:
            self._attributes[template.name] = self._attribute_names(template)
        return self._attributes[template.name]

    def _attribute_names(self, template: NodeTemplate) -> frozenset[str] | None:
        if self._others_open or set(template.directives) & {"discover", "select"}:
            return None
        names = set(template.attributes)
        for type_name in template.type_lineage:
            if type_name in self.topology.types:
                names.update(self.topology.types[type_name].attributes)
            elif normative_name(type_name) in _KNOWN_NORMATIVE:
                names.update(NORMATIVE_ATTRIBUTES.get(normative_name(type_name), ()))
            else:
                return None  # a type we do not know: it may declare anything
        names.update(self._recorded.get(template.name, ()))
        for operations in template.interfaces.values():
            for operation in operations.values():
                found = _attributes_set(operation)
                if found is None:
                    return None
                names.update(found)
        return frozenset(names)

    def view(self, template: NodeTemplate) -> frozenset[str] | None:
        attributes = self.attributes(template)
        if attributes is None:
            return None
        return VIEW_FIELDS | self.properties(template) | attributes


def _attributes_set(operation: Operation) -> frozenset[str] | None:
    """Attribute names an operation may set on its target; None when it could set any."""
    implementation = operation.implementation
    if implementation is None:
        return frozenset()
    if implementation.kind not in ("Shell", "Template", "Delegate"):
        return None  # Python: its result is code's
    if operation.name == "discover":
        return None
    names: set[str] = set()
    for key in _POST_INPUTS:
        value = operation.inputs.get(key)
        if value is None:
            continue
        if not is_mapping(value):
            return None  # rendered text, or a list naming instances
        spec = value.get("attributes") if key == "done" else value
        if key == "resultTemplate" and isinstance(value.get("attributes"), Mapping) and (
                set(value) <= {"attributes", "readyState", "status", "modified", "protected"}):
            spec = value["attributes"]
        if spec is None:
            continue
        if not is_mapping(spec):
            return None
        names.update(str(k) for k in spec)
    return frozenset(names)


def _sets_others(templates: Iterable[NodeTemplate]) -> bool:
    """Whether some operation's resultTemplate may name other instances (a list, or text
    that renders one): then no instance's attributes are known."""
    for template in templates:
        for operations in template.interfaces.values():
            for operation in operations.values():
                value = operation.inputs.get("resultTemplate")
                if is_list(value) or (isinstance(value, str) and "name" in value):
                    return True
    return False


#: what a job will run: (template, operation, extra inputs, whether of a relationship)
Planned: TypeAlias = "tuple[str, Operation, Mapping[str, Any], bool]"


def find(ensemble: Ensemble, tasks: Iterable[Planned] | None = None,
         post: bool = True) -> list[NameProblem]:
    """Names that cannot exist in the operations ``tasks`` will run, or in every operation
    and property of the ensemble; ``post``: in ``resultTemplate`` and ``done`` too."""
    tasks = None if tasks is None else list(tasks)
    if without_templates(ensemble) and not any(extra for _, _, extra, _ in tasks or ()):
        return []  # only a template reads names: nothing to find (a tenth of validate)
    declared = _Declared(ensemble)
    templates = ensemble.topology.templates
    found: list[NameProblem] = []
    if tasks is None:
        todo: list[tuple[NodeTemplate, Operation, Mapping[str, Any], bool]] = [
            (t, op, {}, False) for t in templates.values() for ops in t.interfaces.values()
            for op in ops.values()]
        for template in templates.values():
            for key, value in template.properties.items():
                found += (NameProblem(template.name, None, None, key, sub, message, hint)
                          for sub, message, hint in
                          _in_value(value, _Scope(declared, template, None, {}), False))
        found += _in_requirements(declared)
    else:
        todo = [(templates[name], op, extra, relationship)
                for name, op, extra, relationship in tasks if name in templates]
    seen: set[tuple[str, int, str]] = set()
    for template, operation, extra, relationship in todo:
        once = (template.name, id(operation), str(sorted(extra)) if extra else "")
        if once in seen:
            continue
        seen.add(once)
        values = {**operation.run_inputs, **extra}
        if all(_inert(value) for value in values.values()):
            continue  # no template among them: nothing for the scan to find
        scope = _Scope(declared, template, operation, extra, relationship)
        for key, value in values.items():
            if key in _POST_INPUTS and not post:
                continue
            found += (NameProblem(template.name, operation.interface, operation.name, key, sub,
                                  message, hint)
                      for sub, message, hint in _in_value(value, scope, key in _POST_INPUTS))
    return found


def _in_requirements(declared: _Declared) -> Iterator[NameProblem]:
    """Validate's scan of the relationship operations a template's requirements declare,
    their TARGET and SOURCE known (a job renders them with the instances it connects)."""
    templates = declared.topology.templates
    for template in templates.values():
        for requirement in template.requirements:
            target = templates.get(requirement.node)
            if target is None:
                continue
            for operations in requirement.interfaces.values():
                for operation in operations.values():
                    scope = _Scope(declared, template, operation, {}, True, target)
                    for key, value in operation.run_inputs.items():
                        if _inert(value):
                            continue
                        yield from (NameProblem(template.name, operation.interface,
                                                operation.name, key, sub, message, hint,
                                                requirement.name)
                                    for sub, message, hint in
                                    _in_value(value, scope, key in _POST_INPUTS))


def without_templates(ensemble: Ensemble) -> bool:
    """Whether no value the scan reads can hold a template: the ensemble was read from its
    text alone (no include, import or merge), and that text holds no template marker and
    no backslash (a double-quoted ``"\\x7b\\x7b"`` spells one). The model adds no
    template of its own to what the text gives."""
    text = ensemble.text  # "{" first: one character's search is a hundredth of two's
    return bool(text) and not ensemble.merged and "\\" not in text \
        and ("{" not in text or ("{{" not in text and "{%" not in text))


def _inert(value: Any) -> bool:
    """A value with no template in it: a scalar, or text that cannot be one."""
    if isinstance(value, str):
        return not could_be_template(value)
    return not is_mapping(value) and not isinstance(value, list | tuple)


@dataclass
class _Scope:
    """What a template may read while one of its operations renders."""
    declared: _Declared
    template: NodeTemplate
    operation: Operation | None
    extra: Mapping[str, Any]
    relationship: bool = False
    #: a relationship operation's TARGET, when known (validate's scan of requirements)
    target: NodeTemplate | None = None

    def topology_inputs(self) -> frozenset[str]:
        return frozenset(self.declared.topology.inputs) | frozenset(
            self.declared.ensemble.spec.get("inputs") or {})

    def names_of(self, root: str) -> tuple[str, frozenset[str] | None]:
        """How a message names ``root``, and the keys it has (None: unknown)."""
        templates = self.declared.topology.templates
        if self.relationship and root in ("SELF", "HOST"):
            return root, None  # SELF is the relationship's instance
        if self.target is not None and root in ("TARGET", "SOURCE"):
            node = self.target if root == "TARGET" else self.template
            return f"instance {node.name!r}", self.declared.view(node)
        if root == "SELF":
            return f"instance {self.template.name!r}", self.declared.view(self.template)
        if root == "HOST":
            host = templates.get(self.template.host or "")
            if host is None:
                return "HOST", None
            return f"instance {host.name!r}", self.declared.view(host)
        if root == "inputs" and self.operation is not None:
            return "the operation", frozenset(self.operation.inputs) | frozenset(self.extra)
        return root, None


#: what ``foreach`` and ``select`` give the templates they evaluate, as Unfurl does
_EACH = frozenset({"item", "key", "value"})


def _in_value(value: YAMLValue, scope: _Scope, post: bool, path: tuple[Any, ...] = (),
              given: frozenset[str] = frozenset(),
              ) -> Iterator[tuple[tuple[Any, ...], str, str | None]]:
    if isinstance(value, str):
        yield from ((path, m, h) for m, h in _in_template(analyse(value), scope, post, given))
    elif isinstance(value, Mapping):  # every value of every template: no call added
        if "eval" in value or "ref" in value:  # its `vars`, and foreach's and select's names
            given = given | frozenset(str(k) for k in value.get("vars") or ()
                                      if isinstance(value.get("vars"), Mapping)) | _EACH
        for key, item in value.items():
            yield from _in_value(item, scope, post, (*path, key), given)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _in_value(item, scope, post, (*path, index), given)


@lru_cache(maxsize=1)
def _globals() -> frozenset[str]:
    """The globals a template may call: read from the catalog (its table of every
    function, filter and global) the first time a template is scanned, not when a job of
    plain inputs imports this module."""
    # start-up: keeps expressions.catalog off a job whose inputs hold no template
    from unfurl_lite.expressions import catalog

    return frozenset(name for name, known in catalog.GLOBALS.items() if known.impl)


def _in_template(names: TemplateNames, scope: _Scope, post: bool,
                 given: frozenset[str] = frozenset()) -> Iterator[tuple[str, str | None]]:
    if names.syntax_error or (not names.free and not names.reads):
        return
    guarded = {r.root for r in names.reads if r.guarded and not r.path}
    if not post:
        for name in names.free:
            if name in OPERATION_VARIABLES or name in _globals() or name in guarded \
                    or name in given:
                continue
            if any(r.root == name and r.path and r.path[0].startswith("_")
                   for r in names.reads):
                continue  # `lipsum.__globals__`: the sandbox's refusal says more
            if any(r.root == name and r.guarded for r in names.reads):
                continue
            yield _named(f"{name!r} is undefined", name, OPERATION_VARIABLES | _globals(),
                         "the variables here are " + ", ".join(sorted(OPERATION_VARIABLES)))
    reported: set[tuple[str, str]] = set()
    for read in names.reads:
        if read.guarded or read.root in names.assigned or not read.path:
            continue
        for message, hint in _missing(read.root, read.path, scope):
            if (read.root, message) not in reported:
                reported.add((read.root, message))
                yield message, hint


def _missing(root: str, path: tuple[str, ...],
             scope: _Scope) -> Iterator[tuple[str, str | None]]:
    """The names a template reads from ``root`` (SELF, TOPOLOGY, inputs...) that cannot exist,
    each with the closest name that does, for validate's did-you-mean."""
    first = path[0]
    if first in MAPPING_METHODS or any(part.startswith("_") for part in path[:2]):
        return  # a method; or a name the sandbox refuses, with its own message
    if root == "TOPOLOGY":
        if first != "inputs":
            yield _named(f"TOPOLOGY has no attribute {first!r}", first, ["inputs"],
                         "TOPOLOGY has only inputs")
        elif len(path) > 1 and path[1] not in MAPPING_METHODS:
            inputs = scope.topology_inputs()
            if path[1] not in inputs:
                yield _named(f"there is no topology input {path[1]!r}", path[1], inputs,
                             _declared_hint("topology inputs", inputs))
        return
    label, keys = scope.names_of(root)
    if keys is None:
        return
    if root == "inputs":
        if first not in keys:
            yield _named(f"{label} has no input {first!r}", first, keys,
                         _declared_hint("inputs", keys))
        return
    if first not in keys:
        own = keys - VIEW_FIELDS
        template = _template_of(root, scope)
        if template is not None and first in _requirement_names(template, scope):
            yield (f"{label} has no attribute {first!r}: {first!r} is a requirement, "
                   f"read through what it connects to",
                   f"{{{{ '.targets::{first}::NAME' | eval }}}} reads NAME of its target"
                   + ("" if any(r.name == first for r in template.requirements)
                      else f" (template {template.name!r} leaves it unconnected: "
                           "connect it under the template's requirements)"))
            return
        yield _named(f"{label} has no attribute {first!r}", first, own or keys,
                     _declared_hint("properties and attributes", own))
    elif first in ("properties", "attributes") and len(path) > 1 \
            and path[1] not in MAPPING_METHODS:
        template = _template_of(root, scope)
        section = None if template is None else (
            scope.declared.properties(template) if first == "properties"
            else scope.declared.attributes(template))
        if section is not None and path[1] not in section:
            what = "attribute" if first == "attributes" else "property"
            yield _named(f"{label} has no {what} {path[1]!r}", path[1], section,
                         _declared_hint(first, section))


def _named(message: str, word: str, choices: Iterable[str],
           otherwise: str | None) -> tuple[str, str | None]:
    """The message with the closest name in it (``...; did you mean 'workdir'?``), else
    the hint ``otherwise``."""
    close = did_you_mean(word, sorted(choices))
    return (f"{message}; {close}", None) if close else (message, otherwise)


def _requirement_names(template: NodeTemplate, scope: _Scope) -> set[str]:
    """The requirements a template has or its types declare, connected or not."""
    names = {r.name for r in template.requirements} | set(template.missing_requirements)
    node_types = scope.declared.topology.definitions.get("node_types") or {}
    for type_name in template.type_lineage:
        body = node_types.get(type_name)
        for entry in (body.get("requirements") or []) if isinstance(body, dict) else []:
            if isinstance(entry, dict):
                names.update(str(key) for key in entry)
    return names


def _template_of(root: str, scope: _Scope) -> NodeTemplate | None:
    if root == "SELF" or (root == "SOURCE" and scope.target is not None):
        return scope.template
    if root == "TARGET":
        return scope.target
    if root == "HOST":
        return scope.declared.topology.templates.get(scope.template.host or "")
    return None


def _declared_hint(what: str, names: Iterable[str]) -> str:
    shown = sorted(names)
    if not shown:
        return f"it declares no {what}"
    listed = ", ".join(shown[:12]) + (" ..." if len(shown) > 12 else "")
    return f"its {what}: {listed}"


def refuse_job(ensemble: Ensemble, tasks: Iterable[Planned]) -> None:
    """Before a job runs anything: refuse it when an operation it would run reads a name
    that cannot exist (:class:`RenderRefused`, exit 64, nothing run or recorded)."""
    found = find(ensemble, tasks, post=False)  # a resultTemplate fails its task, as Unfurl
    if found:
        raise RenderRefused(problems(ensemble, found), summary=(
            "Aborting job: its templates read names that do not exist, so nothing was run"))


def problems(ensemble: Ensemble, found: list[NameProblem]) -> list[Problem]:
    """``found`` located in the ensemble's files (line of the value in the template, or in
    the type that declares the operation)."""
    if not found:
        return []
    # start-up: keeps ruamel, load.problems (55 modules) off `validate` until problems() runs
    from unfurl_lite.load import imports, merge
    from unfurl_lite.load.problems import problem_at

    file = str(ensemble.path)
    doc = merge.expand(ensemble.document, ensemble.path, ensemble.project_root)
    doc = imports.apply(doc, ensemble.path, ensemble.project_root)
    located: list[Problem] = []
    for item in found:
        path = _path_of(doc, ensemble, item)
        located.append(problem_at(doc, path, file, _prefix(item) + item.message, item.hint))
    return sorted(located, key=lambda p: (p.file or "", p.line or 0, p.column or 0))


def _prefix(item: NameProblem) -> str:
    if item.operation is None:
        return f"property {item.key!r} of {item.template!r}: "
    if item.requirement is not None:
        return (f"{item.template} {item.interface}.{item.operation} "
                f"(requirement {item.requirement!r}): ")
    return f"{item.template} {item.interface}.{item.operation}: "


_SERVICE = ("spec", "service_template")
_TOPOLOGY = (*_SERVICE, "topology_template")


def _path_of(doc: Any, ensemble: Ensemble, item: NameProblem) -> tuple[Any, ...]:
    """The deepest path of the merged document that holds the value."""
    template_path = (*_TOPOLOGY, "node_templates", item.template)
    if item.operation is None:
        return (*template_path, "properties", item.key, *item.subpath)
    if item.requirement is not None:
        return _requirement_path(doc, template_path, item)
    template = ensemble.topology.templates[item.template]
    owners = [template_path] + [
        (*_SERVICE, section, type_name) for type_name in template.type_lineage
        for section in ("node_types", "types")]
    for owner in owners:
        interfaces = _get(doc, (*owner, "interfaces"))
        if not is_mapping(interfaces):
            continue
        for name, body in interfaces.items():
            if canonical_interface(str(name)) != item.interface or not is_mapping(body):
                continue
            base = (*owner, "interfaces", name)
            for operation in ((*base, "operations", item.operation), (*base, item.operation)):
                definition = _get(doc, operation)
                if isinstance(definition, str):
                    return operation
                if is_mapping(definition):
                    inputs = (*operation, "inputs", item.key)
                    if _get(doc, inputs) is not None:
                        return (*inputs, *item.subpath)
            if _get(doc, (*base, "inputs", item.key)) is not None:
                return (*base, "inputs", item.key, *item.subpath)
    return template_path


def _requirement_path(doc: Any, template_path: tuple[Any, ...],
                      item: NameProblem) -> tuple[Any, ...]:
    """Where a requirement's relationship operation holds the value: inline under the
    requirement, else in the relationship template it names, else the requirement."""
    entries = _get(doc, (*template_path, "requirements"))
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if not is_mapping(entry) or item.requirement not in entry:
            continue
        where: tuple[Any, ...] = (*template_path, "requirements", index, item.requirement)
        relationship = _get(doc, (*where, "relationship"))
        owners = [(*where, "relationship")] if is_mapping(relationship) else [
            (*_TOPOLOGY, "relationship_templates", relationship)] if isinstance(
            relationship, str) else []
        for owner in owners:
            interfaces = _get(doc, (*owner, "interfaces"))
            for name in interfaces if is_mapping(interfaces) else ():
                if canonical_interface(str(name)) != item.interface:
                    continue
                base = (*owner, "interfaces", name)
                for operation in ((*base, "operations", item.operation),
                                  (*base, item.operation)):
                    definition = _get(doc, operation)
                    if isinstance(definition, str):
                        return operation
                    if _get(doc, (*operation, "inputs", item.key)) is not None:
                        return (*operation, "inputs", item.key, *item.subpath)
        return where
    return template_path


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    node: YAMLValue = doc
    for part in path:
        if isinstance(node, Mapping):
            if part not in node:
                return None
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    return node
