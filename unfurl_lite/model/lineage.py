"""TOSCA type lineage and capabilities over the spec's plain data: which types a node
type derives from, which capabilities it has (TOSCA's normative ones included), and
which capability a requirement connects to. Pure functions: loading uses them to match
requirements, recording to name a relationship's capability.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

#: capabilities of TOSCA's normative node types (name -> capability type)
_NORMATIVE_CAPABILITIES: dict[str, dict[str, str]] = {
    # as Unfurl 1.2.0's TOSCA 1.3 definitions declare them
    "tosca.nodes.Root": {"feature": "tosca.capabilities.Node"},
    "tosca.nodes.Storage.BlockStorage": {"attachment": "tosca.capabilities.Attachment"},
    "tosca.nodes.Storage.ObjectStorage": {"storage_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.Abstract.Compute": {"host": "tosca.capabilities.Compute"},
    "tosca.nodes.Compute": {
        "host": "tosca.capabilities.Compute",
        "endpoint": "tosca.capabilities.Endpoint.Admin",
        "os": "tosca.capabilities.OperatingSystem",
        "scalable": "tosca.capabilities.Scalable",
        "binding": "tosca.capabilities.network.Bindable",
    },
    "tosca.nodes.WebServer": {
        "data_endpoint": "tosca.capabilities.Endpoint",
        "admin_endpoint": "tosca.capabilities.Endpoint.Admin",
        "host": "tosca.capabilities.Compute",
    },
    "tosca.nodes.WebApplication": {"app_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.DBMS": {"host": "tosca.capabilities.Compute"},
    "tosca.nodes.Database": {"database_endpoint": "tosca.capabilities.Endpoint.Database"},
    "tosca.nodes.network.Network": {"link": "tosca.capabilities.network.Linkable"},
    "tosca.nodes.ObjectStorage": {"storage_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.LoadBalancer": {"client": "tosca.capabilities.Endpoint.Public"},
    "tosca.nodes.Container.Runtime": {"host": "tosca.capabilities.Container",
                                      "scalable": "tosca.capabilities.Scalable"},
    "tosca.nodes.Container.Runtime.Docker": {"host": "tosca.capabilities.Container.Docker"},
}
#: TOSCA's normative node types and Unfurl's own, as Unfurl 1.2.0 defines them (its TOSCA
#: 1.3 definitions and tosca-ext.yaml): each one's parent, the properties it declares
#: itself, and whether it takes any other (``metadata: {additionalProperties: true}``)
NORMATIVE_PROPERTIES: dict[str, tuple[str | None, tuple[str, ...], bool]] = {
    "tosca.nodes.Root": (None, (), False),
    "tosca.nodes.Abstract.Storage": ("tosca.nodes.Root", ("name", "size"), False),
    "tosca.nodes.Storage.BlockStorage": (
        "tosca.nodes.Abstract.Storage", ("volume_id", "snapshot_id"), False),
    "tosca.nodes.BlockStorage": ("tosca.nodes.Storage.BlockStorage", ("name",), False),
    "tosca.nodes.Storage.ObjectStorage": ("tosca.nodes.Abstract.Storage", ("maxsize",), False),
    "tosca.nodes.Abstract.Compute": ("tosca.nodes.Root", (), False),
    "tosca.nodes.Compute": ("tosca.nodes.Abstract.Compute", (), False),
    "tosca.nodes.SoftwareComponent": (
        "tosca.nodes.Root", ("component_version", "admin_credential"), False),
    "tosca.nodes.DBMS": ("tosca.nodes.SoftwareComponent", ("port", "root_password"), False),
    "tosca.nodes.Database": ("tosca.nodes.Root", ("user", "port", "name", "password"), False),
    "tosca.nodes.WebServer": ("tosca.nodes.SoftwareComponent", (), False),
    "tosca.nodes.WebApplication": ("tosca.nodes.Root", ("context_root",), False),
    "tosca.nodes.network.Network": ("tosca.nodes.Root", (
        "ip_version", "cidr", "start_ip", "end_ip", "gateway_ip", "network_name",
        "network_id", "segmentation_id", "network_type", "physical_network",
        "dhcp_enabled"), False),
    "tosca.nodes.network.Port": ("tosca.nodes.Root", (
        "ip_address", "order", "is_default", "ip_range_start", "ip_range_end"), False),
    "tosca.nodes.network.FloatingIP": (
        "tosca.nodes.Root", ("floating_network", "floating_ip_address", "port_id"), False),
    "tosca.nodes.ObjectStorage": ("tosca.nodes.Root", ("name", "size", "maxsize"), False),
    "tosca.nodes.LoadBalancer": ("tosca.nodes.Root", ("algorithm",), False),
    "tosca.nodes.Container.Runtime": ("tosca.nodes.SoftwareComponent", (), False),
    "tosca.nodes.Container.Application": ("tosca.nodes.Root", (), False),
    "tosca.nodes.Container.Runtime.Docker": ("tosca.nodes.Container.Runtime", (), False),
    "tosca.nodes.Container.Application.Docker": (
        "tosca.nodes.Container.Application", (), False),
    "unfurl.nodes.Repository": ("tosca.nodes.Root", ("repository", "url", "credential"), False),
    "unfurl.nodes.LocalRepository": ("unfurl.nodes.Repository", (), False),
    "unfurl.nodes.ArtifactBuilder": ("tosca.nodes.Root", (), False),
    "unfurl.nodes.ArtifactInstaller": ("tosca.nodes.Root", (), False),
    "unfurl.nodes.Installer": ("tosca.nodes.Root", (), False),
    "unfurl.nodes.Installation": ("tosca.nodes.Root", (), False),
    "unfurl.nodes.Default": ("unfurl.nodes.Installation", (), True),
    "unfurl.nodes.Generic": ("tosca.nodes.Root", (), True),
    "unfurl.nodes.CloudAccount": ("tosca.nodes.Root", (), False),
    "unfurl.nodes.CloudObject": ("tosca.nodes.Root", (), False),
    "unfurl.nodes.AWSAccount": ("unfurl.nodes.CloudAccount", (), False),
    "unfurl.nodes.AWSResource": ("unfurl.nodes.CloudObject", (), False),
    "unfurl.nodes.AzureAccount": ("unfurl.nodes.CloudAccount", (), False),
    "unfurl.nodes.AzureResource": ("unfurl.nodes.CloudObject", (), False),
}

#: the property defaults TOSCA's normative node types declare (Unfurl 1.2.0's TOSCA 1.3
#: definitions; Unfurl's own types declare none): a template of one reads them
NORMATIVE_DEFAULTS: dict[str, dict[str, Any]] = {
    "tosca.nodes.Abstract.Storage": {"size": "0 MB"},
    "tosca.nodes.BlockStorage": {"name": ""},
    "tosca.nodes.network.Network": {"ip_version": 4, "dhcp_enabled": True},
    "tosca.nodes.network.Port": {"order": 0, "is_default": False},
}


def undeclared_properties(
    chain: tuple[str, ...], declared: Mapping[str, Any],
    own_types: Mapping[str, Mapping[str, Any] | None], given: Iterable[str],
    template_metadata: Mapping[str, Any] | None = None,
) -> frozenset[str]:
    """The properties of ``given`` (a template's) that its type does not declare, which
    Unfurl 1.2.0 leaves out (``SELF.x`` is missing, ``::t::x`` null). ``chain``: the type
    and its ancestors, nearest first; ``declared``: the property definitions of the
    document's types among them; ``own_types``: each of the document's types' metadata.
    None are left out when a type in the chain is unknown here (it may declare anything) or
    takes any property: ``metadata: {additionalProperties: true}`` on the template, else on
    the nearest type with metadata (tosca-parser's rule)."""
    metadata = template_metadata or {}
    decided = "additionalProperties" in metadata
    if decided and metadata["additionalProperties"]:
        return frozenset()
    names = set(declared)
    for type_name in chain:
        if type_name in own_types:
            metadata = own_types[type_name] or {}
            if metadata and not decided:
                if metadata.get("additionalProperties"):
                    return frozenset()
                decided = True
            continue
        name: str | None = normative_name(type_name)
        while name is not None:
            entry = NORMATIVE_PROPERTIES.get(name)
            if entry is None:
                return frozenset()
            name, properties, takes_any = entry
            names.update(properties)
            if takes_any and not decided:
                return frozenset()
    return frozenset(key for key in given if key not in names)


#: attributes TOSCA's normative node types and Unfurl's own declare without a default
#: (Unfurl 1.2.0's TOSCA 1.3 definitions and tosca-ext.yaml; tosca.nodes.Root's tosca_id,
#: tosca_name and state are query keys): null until an operation sets them
NORMATIVE_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "tosca.nodes.Compute": ("private_address", "public_address", "networks", "ports"),
    "tosca.nodes.Storage.BlockStorage": ("volume_id",),
    "tosca.nodes.network.Port": ("ip_address",),
    "unfurl.nodes.CloudAccount": ("account_id",),
}


def normative_values(chain: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the normative types among ``chain`` (a type and its ancestors, nearest first)
    give a template: their property defaults, and their declared attributes, null (as in
    Unfurl, until an operation sets them)."""
    names: list[str] = []  # the normative types, with their normative ancestors, root first
    for type_name in reversed(tuple(chain)):
        line: list[str] = []
        name: str | None = normative_name(type_name)
        while name is not None and name not in names and name not in line:
            line.append(name)
            name = NORMATIVE_PROPERTIES.get(name, (None,))[0]
        names.extend(reversed(line))
    properties: dict[str, Any] = {}
    attributes: dict[str, Any] = {}
    for name in names:
        properties.update(NORMATIVE_DEFAULTS.get(name, {}))
        attributes.update(dict.fromkeys(NORMATIVE_ATTRIBUTES.get(name, ())))
    return properties, attributes


def full_name(type_name: str, kind: str = "nodes") -> str:
    """A type as Unfurl names it in its records: the ``tosca:`` prefix spelled out
    (``tosca:Root`` is ``tosca.nodes.Root``, ``tosca:ConnectsTo`` with ``kind``
    "relationships" ``tosca.relationships.ConnectsTo``); any other name as written."""
    if type_name.startswith("tosca:"):
        return f"tosca.{kind}.{type_name[len('tosca:'):]}"
    return type_name


def normative_name(type_name: str) -> str:
    """``tosca:Compute`` and ``Compute`` are ``tosca.nodes.Compute``."""
    if type_name.startswith("tosca:"):
        return "tosca.nodes." + type_name[len("tosca:"):]
    if "." not in type_name and ":" not in type_name:
        return "tosca.nodes." + type_name
    return type_name


#: capability types that derive from another (child -> parent)
_CAPABILITY_PARENTS = {
    "tosca.capabilities.Endpoint.Admin": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Endpoint.Database": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Endpoint.Public": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Compute": "tosca.capabilities.Container",
    "tosca.capabilities.Endpoint": "tosca.capabilities.Root",
    "tosca.capabilities.Container": "tosca.capabilities.Root",
    "tosca.capabilities.Node": "tosca.capabilities.Root",
    "tosca.capabilities.Container.Docker": "tosca.capabilities.Container",
    "tosca.capabilities.Storage": "tosca.capabilities.Root",
    "tosca.capabilities.Scalable": "tosca.capabilities.Root",
    "tosca.capabilities.Attachment": "tosca.capabilities.Root",
    "tosca.capabilities.OperatingSystem": "tosca.capabilities.Root",
    "tosca.capabilities.network.Linkable": "tosca.capabilities.Root",
    "tosca.capabilities.network.Bindable": "tosca.capabilities.Root",
}


def capabilities_of(type_name: Any, node_types: Mapping[str, Any]) -> dict[str, Any]:
    """name -> capability type of a node type, inherited ones included."""
    capabilities: dict[str, Any] = {}
    for ancestor in reversed(lineage(type_name, node_types)):
        capabilities.update(_NORMATIVE_CAPABILITIES.get(ancestor, {}))
        declared = as_mapping(as_mapping(node_types.get(ancestor)).get("capabilities"))
        body: YAMLValue
        for name, body in declared.items():
            capabilities[str(name)] = body.get("type") if isinstance(body, Mapping) else body
    return capabilities


def matching_capability(capabilities: Mapping[str, Any], wanted: Any) -> str | None:
    """The capability a requirement's ``capability`` (a name or a type) connects to."""
    if not isinstance(wanted, str):
        return None
    if wanted in capabilities:
        return wanted
    return next((n for n, t in capabilities.items() if is_a(t, wanted)), None)


def as_mapping(value: YAMLValue) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parents(derived_from: YAMLValue) -> tuple[str, ...]:
    """``derived_from`` as a tuple: one type, or Unfurl's list (multiple inheritance)."""
    if isinstance(derived_from, str):
        return (derived_from,)
    if isinstance(derived_from, list | tuple):
        return tuple(p for p in derived_from if isinstance(p, str))
    return ()


def ancestry(type_name: Any, parents_of: Callable[[str], tuple[str, ...]]) -> list[str]:
    """The type and its ancestors, nearest first, in the order Unfurl 1.2.0 looks a value
    up (tosca-parser's ``ancestors()``): depth first through each parent in the order
    ``derived_from`` lists them, each type once. The first type in it that defines a
    property default or an operation wins; operation inputs merge in that order.
    Walked with its own stack: a ``derived_from`` chain of thousands of types is no
    deeper for Python than one type."""
    if not isinstance(type_name, str):
        return []
    chain: list[str] = [type_name]
    seen = {type_name}
    stack = [iter(parents_of(type_name))]
    while stack:
        for parent in stack[-1]:
            if parent not in seen:
                chain.append(parent)
                seen.add(parent)
                stack.append(iter(parents_of(parent)))
                break
        else:
            stack.pop()
    return chain


def lineage(type_name: Any, node_types: Mapping[str, Any]) -> list[str]:
    chain = ancestry(type_name, lambda t: parents(as_mapping(node_types.get(t)).get(
        "derived_from")))
    if "tosca.nodes.Root" not in chain:
        chain.append("tosca.nodes.Root")
    return chain


def wanted_capability(
    template: Mapping[str, Any], node_types: Mapping[str, Any], requirement: str
) -> Any:
    entries: YAMLValue
    for entries in [template.get("requirements")] + [
        as_mapping(node_types.get(t)).get("requirements")
        for t in lineage(template.get("type"), node_types)
    ]:
        for entry in entries if isinstance(entries, list) else ():
            value = as_mapping(as_mapping(entry).get(requirement))
            if value.get("capability"):
                return value["capability"]
    return None


def is_a(capability_type: Any, wanted: str) -> bool:
    seen: set[str] = set()
    while isinstance(capability_type, str) and capability_type not in seen:
        if capability_type == wanted:
            return True
        seen.add(capability_type)
        capability_type = _CAPABILITY_PARENTS.get(capability_type)
    return False
