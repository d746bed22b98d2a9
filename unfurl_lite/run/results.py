"""An operation's result hooks: ``resultTemplate`` and ``done`` are inputs evaluated after
the operation ran, with its result, and fold what they say into that result (Unfurl's
``update_instances`` and ``done``). They run where the operation's result is known, so
they belong to the run, not to expression evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.context import INPUTS_LABEL, POST_INPUTS, secret_leaves
from unfurl_lite.expressions.expr import EvalContext, evaluate
from unfurl_lite.expressions.lazy import Labelled
from unfurl_lite.expressions.reads import Reads
from unfurl_lite.load import yamlio
from unfurl_lite.load.builder import SENSITIVE_TYPES
from unfurl_lite.model.entities import (
    OUTPUT_TO_STATE,
    OUTPUT_TO_STATUS,
    Instance,
    NodeTemplate,
    Operation,
    Topology,
)
from unfurl_lite.model.narrow import YAMLValue, is_list, is_mapping
from unfurl_lite.model.tosca_values import DataTypes, type_problem
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.security.redaction import redact_text
from unfurl_lite.security.taint import Sensitive, tainted_copy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def apply_post_inputs(
    inputs: Mapping[str, Any], result: OperationResult, ctx: EvalContext, kind: str = "Shell",
    current: Mapping[str, Any] | None = None, properties: frozenset[str] = frozenset(),
    on_set: Callable[[str, Any, Any], Any] | None = None,
) -> None:
    """Evaluate ``done`` and ``resultTemplate`` with the operation's result and fold them
    in. As Unfurl, a resultTemplate that fails to render fails the task, but what ``done``
    says (its status, ``modified``...) still applies. ``current``: SELF as the task found
    it, read without being recorded, and ``properties`` its template's properties that
    are not yet attributes: an attribute set to the value of its property is dropped.
    ``on_set``: told of each attribute as the resultTemplate renders it, in order (its
    expression and its value), it gives the value to set (a secret, as Unfurl marks it)."""
    if not any(inputs.get(k) is not None for k in POST_INPUTS):
        return
    outputs = result.outputs
    if not ctx.operation_inputs:
        ctx.operation_inputs = Labelled(inputs, INPUTS_LABEL)
    base = dict(ctx.extra)  # e.g. `task`
    ctx.extra = {
        **base,
        **{k: outputs.get(k) for k in ("stdout", "stderr", "returncode")},
        "result": outputs,
        "success": result.success,
        "error": result.error,
        "outputs": outputs,
    }
    done = inputs.get("done")
    try:
        values = evaluate(done, ctx) if done is not None else None
        if values is not None and not is_mapping(values):
            raise ExpressionError(
                "`done` must be a mapping (status, modified, success, outputs...)")
    except Exception:
        result.modified = None  # nothing says what happened: the status is unknown
        raise
    ctx.extra = {**base, **result_variables(inputs, result, values, kind)}
    template = inputs.get("resultTemplate")
    status_before = result.status
    failure: ExpressionError | None = None
    if template is not None:
        try:
            updates, failure = _rendered_in_order(template, ctx, on_set=on_set)
            _apply_updates(updates, result)
        except ExpressionError as exc:
            failure = exc
    if values is not None:
        from_template = result.status if result.status != status_before else None
        _apply_done(values, result)
        if from_template is not None:  # Unfurl: the status the resultTemplate set wins
            result.status = from_template
    if properties:
        _drop_unchanged(result, ctx.self_view if current is None else current, properties)
    if failure is not None:
        if values is None or not ({"status", "modified"} & set(values)):
            result.modified = None  # nothing says what happened: the status is unknown
        raise failure


def _drop_unchanged(result: OperationResult, self_view: Mapping[str, Any],
                    properties: frozenset[str]) -> None:
    """As Unfurl (an instance's attributes and its template's properties are one
    namespace): an attribute that is not yet one, set to the value of the property of the
    same name, changes nothing and is not recorded."""
    for key, value in list(result.attributes.items()):
        if key not in properties:
            continue
        try:
            same = self_view[key] == value
        except Exception:  # a property that cannot be read now is not the same value
            same = False
        if same:
            del result.attributes[key]


def result_variables(
    inputs: Mapping[str, Any], result: OperationResult, done: Mapping[str, Any] | None,
    kind: str,
) -> dict[str, Any]:
    """The variables a resultTemplate sees, as Unfurl gives them: a Template's
    ``done: {result: ...}`` (else its ``run`` when that is a mapping, else ``run`` and
    ``done``'s ``outputs``); a Shell command's result (``cmd``, ``args``, ``stdout``,
    ``stderr``, ``returncode``, ``error``, ``timeout``) and ``success``."""
    outputs = result.outputs
    if kind == "Template":
        if done is not None and "result" in done:
            given = done["result"]
            return dict(given) if is_mapping(given) else {}
        run = inputs.get("run")
        if is_mapping(run):
            return dict(run)
        return {"run": run, "outputs": done.get("outputs") if done else None}
    if kind == "Shell":
        command = _command_text(inputs.get("command"), bool(inputs.get("keeplines")))
        return {
            "cmd": command,
            "args": command,
            **{k: outputs.get(k) for k in ("stdout", "stderr", "returncode", "timeout")},
            "error": None if result.ran and outputs.get("returncode") is not None
            else result.error,
            "success": result.success,
        }
    return {
        **dict(outputs),
        **{k: outputs.get(k) for k in ("stdout", "stderr", "returncode")},
        "result": outputs,
        "success": result.success,
        "error": result.error,
        "outputs": outputs,
    }


def _command_text(command: YAMLValue, keeplines: bool) -> str | None:
    """The command as Unfurl's ``cmd`` shows it: a list joined with spaces, a string with
    its line ends made spaces unless ``keeplines``."""
    if command is None:
        return None
    if isinstance(command, list | tuple):
        return " ".join(str(c) for c in command)
    text = str(command)
    text = text if keeplines else text.replace("\n", " ")
    return tainted_copy(text) if isinstance(command, Sensitive) else text


def _rendered_in_order(template: Any, ctx: EvalContext, listed: bool = False,
                       on_set: Callable[[str, Any, Any], Any] | None = None,
                       ) -> tuple[Any, ExpressionError | None]:
    """A resultTemplate written as YAML (not as one text), rendered as Unfurl updates an
    instance from it: item by item, the instance's fields before its attributes, then its
    attributes one by one, so what renders before a failure is applied (and the failure
    returned): Unfurl keeps the attributes set before the one that failed."""
    if is_list(template):
        items: list[Any] = []
        for item in template:
            rendered, failure = _rendered_in_order(item, ctx, listed=True, on_set=on_set)
            items.append(rendered)
            if failure is not None:
                return items, failure
        return items, None
    if not _plain_mapping(template):
        return _rendered_updates(template, ctx), None
    fields = dict(template)
    attributes = fields.pop("attributes", None)
    special = {"readyState", "status", "modified", "protected", "outputs"}
    if attributes is None and not listed and not (
            set(fields) & special and set(fields) <= INSTANCE_SPEC_KEYS):
        fields, attributes = {}, template  # a mapping of attributes alone
    done: dict[str, Any] = {key: evaluate(value, ctx) for key, value in fields.items()}
    if not _plain_mapping(attributes):
        if attributes is not None:
            done["attributes"] = evaluate(attributes, ctx)
        return done, None
    rendered_attributes: dict[str, Any] = {}
    done["attributes"] = rendered_attributes
    for key, value in attributes.items():
        try:
            rendered_attributes[key] = evaluate(value, ctx)
        except ExpressionError as exc:
            return done, exc
        if on_set is not None:
            rendered_attributes[key] = on_set(key, value, rendered_attributes[key])
    return done, None


def _plain_mapping(value: Any) -> bool:
    """A mapping of values, not itself an expression (``{eval: ...}``, ``{concat: ...}``)."""
    if not is_mapping(value) or "eval" in value or "ref" in value:
        return False
    # start-up: keeps expressions.catalog off a job whose operations set no resultTemplate
    from unfurl_lite.expressions import catalog

    return not (len(value) == 1 and next(iter(value)) in catalog.top_level_functions())


def _rendered_updates(template: Any, ctx: EvalContext) -> Any:
    rendered = evaluate(template, ctx)
    if not isinstance(rendered, str):
        return rendered
    tainted = isinstance(rendered, Sensitive)
    try:
        rendered = (
            yamlio.to_plain(yamlio.parse(rendered, "resultTemplate"))
            if rendered.strip()
            else None
        )
    except ExpressionError:
        raise
    except Exception as exc:  # re-raised, its text withheld when it read a secret
        if not tainted:
            raise
        raise ExpressionError(
            f"resultTemplate did not render valid YAML: {type(exc).__name__} "
            "(details withheld: the template read a secret)"
        ) from None
    # what came from a render that read a secret is secret as a whole
    return tainted_copy(rendered) if tainted else rendered


def map_outputs(operation: Operation | None, result: OperationResult,
                status_kept: bool = True) -> None:
    """TOSCA's attribute mapping: each output the operation's ``outputs:`` maps (from
    ``done: {outputs}`` or a resultTemplate's ``outputs:``) sets that attribute of the
    instance; one mapped to null sets nothing (it stays in the task's result). As Unfurl
    1.2.0, ``.state`` sets the node state and ``.status`` the status, unless the task ends
    its workflow's step (``status_kept`` False), whose end status then replaces it."""
    for output, attribute in ((operation.outputs if operation else None) or {}).items():
        if not attribute or output not in result.outputs:
            continue
        value = result.outputs[output]
        if attribute == OUTPUT_TO_STATE:
            result.state = str(value) if value else result.state
        elif attribute == OUTPUT_TO_STATUS:
            if value and status_kept and result.status is None:
                result.status = str(value).lower()
        else:
            result.attributes[attribute] = value


def _apply_done(values: Mapping[str, Any], result: OperationResult) -> None:
    if "success" in values:
        result.success = _truthy(values["success"])
        if not result.success and "modified" not in values:
            # as Unfurl: a failure that does not say what it changed leaves the instance
            # ``unknown``, not created, as a failed command does (unfurl-cases 261)
            result.modified = None
    if "modified" in values:
        result.modified = _truthy(values["modified"])
        result.said_modified = True
    if values.get("status"):
        result.status = str(values["status"]).lower()
    if isinstance(values.get("outputs"), Mapping):
        result.outputs.update(values["outputs"])
    if isinstance(values.get("result"), Mapping):
        result.outputs.update(values["result"])
    if isinstance(values.get("attributes"), Mapping):
        result.attributes.update(values["attributes"])
    if isinstance(values.get("resources"), list):
        result.resources.extend(dict(r) for r in values["resources"] if is_mapping(r))


#: what an item of a resultTemplate may say about an instance (Unfurl's update_instances)
INSTANCE_SPEC_KEYS = frozenset({"name", "template", "parent", "attributes", "readyState",
                                "status", "protected", "priority", "modified", "outputs"})


def _apply_updates(updates: Any, result: OperationResult) -> None:
    """A resultTemplate's instances, as Unfurl's ``update_instances``: a list of instance
    specs (``name: SELF`` or none for the target, another name makes that instance), or
    one mapping for the target; a mapping of anything else is the target's attributes."""
    if updates is None:
        return
    if is_list(updates):
        for item in updates:
            if not is_mapping(item):
                continue
            name = str(item.get("name", "SELF"))
            if name in (".self", "SELF"):
                _apply_self(item, result)
            else:
                result.resources.append({**dict(item), "name": name, "createdByTask": True})
        return
    if not is_mapping(updates):
        raise ExpressionError("resultTemplate must produce a mapping of attributes")
    special = {"attributes", "readyState", "status", "modified", "protected", "outputs"}
    if set(updates) & special and set(updates) <= INSTANCE_SPEC_KEYS:
        _apply_self(updates, result)
    else:
        result.attributes.update(updates)


def _apply_self(spec: Mapping[str, Any], result: OperationResult) -> None:
    result.attributes.update(spec.get("attributes") or {})
    if isinstance(spec.get("outputs"), Mapping):
        result.outputs.update(spec["outputs"])
    ready = spec.get("readyState", spec.get("status"))
    if is_mapping(ready):
        ready = ready.get("local")
    if ready:
        result.status = str(ready).lower()
    if "modified" in spec:
        result.modified = _truthy(spec["modified"])
    if "protected" in spec:
        result.protected = _truthy(spec["protected"])


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)


def secret_names(resources: list[dict[str, Any]], secrets: set[str]) -> str | None:
    """Why the instances an operation reports cannot be recorded, or None: a name (or
    template) derived from a secret would become a key of ensemble.yaml's status, and
    appear in git, ``status``, ``plan`` and ``graph`` in clear, where redaction never
    looks (names are not values). The task fails instead, naming the rule."""
    for resource in resources:
        for field in ("name", "template"):
            value = resource.get(field)
            if value is None:
                continue
            if isinstance(value, Sensitive) or redact_text(str(value), secrets) != str(value):
                return (f"an instance's {field} may not be derived from a secret (it would "
                        "be written in clear as a key of ensemble.yaml's status, in git and "
                        "in status, plan and graph output): the instance was not recorded")
    return None


def keep_defaults_read(
    instances: Mapping[str, Instance], topology: Topology, reads: Reads | None,
    computed: bool = True,
) -> None:
    """As Unfurl's attribute manager: an attribute a task read whose value came from its
    type's (or template's) declared default becomes the instance's own, recorded in its
    status from then on, a null one too (tests/data/unfurl-cases/143-docs-node-type-override),
    and a default expression's value as the task that ran read it (249: ``concat`` of
    properties; not ``computed`` by a render that waits, which reads it too early: 198);
    one that holds a secret is evaluated again when read."""
    for expr, value in reads.dependencies if reads is not None else ():
        name, _, key = expr[2:].partition("::")
        instance = instances.get(name)
        if instance is None or not key or key in instance.attributes:
            continue
        template = topology.templates.get(instance.template)
        if template is not None and key in template.attributes and not secret_leaves(value) \
                and (computed or template.attributes[key] == value):
            instance.attributes[key] = value


def check_types(topology: Topology, instance: Instance, result: OperationResult) -> None:
    """As Unfurl 1.2.0: a value the task sets on its instance that the type declared for
    that name refuses (``"blue-3" is not a map.``) fails the task; the value is kept, and
    the instance's status is unknown unless the operation said otherwise."""
    template = topology.templates.get(instance.template)
    if template is None or not result.attributes:
        return
    _mark_sensitive(topology, template, result)
    if not result.success:
        return
    data_types = DataTypes(topology.definitions.get("data_types"))
    for key, value in result.attributes.items():
        found = type_problem(declared(topology, template, key), value, data_types, key)
        if found is not None:
            result.success, result.modified = False, None
            result.error = (f'Validation failure while evaluating "{key}" on '
                            f'"{instance.name}": {found}')
            return


def _mark_sensitive(topology: Topology, template: NodeTemplate, result: OperationResult) -> None:
    """As Unfurl: a value set on a name its type declares sensitive (a property or an
    attribute with ``metadata: {sensitive: true}`` or a sensitive type) is a secret, kept
    redacted wherever it is written (unfurl-cases 201: ``private_address``)."""
    for key, value in result.attributes.items():
        if value is None or isinstance(value, Sensitive) or not isinstance(
                value, str | int | float):
            continue
        if secret_name(topology, template, key):
            result.attributes[key] = Sensitive(str(value))


def secret_name(topology: Topology, template: NodeTemplate, key: str) -> bool:
    """Whether ``key`` is a name ``template``'s type declares sensitive (``metadata:
    {sensitive: true}`` or a sensitive type), on a property or an attribute."""
    definition: YAMLValue = declared(topology, template, key)
    metadata: YAMLValue = (definition.get("metadata") if isinstance(definition, Mapping)
                           else None)
    return key in template.sensitive_properties or (isinstance(definition, Mapping) and (
        definition.get("type") in SENSITIVE_TYPES
        or (isinstance(metadata, Mapping) and metadata.get("sensitive") is True)))


def declared(topology: Topology, template: NodeTemplate, key: str) -> Any:
    """The definition of ``key`` on ``template``: the nearest type in its lineage that
    declares it, an attribute before a property."""
    for type_name in template.type_lineage:
        node_type = topology.types.get(type_name)
        if node_type is None:
            continue
        for definitions in (node_type.attributes, node_type.properties):
            if key in definitions:
                return definitions[key]
    return None
