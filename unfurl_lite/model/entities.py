"""The domain model: templates (what should exist) and instances (what was recorded).

Templates are immutable once loaded; instances carry the mutable recorded status that
jobs update. Names follow TOSCA and Unfurl so that a user reading the ensemble and a
developer reading this module use the same words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum

from unfurl_lite.model.narrow import new_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Status(StrEnum):
    """Operational status, Unfurl's ``readyState.local``."""

    unknown = "unknown"
    pending = "pending"
    ok = "ok"
    degraded = "degraded"
    error = "error"
    absent = "absent"


class NodeState(StrEnum):
    """TOSCA node state (TOSCA 1.3 §3.4.1), Unfurl's ``readyState.state``."""

    initial = "initial"
    creating = "creating"
    created = "created"
    configuring = "configuring"
    configured = "configured"
    starting = "starting"
    started = "started"
    stopping = "stopping"
    stopped = "stopped"
    deleting = "deleting"
    deleted = "deleted"
    error = "error"


class Priority(StrEnum):
    required = "required"
    optional = "optional"
    ignore = "ignore"


# Interface names users may write, mapped to the short names used everywhere inside.
INTERFACE_ALIASES = {
    "tosca.interfaces.node.lifecycle.Standard": "Standard",
    "tosca.interfaces.relationship.Configure": "Configure",
    "unfurl.interfaces.Install": "Install",
    "cloudify.interfaces.lifecycle": "Lifecycle",
    "cloudify.interfaces.validation": "Validation",
    "cloudify.interfaces.monitoring": "Monitoring",
    "cloudify.interfaces.relationship_lifecycle": "RelationshipLifecycle",
}

# The operations each well-known interface declares (TOSCA, Unfurl and Cloudify).
INTERFACE_OPERATIONS: dict[str, tuple[str, ...]] = {
    "Standard": ("create", "configure", "start", "stop", "delete"),
    "Install": ("check", "discover", "connect", "revert", "restart"),
    "Configure": (
        "pre_configure_source",
        "pre_configure_target",
        "post_configure_source",
        "post_configure_target",
        "add_target",
        "add_source",
        "target_changed",
        "remove_target",
        "remove_source",
    ),
    "Lifecycle": (
        "precreate",
        "create",
        "configure",
        "start",
        "poststart",
        "prestop",
        "stop",
        "delete",
        "postdelete",
        "preheal",
        "heal",
        "postheal",
        "check_drift",
        "update",
        "update_config",
        "update_apply",
    ),
    "Validation": ("create", "delete", "check_status"),
    "Monitoring": ("start", "stop"),
    "RelationshipLifecycle": ("preconfigure", "postconfigure", "establish", "unlink"),
}


#: keys of an interface definition that are never operations: Unfurl's reserved words
#: (tosca-parser's INTERFACE_DEF_RESERVED_WORDS), ``outputs``, and ``defaults`` (the
#: shared definition Unfurl puts beside the interfaces). Loading, validation and planning
#: all read operations through this one list.
RESERVED_INTERFACE_KEYS = frozenset({
    "type", "description", "inputs", "outputs", "operations", "notifications",
    "implementation", "requirements", "derived_from", "metadata", "defaults",
})


def canonical_interface(name: str) -> str:
    return INTERFACE_ALIASES.get(name, name)


# Unfurl's configurator class names, and ours, for the built-in operation kinds.
OPERATION_KINDS = {
    "Shell": "Shell",
    "unfurl.configurators.shell.ShellConfigurator": "Shell",
    "unfurl.configurators.ShellConfigurator": "Shell",
    "Template": "Template",
    "unfurl.configurators.TemplateConfigurator": "Template",
    "unfurl.configurators.template.TemplateConfigurator": "Template",
}

UNFURL_CLASS_NAMES = {
    "Shell": "unfurl.configurators.shell.ShellConfigurator",
    "Template": "unfurl.configurators.TemplateConfigurator",
}


@dataclass(frozen=True)
class Implementation:
    """What runs an operation: a built-in kind (Shell, Template) or a Python callable."""

    class_name: str  # as written: "Shell", "unfurl.configurators...", "pkg.mod:func"
    primary: str | None = None  # a shell command given as a plain string implementation
    #: Unfurl's ``preConditions``: a JSON schema the target's values must meet for the
    #: operation to run, as JSON text (hashable); see :meth:`conditions`
    preconditions: str | None = None

    @staticmethod
    def conditions(implementation: Any) -> str | None:
        """An implementation mapping's ``preConditions`` as JSON text, None without them."""
        given = implementation.get("preConditions") if isinstance(implementation, dict) else None
        return json.dumps(given, sort_keys=True, default=str) if given else None

    @property
    def kind(self) -> str:
        if self.class_name in OPERATION_KINDS:
            return OPERATION_KINDS[self.class_name]
        return "Python"

    @property
    def unfurl_class_name(self) -> str:
        return UNFURL_CLASS_NAMES.get(self.kind, self.class_name)


@dataclass(frozen=True)
class Retry:
    """An operation's retry policy: how often, how long between tries."""
    max_retries: int = 0
    interval: float = 0.0
    backoff: float = 1.0


#: what an operation output may be mapped to besides an attribute (Unfurl 1.2.0's
#: ``_set_outputs``): the instance's operational status and its node state
OUTPUT_TO_STATUS, OUTPUT_TO_STATE = ".status", ".state"


def output_target(mapping: object) -> str | None:
    """An operation output's mapping as Unfurl 1.2.0 reads it: an attribute name,
    ``[SELF, name]`` (TOSCA's list form), ``.status`` or ``.state``; null maps nothing.
    Any other form is kept as its text, for validate to refuse by name."""
    if mapping is None:
        return None
    if isinstance(mapping, list) and len(mapping) == 2 and mapping[0] == "SELF":
        return str(mapping[1])
    return str(mapping)


@dataclass(frozen=True)
class Operation:
    """One operation of an interface, as declared on a template or type."""
    interface: str  # canonical short name: Standard, Install, Configure, Lifecycle...
    name: str
    implementation: Implementation | None  # None: declared but not mapped (does nothing)
    inputs: dict[str, Any] = field(default_factory=new_dict)
    retry: Retry | None = None
    timeout: float | None = None
    # the implementation's ``environment``: Unfurl's rules (NAME, +NAME, -NAME, ^NAME),
    # values rendered when the task runs
    environment: dict[str, Any] | None = None
    #: TOSCA's attribute mapping: output name -> the attribute it sets (None: not mapped)
    outputs: dict[str, str | None] | None = None
    #: declared as a bare command string: as Unfurl 1.2.0, a redeclaration (by a derived
    #: type or a template) that gives no implementation then has none; one declared as a
    #: mapping keeps its implementation (unfurl-cases 237)
    shorthand: bool = False

    @property
    def qualified_name(self) -> str:
        return f"{self.interface}.{self.name}"

    @property
    def run_inputs(self) -> dict[str, Any]:
        """The inputs the operation runs with: a command-line implementation becomes the
        ``command`` input, first, as Unfurl's ``set_default_command`` builds them (an
        input named ``command`` replaces its value, not its place): the order Unfurl
        resolves, and so lists in ``digestKeys``, inputs."""
        primary = self.implementation.primary if self.implementation is not None else None
        if not primary:
            return dict(self.inputs)
        return {"command": primary, **self.inputs}


Interfaces = dict[str, dict[str, Operation]]


@dataclass(frozen=True)
class Requirement:
    """One requirement of a template: which template it needs, and how."""
    name: str  # host, dependency, connection...
    node: str  # target template name
    relationship: str | None = None  # relationship type or template name
    interfaces: Interfaces = field(default_factory=new_dict)  # relationship operations
    optional: bool = False
    #: Cloudify's ``target_interfaces``: relationship_lifecycle operations run on the target
    #: (TOSCA's Configure interface names its target-side operations in ``interfaces``)
    target_interfaces: Interfaces = field(default_factory=new_dict)

    def relationship_operation(self, interface: str, name: str, side: str) -> Operation | None:
        """The operation a relationship step runs on ``side`` (source or target): Cloudify's
        relationship_lifecycle has the same names on both sides, in two interface sets."""
        owner = self.target_interfaces if side == "target" and interface == \
            "RelationshipLifecycle" else self.interfaces
        return owner.get(interface, {}).get(name)

    @property
    def is_host(self) -> bool:
        return self.name == "host" or (self.relationship or "").endswith(
            ("HostedOn", "contained_in")
        )


@dataclass(frozen=True)
class NodeType:
    """A node type as declared, before inheritance is applied."""
    name: str
    derived_from: str | tuple[str, ...] | None = None  # a tuple: Unfurl's list of parents
    properties: dict[str, Any] = field(default_factory=new_dict)  # property definitions
    interfaces: Interfaces = field(default_factory=new_dict)
    metadata: dict[str, Any] = field(default_factory=new_dict)
    attributes: dict[str, Any] = field(default_factory=new_dict)  # attribute definitions
    interface_types: dict[str, str] = field(default_factory=new_dict)  # see NodeTemplate's


@dataclass(frozen=True)
class NodeTemplate:
    """A node template with its type's interfaces and properties merged in."""
    name: str
    type: str
    properties: dict[str, Any] = field(default_factory=new_dict)
    requirements: tuple[Requirement, ...] = ()
    interfaces: Interfaces = field(default_factory=new_dict)  # type's merged with the template's
    metadata: dict[str, Any] = field(default_factory=new_dict)
    directives: tuple[str, ...] = ()
    priority: Priority = Priority.required
    type_lineage: tuple[str, ...] = ()  # its type and every ancestor, nearest first
    sensitive_properties: frozenset[str] = frozenset()
    #: those of them typed ``tosca.datatypes.Credential``: only its token and keys are secret
    credential_properties: frozenset[str] = frozenset()
    default_instances: int = 1
    attributes: dict[str, Any] = field(default_factory=new_dict)  # initial values, expressions
    #: interface type name -> the interface it types (``my.interfaces.Helm`` -> ``Install``)
    interface_types: dict[str, str] = field(default_factory=new_dict)
    #: required requirements its type declares that no template matches: valid, but a job
    #: that would run one of its operations cannot be created (as Unfurl 1.2.0)
    missing_requirements: tuple[str, ...] = ()
    #: properties the template sets that its (wholly known) types do not declare: Unfurl
    #: drops them, so expressions never see them (``SELF.x`` fails, ``::app::x`` is null)
    undeclared_properties: frozenset[str] = frozenset()
    #: properties its type declares ``required: false`` with no default that the template
    #: leaves unset: ``get_property`` of one is null in Unfurl 1.2.0, ``SELF.x`` still fails
    unset_properties: frozenset[str] = frozenset()
    #: the nodes its own requirements name, in the order it writes them (template or type
    #: names): tosca-parser's ``HOST`` search follows the first that finds a template
    written_targets: tuple[str, ...] = ()

    def declares(self, name: str) -> bool:
        """Whether its type declares the property ``name`` (set, defaulted or unset)."""
        # start-up: model.lineage's tables only where HOST is searched
        from unfurl_lite.model.lineage import NORMATIVE_PROPERTIES

        return (name in self.properties and name not in self.undeclared_properties) or \
            name in self.unset_properties or any(
                name in NORMATIVE_PROPERTIES.get(t, (None, ()))[1] for t in self.type_lineage)

    def operation(self, name: str) -> Operation | None:
        """Find ``create``, ``Standard.create``, ``cloudify.interfaces.lifecycle.create`` or
        an operation by its interface's type (``my.interfaces.Helm.execute``), as Unfurl."""
        interface, _, op = name.rpartition(".")
        if interface:
            interface = self.interface_types.get(interface, interface)
            return self.interfaces.get(canonical_interface(interface), {}).get(op)
        for ops in self.interfaces.values():
            if name in ops:
                return ops[name]
        return None

    def is_a(self, type_name: str) -> bool:
        return type_name in self.type_lineage

    @property
    def dependencies(self) -> tuple[str, ...]:
        return tuple(r.node for r in self.requirements)

    @property
    def host(self) -> str | None:
        return next((r.node for r in self.requirements if r.is_host), None)


@dataclass(frozen=True)
class Topology:
    """The templates, types and inputs of a service template, immutable once loaded."""
    templates: dict[str, NodeTemplate]
    types: dict[str, NodeType] = field(default_factory=new_dict)
    inputs: dict[str, Any] = field(default_factory=new_dict)  # resolved input values
    sensitive_inputs: frozenset[str] = frozenset()
    outputs: dict[str, Any] = field(default_factory=new_dict)
    #: the type and template definitions as written (``node_types``, ``relationship_types``,
    #: ``capability_types``, ``relationship_templates``, ``node_templates``; Unfurl's
    #: ``types:`` sorted into them), for what queries read: capabilities, relationships
    definitions: dict[str, Any] = field(default_factory=new_dict)


@dataclass
class Instance:
    """The recorded status of one instance of a template."""

    name: str
    template: str
    status: Status = Status.unknown
    state: NodeState | None = None
    priority: Priority = Priority.required
    attributes: dict[str, Any] = field(default_factory=new_dict)
    created: str | bool | None = None  # changeId of the task that created it; False: discovered
    last_config_change: str | None = None
    last_state_change: str | None = None
    protected: bool = False
    extra: dict[str, Any] = field(default_factory=new_dict)  # keys we read but do not interpret
    #: requirement name -> the relationship instance (Unfurl's ``requirements:`` entries)
    relationships: dict[str, Instance] = field(default_factory=new_dict)

    @property
    def discovered(self) -> bool:
        return self.created is False

    @property
    def present(self) -> bool:
        return self.status in (Status.ok, Status.degraded, Status.error) or (
            self.state is not None
            and self.state not in (NodeState.initial, NodeState.deleted)
            and self.status != Status.absent
        )


def effective_status(own: Status, dependencies: list[Status]) -> Status:
    """Fold what an instance depends on into its own status (Unfurl's ``effective``).

    As Unfurl's aggregate status: an instance that is fine but depends on something
    absent, in error or unknown is itself in error (it cannot work); one whose dependency
    is still pending is pending; a degraded dependency degrades it.
    """
    if own not in (Status.ok, Status.degraded) or not dependencies:
        return own
    if any(s in (Status.error, Status.absent, Status.unknown) for s in dependencies):
        return Status.error
    if Status.pending in dependencies:
        return Status.pending
    if Status.degraded in dependencies:
        return Status.degraded
    return own
