"""What a document's node and capability types declare, with TOSCA's and Unfurl's normative
ones (Unfurl 1.2.0's TOSCA 1.3 definitions, tosca-ext.yaml), looked up once per type: read by
the load-time checks of function references, capability assignments and values, and
target capabilities."""

from __future__ import annotations

from unfurl_lite.load.host_refs import UNSET as _UNSET
from unfurl_lite.load.problems import SERVICE, get_section, mapping
from unfurl_lite.model.lineage import NORMATIVE_PROPERTIES, lineage, normative_name, parents
from unfurl_lite.model.normative import NORMATIVE_CAPABILITY_PROPERTY_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: attributes and capabilities (name -> capability type) TOSCA's normative node types and
#: Unfurl's own declare themselves (Unfurl 1.2.0's TOSCA 1.3 definitions, tosca-ext.yaml);
#: their parents are NORMATIVE_PROPERTIES'
_NODE_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "tosca.nodes.Root": ("tosca_id", "tosca_name", "state"),
    "tosca.nodes.Storage.BlockStorage": ("volume_id",),
    "tosca.nodes.Compute": ("private_address", "public_address", "networks", "ports"),
    "tosca.nodes.network.Port": ("ip_address",),
    "unfurl.nodes.CloudAccount": ("account_id",),
    "unfurl.nodes.CloudObject": ("uri", "name", "console_url"),
}
_NODE_CAPABILITIES: dict[str, dict[str, str]] = {
    "tosca.nodes.Root": {"feature": "tosca.capabilities.Node"},
    "tosca.nodes.Storage.BlockStorage": {"attachment": "tosca.capabilities.Attachment"},
    "tosca.nodes.Storage.ObjectStorage": {"storage_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.Abstract.Compute": {"host": "tosca.capabilities.Compute"},
    "tosca.nodes.Compute": {
        "host": "tosca.capabilities.Compute", "binding": "tosca.capabilities.network.Bindable",
        "os": "tosca.capabilities.OperatingSystem", "scalable": "tosca.capabilities.Scalable",
        "endpoint": "tosca.capabilities.Endpoint.Admin"},
    "tosca.nodes.DBMS": {"host": "tosca.capabilities.Compute"},
    "tosca.nodes.Database": {"database_endpoint": "tosca.capabilities.Endpoint.Database"},
    "tosca.nodes.WebServer": {
        "data_endpoint": "tosca.capabilities.Endpoint",
        "admin_endpoint": "tosca.capabilities.Endpoint.Admin",
        "host": "tosca.capabilities.Compute"},
    "tosca.nodes.WebApplication": {"app_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.network.Network": {"link": "tosca.capabilities.network.Linkable"},
    "tosca.nodes.ObjectStorage": {"storage_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.LoadBalancer": {"client": "tosca.capabilities.Endpoint.Public"},
    "tosca.nodes.Container.Runtime": {
        "host": "tosca.capabilities.Container", "scalable": "tosca.capabilities.Scalable"},
    "tosca.nodes.Container.Runtime.Docker": {"host": "tosca.capabilities.Container.Docker"},
    "unfurl.nodes.Installer": {"installer": "unfurl.capabilities.Installer"},
}
#: the normative capability types: parent, attributes, properties (name -> default, or
#: _UNSET: declared without one)
CAPABILITY_TYPES: dict[str, tuple[str | None, tuple[str, ...], dict[str, Any]]] = {
    "tosca.capabilities.Root": (None, (), {}),
    "tosca.capabilities.Node": ("tosca.capabilities.Root", (), {}),
    "tosca.capabilities.Container": ("tosca.capabilities.Root", (), {}),
    "tosca.capabilities.Storage": ("tosca.capabilities.Root", (), {"name": _UNSET}),
    "tosca.capabilities.Compute": ("tosca.capabilities.Container", (), dict.fromkeys(
        ("name", "num_cpus", "cpu_frequency", "disk_size", "mem_size"), _UNSET)),
    "tosca.capabilities.Endpoint": ("tosca.capabilities.Root", ("ip_address",), {
        "protocol": "tcp", "port": _UNSET, "secure": False, "url_path": _UNSET,
        "port_name": _UNSET, "network_name": "PRIVATE", "initiator": "source",
        "ports": _UNSET}),
    "tosca.capabilities.Endpoint.Admin": ("tosca.capabilities.Endpoint", (), {"secure": True}),
    "tosca.capabilities.Endpoint.Public": ("tosca.capabilities.Endpoint", (), {
        "network_name": "PUBLIC", "floating": False, "dns_name": _UNSET}),
    "tosca.capabilities.Endpoint.Database": ("tosca.capabilities.Endpoint", (), {}),
    "tosca.capabilities.Scalable": ("tosca.capabilities.Root", (), {
        "min_instances": 1, "max_instances": 1, "default_instances": _UNSET}),
    "tosca.capabilities.Attachment": ("tosca.capabilities.Root", (), {}),
    "tosca.capabilities.network.Linkable": ("tosca.capabilities.Root", (), {}),
    "tosca.capabilities.network.Bindable": ("tosca.capabilities.Root", (), {}),
    "tosca.capabilities.OperatingSystem": ("tosca.capabilities.Root", (), dict.fromkeys(
        ("architecture", "type", "distribution", "version"), _UNSET)),
    "tosca.capabilities.Container.Docker": ("tosca.capabilities.Container", (), {
        "version": _UNSET, "publish_all": False, "publish_ports": _UNSET,
        "expose_ports": _UNSET, "volumes": _UNSET}),
    "unfurl.capabilities.Installer": ("tosca.capabilities.Root", (), {}),
}


class Types:
    """What the document's types and the normative ones declare, found once per type."""

    def __init__(self, doc: Any) -> None:
        service = get_section(doc, SERVICE)
        self.node_types = mapping(service.get("node_types"))
        self.capability_types = {**mapping(service.get("types")),
                                 **mapping(service.get("capability_types"))}
        self._chains: dict[str, tuple[str, ...] | None] = {}

    def chain(self, type_name: Any) -> tuple[str, ...] | None:
        """The type and every ancestor, nearest first, normative ones by their full names;
        None when one is not known here."""
        if not isinstance(type_name, str):
            return None
        if type_name not in self._chains:
            self._chains[type_name] = self._chain(type_name)
        return self._chains[type_name]

    def _chain(self, type_name: str) -> tuple[str, ...] | None:
        names: list[str] = []
        for name in lineage(type_name, self.node_types):
            if name in self.node_types:
                names.append(name)
                continue
            current: str | None = normative_name(name)
            while current is not None and current not in names:
                if current not in NORMATIVE_PROPERTIES:
                    return None
                names.append(current)
                current = NORMATIVE_PROPERTIES[current][0]
        return tuple(names)

    def _own(self, chain: tuple[str, ...], section: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in reversed(chain):
            found.update(mapping(mapping(self.node_types.get(name)).get(section)))
        return found

    def attributes(self, chain: tuple[str, ...]) -> dict[str, Any]:
        found = self._own(chain, "attributes")
        for name in chain:
            found.update((a, {}) for a in _NODE_ATTRIBUTES.get(name, ()) if a not in found)
        return found

    def properties(self, chain: tuple[str, ...]) -> dict[str, Any]:
        return self._own(chain, "properties")

    def capabilities(self, chain: tuple[str, ...]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in reversed(chain):
            found.update(_NODE_CAPABILITIES.get(name, {}))
            for cap, body in mapping(mapping(self.node_types.get(name)).get(
                    "capabilities")).items():
                found[cap] = mapping(body).get("type") if isinstance(body, dict) else body
        return found

    def requirements(self, chain: tuple[str, ...]) -> set[str]:
        return {str(key) for name in chain
                for entry in as_list(mapping(self.node_types.get(name)).get("requirements"))
                for key in mapping(entry)}

    def capability_line(self, type_name: Any) -> tuple[str, ...] | None:
        """A capability type and its ancestors, nearest first, TOSCA's by their full names
        (``tosca:Endpoint`` and ``Endpoint`` as tosca-parser expands them); None when one is
        not known here."""
        line: list[str] = []
        pending = [type_name]
        while pending:
            name = pending.pop()
            if not isinstance(name, str):
                return None
            if name not in self.capability_types and name not in CAPABILITY_TYPES:
                name = "tosca.capabilities." + name.removeprefix("tosca:")
                if name not in CAPABILITY_TYPES:
                    return None
            if name in line:
                break
            line.append(name)
            if name in self.capability_types:
                pending.extend(parents(mapping(self.capability_types[name]).get("derived_from")))
            elif CAPABILITY_TYPES[name][0]:
                pending.append(CAPABILITY_TYPES[name][0])
        return tuple(line)

    def capability(self, type_name: Any) -> tuple[set[str], dict[str, Any]] | None:
        """A capability type's attributes and properties (name -> default or _UNSET), its
        ancestors' included; None when one is not known here."""
        line = self.capability_line(type_name)
        if line is None:
            return None
        attributes: set[str] = set()
        properties: dict[str, Any] = {}
        for name in line:
            if name in self.capability_types:
                body = mapping(self.capability_types[name])
                attributes.update(mapping(body.get("attributes")))
                for prop, definition in mapping(body.get("properties")).items():
                    properties.setdefault(prop, mapping(definition).get("default", _UNSET))
            else:
                _, attrs, props = CAPABILITY_TYPES[name]
                attributes.update(attrs)
                for prop, default in props.items():
                    properties.setdefault(prop, default)
        return attributes, properties

    def capability_definitions(self, type_name: Any) -> dict[str, Any]:
        """A capability type's property definitions that say what a value must be, its own
        over its ancestors' (TOSCA's from model/normative.py)."""
        out: dict[str, Any] = {}
        for name in reversed(self.capability_line(type_name) or ()):
            out.update(mapping(mapping(self.capability_types[name]).get("properties"))
                       if name in self.capability_types
                       else NORMATIVE_CAPABILITY_PROPERTY_TYPES.get(name, {}))
        return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
