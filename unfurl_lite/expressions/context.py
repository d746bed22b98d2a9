"""What an operation's templates see: read-only views of instances, its inputs rendered.

``SELF.port`` reads a property or attribute as in Unfurl; ``SELF.attributes`` and
``SELF.properties`` are there for TOSCA functions. Secrets are wrapped before any
template can touch them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.expr import EvalContext, evaluate, evaluate_stored
from unfurl_lite.expressions.lazy import InstanceView, Labelled, LazyValues
from unfurl_lite.model.entities import Instance, NodeTemplate, Topology
from unfurl_lite.model.narrow import type_of
from unfurl_lite.model.status_layout import HOSTED_ON
from unfurl_lite.security.taint import Sensitive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

INPUTS_LABEL = "the operation has no input {name}"
#: inputs evaluated after the operation, with its result (:mod:`unfurl_lite.run.results`)
POST_INPUTS = ("done", "resultTemplate")


def instance_view(
    instance: Instance,
    template: NodeTemplate | None,
    ctx_for: Callable[[], EvalContext] | None = None,
) -> Mapping[str, Any]:
    """An instance as templates see it: its properties, then the attributes its template
    declares, then those operations reported (each wins over the one before). With
    ``ctx_for`` (the context its own expressions evaluate in: SELF is this instance) each
    spec value is evaluated when first read, so ``{eval: {get_env: X}}`` or
    ``{get_input: X}`` reaches an operation as its value."""
    # an instance the spec declares without a template (`spec.instances`) has its own
    raw = dict(template.properties) if template else dict(
        instance.extra.get("properties") or {})
    for key in template.undeclared_properties if template else ():
        raw.pop(key, None)  # as Unfurl: a property no type declares is not there
    sensitive: frozenset[str] = template.sensitive_properties if template else frozenset()
    credentials = template.credential_properties if template else frozenset()

    def property_value(key: str, value: Any) -> Any:
        if ctx_for is not None:
            value = evaluate_stored(value, ctx_for())
        if key in sensitive and value is not None:
            value = secret_form(value, key in credentials)
            if ctx_for is not None:
                ctx_for().secrets.update(secret_leaves(value))
        return value

    properties = LazyValues(raw, property_value, f"the properties of {instance.name!r}")
    declared = dict(template.attributes) if template else {}
    recorded = instance.attributes

    def attribute_value(key: str, value: Any) -> Any:
        if key in recorded or ctx_for is None:
            return value  # what an operation reported is data, not an expression
        return evaluate_stored(value, ctx_for())

    attributes = LazyValues({**declared, **recorded}, attribute_value,
                            f"the attributes of {instance.name!r}")
    fixed = dict(
        name=instance.name,
        template=instance.template,
        type=template.type if template else None,
        attributes=attributes,
        properties=properties,
        status=str(instance.status),
        state=str(instance.state) if instance.state else None,
    )

    def view_value(key: str, value: Any) -> Any:
        if key in attributes and key not in ("attributes", "properties"):
            return attributes[key]
        if key in properties and key not in ("attributes", "properties"):
            return properties[key]
        return fixed[key]

    own = {**raw, **declared, **recorded}
    return InstanceView({**own, **fixed}, view_value, instance.name, instance.template,
                        hidden=frozenset(fixed) - set(own),
                        unset=template.unset_properties if template else frozenset())


def _or_empty(view: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if view is None else view


def wrapped_inputs(topology: Topology) -> dict[str, Any]:
    """Sensitive inputs wrapped; one given as an expression (``{eval: {get_env: PW}}``)
    is marked so its value is wrapped once evaluated."""
    sensitive = topology.sensitive_inputs
    return {k: _wrap(v) if k in sensitive else v for k, v in topology.inputs.items()}


def _wrap(value: YAMLValue) -> Any:
    if value is None:
        return None
    if isinstance(value, dict | list):
        return {"eval": {"sensitive": value}}
    return Sensitive(str(value))


#: the fields of a ``tosca.datatypes.Credential`` that are secret (the others say how to use it)
CREDENTIAL_SECRETS = ("token", "keys")


def secret_form(value: Any, credential: bool = False) -> Any:
    """A sensitive property's value as templates see it: a scalar is a secret; a map or a
    list keeps its shape (``SELF.credential.user`` reads a field) with its leaves secret,
    of a Credential only its token and keys."""
    if isinstance(value, Mapping) and not isinstance(value, Sensitive):
        return {k: secret_form(v) if not credential or k in CREDENTIAL_SECRETS else v
                for k, v in value.items()}
    if isinstance(value, list):
        return [secret_form(v) for v in value]
    return value if value is None or isinstance(value, Sensitive) else Sensitive(str(value))


def secret_leaves(value: Any) -> list[str]:
    """The secrets in a value :func:`secret_form` made."""
    if isinstance(value, Sensitive):
        return [str(value)]
    items = value.values() if isinstance(value, Mapping) else value if isinstance(
        value, list) else ()
    return [leaf for item in items for leaf in secret_leaves(item)]


def _declared_secrets(template: NodeTemplate) -> set[str]:
    """The secrets a template's sensitive properties hold as written (not expressions)."""
    found: set[str] = set()
    for key in template.sensitive_properties:
        value = template.properties.get(key)
        if key in template.credential_properties and isinstance(value, Mapping):
            found.update(secret_leaves(secret_form(
                {k: v for k, v in value.items() if isinstance(v, str | int | float)}, True)))
        elif value is not None and not isinstance(value, dict | list):
            found.add(str(value))
    return found


def topology_secrets(topology: Topology) -> set[str]:
    """Every secret the spec declares, known before any task runs, so output from any
    task (a command echoing ``$PASSWORD``) is redacted even if no template read it."""
    found = {
        str(v)
        for k, v in topology.inputs.items()
        if k in topology.sensitive_inputs and v is not None and not isinstance(v, dict | list)
    }
    for template in topology.templates.values():
        found |= _declared_secrets(template)
    return found


def declared_env(topology: Topology) -> frozenset[str]:
    """Environment variables the spec names with ``{eval: {get_env: NAME}}`` (in topology
    inputs and operation inputs): templates may read these with ``get_env`` too."""
    cached = _DECLARED.get(id(topology))
    if cached is not None and cached[0] is topology:
        return cached[1]
    names: set[str] = set()
    stack: list[YAMLValue] = [topology.inputs]
    for template in topology.templates.values():
        for operations in template.interfaces.values():
            stack.extend(op.inputs for op in operations.values() if op is not None)
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            found = item.get("get_env") if len(item) == 1 else None
            if isinstance(found, str):
                names.add(found)
            elif isinstance(found, list) and found and isinstance(found[0], str):
                names.add(found[0])
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    result = frozenset(names)
    if len(_DECLARED) > 8:
        _DECLARED.clear()
    _DECLARED[id(topology)] = (topology, result)
    return result


_DECLARED: dict[int, tuple[Topology, frozenset[str]]] = {}


def spec_secrets(topology: Topology) -> set[str]:
    """Every secret the spec can be seen to hold without running anything: the declared
    ones (:func:`topology_secrets`), sensitive inputs given as expressions (evaluated
    now), and the value of every variable it names with ``get_env``. A job knows these
    before its first task; ``resume`` derives them again before recording a killed job."""

    found = topology_secrets(topology)
    ctx = EvalContext(self_view={}, inputs=wrapped_inputs(topology))
    for name in topology.sensitive_inputs:
        value = topology.inputs.get(name)
        if isinstance(value, dict | list):
            try:
                evaluate(value, ctx)
            except Exception:  # fails where it is read, and says so there
                continue
    found.update(ctx.secrets)
    for name in declared_env(topology):
        value = os.environ.get(name)
        if value:
            found.add(value)
    return found


def make_context(
    topology: Topology,
    instances: Mapping[str, Instance],
    target: str,
    source: str | None = None,
    peer: str | None = None,
) -> EvalContext:
    """What an expression evaluated on ``target`` sees (SELF, HOST, SOURCE/TARGET, the other
    instances by name), each instance's view built only when first read, so a task pays only
    for what its inputs use."""
    views: dict[str, Mapping[str, Any]] = {}
    own_contexts: dict[str, EvalContext] = {}

    def view(name: str | None) -> Mapping[str, Any] | None:
        if name is None or name not in instances:
            return None
        if name not in views:
            inst = instances[name]
            views[name] = instance_view(
                inst, topology.templates.get(inst.template), lambda: own_context(name))
        return views[name]

    def lookup(name: str) -> Mapping[str, Any] | None:
        if name in instances:
            return view(name)
        first = next((i.name for i in instances.values() if i.template == name), None)
        return view(first)

    def host_of(name: str) -> Mapping[str, Any] | None:
        """HOST: the instance this one is hosted on (a scaled host has several)."""
        template = topology.templates.get(instances[name].template)
        if template is None or not template.host:
            return None
        pinned = instances[name].extra.get(HOSTED_ON)
        if isinstance(pinned, str) and pinned in instances:
            return view(pinned)
        return lookup(template.host)

    def own_context(name: str) -> EvalContext:
        """Where an instance's own property expressions evaluate: SELF is that instance,
        with the job's inputs, secrets and project directory."""
        if name not in own_contexts:
            own_contexts[name] = dataclasses.replace(
                ctx, self_view=_or_empty(view(name)), host=host_of(name), source=None, target=None,
                operation_inputs={}, extra={})
        return own_contexts[name]

    ctx = EvalContext(
        self_view=_or_empty(view(target)),
        inputs=wrapped_inputs(topology),
        host=host_of(target),
        source=view(source) if source else None,
        target=view(peer) if peer else None,
        lookup_node=lookup,
        declared_env=declared_env(topology),
        topology=topology,
        instances=instances,
    )
    template = topology.templates.get(instances[target].template)
    ctx.secrets.update(known_secrets(ctx.inputs, template))
    return ctx


def relationship_view(ctx: EvalContext, source: str, requirement: str,
                      attributes: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """SELF in a relationship's operation, as Unfurl gives it: the relationship instance
    (its type's attribute and property defaults, then its template's or the requirement's
    properties, then the ``attributes`` its operations set), named as Unfurl names it;
    None when the source has no such requirement."""
    from unfurl_lite.expressions.instance_graph import graph_for  # start-up: relationship ops only

    if ctx.topology is None or ctx.instances is None:
        return None
    graph = graph_for(ctx.topology, ctx.instances)
    shape = next((r for r in graph.requirements.get(source, ())
                  if r.requirement == requirement), None)
    if shape is None:
        return None
    raw = {**shape.attributes, **shape.properties, **attributes}
    fixed = {"name": shape.name, "type": shape.type, "template": shape.name,
             "properties": LazyValues(dict(shape.properties),
                                      lambda k, v: evaluate_stored(v, ctx)),
             "attributes": dict(attributes)}
    return InstanceView({**raw, **fixed}, lambda k, v: v if k in fixed or k in attributes
                        else evaluate_stored(v, ctx), shape.name, shape.name,
                        f"{source}::.requirements::[.name={requirement}]",
                        hidden=frozenset(fixed) - set(raw), link=(source, requirement))


def known_secrets(inputs: Mapping[str, Any], template: NodeTemplate | None) -> set[str]:
    """The secrets a task on an instance of ``template`` knows before anything renders:
    the topology's sensitive ``inputs`` (as :func:`wrapped_inputs` gives them) and the
    template's sensitive properties."""
    secrets = {str(v) for v in inputs.values() if isinstance(v, Sensitive)}
    return secrets | _declared_secrets(template) if template else secrets


def render_inputs(
    raw: Mapping[str, Any], extra: Mapping[str, Any], ctx: EvalContext,
    allow_override: bool = True, known: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate an operation's inputs now, just before it runs (post-inputs stay raw);
    ``known``: values of some already evaluated in ``ctx``, taken as they are."""
    merged = merged_inputs(raw, extra, allow_override)
    given = known or {}
    lazy = LazyValues(merged, lambda k, v: v if k in POST_INPUTS else given[k] if k in given
                      else evaluate(v, ctx), INPUTS_LABEL)
    ctx.operation_inputs = lazy  # `{{ inputs.a }}` in another input reads a's value
    rendered = Labelled({k: lazy[k] for k in merged}, INPUTS_LABEL)
    ctx.operation_inputs = rendered
    return rendered


def merged_inputs(
    raw: Mapping[str, Any], extra: Mapping[str, Any], allow_override: bool
) -> dict[str, Any]:
    """The operation's inputs with the job's extra ones (``--kwargs``) over them."""
    merged = dict(raw)
    for key, value in extra.items():
        if key in merged and not allow_override:
            raise ExpressionError(
                f"input {key!r} is defined by the operation; "
                "pass --allow-kwargs-override to replace it"
            )
        merged[key] = value
    return merged


def plain_inputs(
    raw: Mapping[str, Any], extra: Mapping[str, Any], allow_override: bool
) -> dict[str, Any] | None:
    """The inputs as :func:`render_inputs` renders them when nothing in them needs
    evaluating (text without template marks, numbers, booleans, nulls): the same values,
    without an evaluation context. None when one needs evaluating."""
    merged = merged_inputs(raw, extra, allow_override)
    for value in merged.values():
        kind = type_of(value)
        if kind is str:
            if "{{" in value or "{%" in value or "}}" in value or "%}" in value:
                return None
        elif value is not None and kind not in (bool, int, float):
            return None
    return Labelled(merged, INPUTS_LABEL)
