"""Lazy evaluation of operation inputs: TOSCA's functions and Unfurl's ``eval:``
expressions (the query language and its functions, :mod:`.resolve`), with Jinja2
templates rendered in the sandbox (:mod:`.sandbox`).

Values that are secret are wrapped (:class:`~unfurl_lite.security.taint.Sensitive`) and
stay wrapped through evaluation, so the records can redact them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.lazy import (
    Labelled,
    LazyInputs,
    LazyValues,
    OperationInputs,
    instance_name,
    present,
)
from unfurl_lite.expressions.names import did_you_mean
from unfurl_lite.model.entities import Topology
from unfurl_lite.model.narrow import new_dict, new_set
from unfurl_lite.security import taint
from unfurl_lite.security.taint import Sensitive, Tainted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.expressions.entities import Entity, World
    from unfurl_lite.model.entities import Instance, NodeTemplate, Topology
    from unfurl_lite.model.narrow import YAMLValue

__all__ = ["EvalContext", "ExpressionError", "Sensitive", "evaluate"]


@dataclass
class EvalContext:
    """What an expression can see: SELF, HOST, SOURCE/TARGET, the topology's inputs, and
    (for queries) the topology and its instances."""

    self_view: Mapping[str, Any]
    inputs: Mapping[str, Any]
    host: Mapping[str, Any] | None = None
    source: Mapping[str, Any] | None = None
    target: Mapping[str, Any] | None = None
    operation_inputs: Mapping[str, Any] = field(default_factory=new_dict)
    lookup_node: Callable[[str], Mapping[str, Any] | None] = lambda name: None
    extra: Mapping[str, Any] = field(default_factory=new_dict)
    secrets: set[str] = field(default_factory=new_set)  # every sensitive value seen
    project_root: Path | None = None  # where `file` may read; None: no file reads
    allow_outside_paths: bool = False
    declared_env: frozenset[str] = frozenset()  # get_env names the spec declares
    env_passthrough: bool = False  # --env-passthrough: templates may read any variable
    deadline: float | None = None  # time.monotonic() by which rendering must end
    time_limit: float = 10.0  # the seconds that deadline allows, for the message
    cancel: Any = None  # the job's cancel event: a render stops when it is set
    template_reads: int = 0  # > 0 while a template reads TOPOLOGY.inputs
    topology: Topology | None = None  # for queries: the templates and their definitions
    instances: Mapping[str, Instance] | None = None  # for queries: every instance
    metadata: Mapping[str, Any] = field(default_factory=new_dict)  # get_ensemble_metadata
    on_file_read: Callable[[], None] | None = None  # a render's watch: a file's text was read
    #: a render's watch: a query read a value of an entity that has no view (an artifact)
    on_read: Callable[[str, str, Any], None] | None = None
    start: Entity | None = None  # where relative queries start when not SELF (an artifact)
    _world: World | None = field(default=None, repr=False, compare=False)

    def variables(self) -> dict[str, Any]:
        topology = Labelled({"inputs": LazyInputs(self.inputs, self._read_input),
                             "outputs": {}}, "TOPOLOGY")
        names = {
            "SELF": self.self_view,
            # (hosted on nothing, an instance's HOST is the root's values, as in Unfurl)
            "HOST": self.host if self.host is not None or self.instances is None else topology,
            "inputs": OperationInputs(self.operation_inputs),
            "TOPOLOGY": topology,
            "ROOT": topology,
            "NODES": _Nodes(self, topology),
            "__unfurl": _Functions(self),
        }
        if self.source is not None or self.target is not None:  # a relationship's only
            names.update(SOURCE=self.source, TARGET=self.target)  # (as Unfurl)
        names.update(self.extra)
        return names

    def evaluate(self, value: Any) -> Any:
        """Evaluate ``value`` here (Unfurl's ``map_value``)."""
        return evaluate(value, self)

    def _read_input(self, name: str) -> Any:
        self.template_reads += 1  # Unfurl digests `{{ TOPOLOGY.inputs.x }}` as no read
        try:
            return read_input(name, self)
        finally:
            self.template_reads -= 1

    def world(self) -> World:
        """The instances as queries walk them (built on the first query)."""
        if self._world is None:
            self._world = make_world(self)
        return self._world

    def current_entity(self) -> Entity:
        """Where a relative query starts: this instance (the root when none)."""
        if self.start is not None:
            return self.start
        world = self.world()
        link = getattr(self.self_view, "link", None)
        if link is not None:  # a relationship's operation: its relationship
            requirements: list[Any] = getattr(world.node(link[0]), "requirements", [])
            found_link = next((r for r in requirements if r.shape.requirement == link[1]),
                              None)
            if found_link is not None:
                return found_link
        name = instance_name(self.self_view) if present(self.self_view) else None
        found = world.node(name) if name is not None else None
        return found if found is not None else world.root

    def topology_templates(self) -> Mapping[str, NodeTemplate]:
        return self.topology.templates if self.topology is not None else {}


class _Nodes(Mapping[str, "Any"]):
    """``NODES.app.port`` in a template: each instance's values by its name, the root's
    (``inputs``, ``outputs``) first, as ``root``, as in Unfurl."""

    def __init__(self, ctx: EvalContext, root: Mapping[str, Any]) -> None:
        self.ctx = ctx
        self.root = root

    def __getitem__(self, key: str) -> Any:
        view = self.ctx.lookup_node(key) if isinstance(key, str) else None
        if view is None:
            if key == "root":
                return self.root
            raise KeyError(key)
        return view

    def __iter__(self) -> Any:
        instances = self.ctx.instances or {}
        return iter(instances if "root" in instances else ("root", *instances))

    def __len__(self) -> int:
        instances = self.ctx.instances or {}
        return len(instances) + ("root" not in instances)


class _Functions:
    """``__unfurl`` in a template: Unfurl's expression context, whose attributes are its
    expression functions (``{{ __unfurl.to_label('a', 'b', sep='.') }}``)."""

    def __init__(self, ctx: EvalContext) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        # start-up: keeps expressions.catalog (1 module) off `export` until __getattr__() runs
        from unfurl_lite.expressions import catalog

        if name.startswith("_") or catalog.entry("function", name) is None:
            raise AttributeError(name)

        def call(*args: Any, **options: Any) -> Any:  # Unfurl passes the arguments' tuple
            # start-up: keeps expressions.resolve (8 modules) off `export` until call() runs
            from unfurl_lite.expressions.resolve import Scope, resolve

            return resolve({"eval": {name: args, **options}}, Scope(self._ctx, None, {}))

        return call


def evaluate(value: Any, ctx: EvalContext, depth: int = 0) -> Any:
    """Evaluate templates, TOSCA functions and ``{eval: ...}`` anywhere inside a value
    (Unfurl's ``map_value``)."""
    # start-up: keeps expressions.resolve (8 modules) off `export` until evaluate() runs
    from unfurl_lite.expressions.resolve import Scope, map_value

    if isinstance(value, Sensitive):
        if not isinstance(value, Tainted):
            ctx.secrets.add(str(value))
        return value
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and not _maybe_template(value):
        return value
    try:
        return map_value(value, Scope(ctx, None, {}))
    except RecursionError:
        raise ExpressionError("expression nested too deeply") from None


def evaluate_stored(value: Any, ctx: EvalContext) -> Any:
    """``evaluate`` of a value an instance holds: a quoted expression's result is rendered
    once more, as Unfurl reads it (resolve.stored_value)."""
    if not isinstance(value, dict | list):
        return evaluate(value, ctx)
    # start-up: keeps expressions.resolve (8 modules) off `export` until evaluate_stored() runs
    from unfurl_lite.expressions.resolve import Scope, stored_value

    try:
        return stored_value(value, Scope(ctx, None, {}))
    except RecursionError:
        raise ExpressionError("expression nested too deeply") from None


def _maybe_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "}}" in text or "%}" in text


def mark(value: YAMLValue, ctx: EvalContext, variable: str | None = None) -> Any:
    """A value as a secret: text wrapped, every item of a list or mapping wrapped."""
    if isinstance(value, Mapping):
        return {k: mark(v, ctx, variable) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mark(v, ctx, variable) for v in value]
    text = "" if value is None else str(value)
    wrapped = Sensitive(text) if variable is None else taint.env_secret(text, variable)
    ctx.secrets.add(str(wrapped))
    return wrapped


def built_text(text: str, parts: list[Any], ctx: EvalContext) -> Any:
    """Text built from parts: a secret when one part is; built from environment values
    only, it stays one (it takes part in change detection, as in Unfurl)."""
    if not any(isinstance(p, Sensitive) for p in parts):
        return text
    variables = taint.sources(*parts)
    if variables is not None:
        return taint.env_tainted(text, variables)
    return mark(text, ctx)


def no_input(function: str, name: Any, ctx: EvalContext) -> str:
    close = did_you_mean(str(name), ctx.inputs)
    return f"{function}: no input named {name!r}" + (f"; {close}" if close else "")


def read_input(name: Any, ctx: EvalContext) -> Any:
    """A topology input's value, evaluated (``get_input``)."""
    if name not in ctx.inputs:
        raise ExpressionError(no_input("get_input", name, ctx))
    value = ctx.inputs[name]
    if isinstance(value, Sensitive) and not isinstance(value, Tainted):
        ctx.secrets.add(str(value))
    return evaluate(value, ctx)


def environment_value(name: str, ctx: EvalContext) -> Any:
    """``get_env``'s value: a secret read from the environment (None when unset). The
    spec names the variable, which declares it."""
    value = os.environ.get(name)
    return None if value is None else mark(value, ctx, name)


def declared_environment(ctx: EvalContext) -> dict[str, str]:
    """The variables an expression may copy (``to_env``'s ``+NAME``): what operations
    get and what the spec declares."""
    # start-up: keeps expressions.sandbox (8 modules) off `export` until declared_environment() runs
    from unfurl_lite.expressions.sandbox import env_allowed

    return {k: v for k, v in os.environ.items() if env_allowed(k, ctx)}


# --- what queries walk -------------------------------------------------------------------


def make_world(ctx: EvalContext) -> World:
    """What queries walk in ``ctx``: its instances (none without them), values read
    through ``ctx``'s views, so reads are watched as a template's are."""
    # start-up: keeps expressions.entities (4 modules) off `export` until make_world() runs
    from unfurl_lite.expressions.entities import World
    from unfurl_lite.expressions.instance_graph import graph_for

    topology = ctx.topology or Topology(templates={})
    instances = ctx.instances or {}
    inputs = LazyValues(ctx.inputs, lambda key, value: read_input(key, ctx))

    def fields(name: str) -> dict[str, Any]:
        instance = instances.get(name)
        if instance is None:
            return {}
        changes = [c for c in (instance.last_config_change, instance.last_state_change) if c]
        return {"created": instance.created or None, "protected": instance.protected or None,
                "last_change": max(changes) if changes else None,
                "last_config_change": instance.last_config_change,
                "last_state_change": instance.last_state_change,
                "customized": instance.extra.get("customized"),
                "priority": str(instance.priority), "status": str(instance.status),
                "state": str(instance.state) if instance.state else None}

    root = ctx.project_root
    return World(
        graph=graph_for(topology, instances),
        view=lambda name: ctx.lookup_node(name),
        inputs=lambda: inputs,
        outputs=dict,
        evaluate=lambda value: evaluate(value, ctx),
        evaluate_at=lambda value, entity: evaluate(value, replace(ctx, start=entity)),
        note_read=lambda key, name, value: ctx.on_read and ctx.on_read(key, name, value),
        instance_fields=fields,
        lineage=lambda name: topology.templates[name].type_lineage
        if name in topology.templates else (),
        definitions=lambda: topology.definitions,
        deployment=root.name if root is not None else "",
        project=str(root) if root is not None else "",
    )


# --- TOSCA's get_property -----------------------------------------------------------------


def _entity(ref: str, ctx: EvalContext) -> Mapping[str, Any]:
    entity: Mapping[str, Any] | None
    if ref == "SELF":
        entity = ctx.self_view
    elif ref == "HOST":
        entity = ctx.host
    elif ref == "SOURCE":
        entity = ctx.source
    elif ref == "TARGET":
        entity = ctx.target
    else:
        entity = ctx.lookup_node(ref)
    if entity is None:
        raise ExpressionError(f"no node {ref!r} to read from")
    return entity


def _walk(value: YAMLValue, path: list[Any], owner: Any, what: str) -> Any:
    """tosca-parser's walk into a property's value: a list's index is read as a number
    (``"0"`` is 0, ``-1`` the last), a mapping's key as written."""
    for key in path:
        if isinstance(value, list):
            try:
                position = int(key)
            except (TypeError, ValueError):
                position = len(value)
            if -len(value) <= position < len(value):
                value = value[position]
                continue
        elif isinstance(value, Mapping) and key in value:
            value = value[key]
            continue
        raise ExpressionError(f"get_property: {owner} has no {what} {key!r}")
    return value


def get_property(args: YAMLValue, ctx: EvalContext) -> Any:
    """TOSCA's ``[entity, req_or_cap?, property, key_or_index*]``, as Unfurl 1.2.0 reads
    it: a property of the node, of its capability of that name, or (``HOST``) of the
    nearest host that has it."""
    if not isinstance(args, list) or len(args) < 2:
        raise ExpressionError("get_property: expected [entity, property, ...]")
    ref, first, *path = args
    if ref == "HOST":
        return _host_property(first, path, ctx)
    entity = _entity(str(ref), ctx)
    properties: Mapping[str, Any] = entity.get("properties") or {}
    name = instance_name(entity)
    if first in properties:
        return _walk(_as_written(properties, entity, first, ctx), [first, *path], name,
                     "property")
    if not path:
        if first in getattr(entity, "unset", ()):
            return None
        raise ExpressionError(f"get_property: {name} has no property {first!r}")
    world = ctx.world()
    node = world.node(str(name)) if name is not None else None
    for capability in getattr(node, "capabilities", ()):
        if capability.name == first:
            return _walk(_properties_of(capability), path, f"{name}'s {first}", "property")
    for relationship in getattr(node, "requirements", ()):
        target = relationship.target
        if relationship.name == first and target is not None:
            for capability in getattr(target, "capabilities", ()):
                if capability.name == first:  # as tosca-parser looks it up
                    return _walk(_properties_of(capability), path, f"{target.name}'s {first}",
                                 "property")
            raise ExpressionError(
                f'get_property: requirement/capability "{first}" referenced from node '
                f'template "{name}" was not found in node template "{target.name}"')
    raise ExpressionError(f"get_property: {name} has no property, capability or "
                          f"requirement {first!r}")


def _host_property(first: Any, path: list[Any], ctx: EvalContext) -> Any:
    """``[HOST, ...]`` as tosca-parser finds the host (Unfurl 1.2.0 evaluates get_property
    there): from the template, the first requirement it writes whose node is a template,
    that template's, and so on, to the first whose type declares the property (or, with
    a path, has the capability ``first`` with that property); its value, null when unset."""
    world = ctx.world()
    templates = ctx.topology_templates()
    current = templates.get(instance_name(ctx.self_view) or "")
    seen: set[str] = set()
    while current is not None and current.name not in seen:
        seen.add(current.name)
        found = next((t for t in map(lambda n: _template_named(templates, n),
                                     current.written_targets) if t is not None), None)
        if found is None:
            break
        view = world.view(found.name)
        properties: Mapping[str, Any] = (view.get("properties") if view is not None else None) or {}
        if found.declares(str(first)):
            if first not in properties:
                if path:
                    raise ExpressionError(f"get_property: {found.name} has no value for {first!r}")
                return None
            return _walk(_as_written(properties, view, first, ctx), [first, *path], found.name,
                         "property")
        if path:
            node = world.node(found.name)
            for capability in getattr(node, "capabilities", ()):
                values = _properties_of(capability)
                if capability.name == first and values.get(path[0]) is not None:
                    return _walk(values, path, f"{found.name}'s {first}", "property")
        current = found
    raise ExpressionError(f"get_property: no host of {instance_name(ctx.self_view)} has the "
                          f"property {first!r}")


def _properties_of(capability: Any) -> Mapping[str, Any]:
    """A capability's properties (not its type's attribute defaults), each evaluated when
    read."""
    return LazyValues(capability.shape.properties, lambda key, _: capability.attribute(key))


def _as_written(properties: Mapping[str, Any], entity: Any, name: Any,
                ctx: EvalContext) -> Mapping[str, Any]:
    """A node's property values as its template writes them: Unfurl 1.2.0's get_property
    (tosca-parser's) gives the written value, which is then evaluated where the function
    is called (``SELF`` is the caller's, a ``q:`` quotes once). A secret property is read
    as evaluated where it is written, so it stays a secret."""
    written: Mapping[str, Any] | None = getattr(properties, "_raw", None)
    template = ctx.topology_templates().get(getattr(entity, "template_name", None) or "")
    if written is None or template is None or name in template.sensitive_properties \
            or name not in written:
        return properties
    return written


def _template_named(templates: Mapping[str, NodeTemplate], name: str) -> NodeTemplate | None:
    """The template of that name, else the first of that type (as tosca-parser finds a
    requirement's node)."""
    found = templates.get(name)
    if found is not None:
        return found
    return next((t for t in templates.values() if name in t.type_lineage), None)


LazyValues = LazyValues  # re-exported for the modules that read expressions' values
