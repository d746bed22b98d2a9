"""Pure queries over a service template's raw types: a type's lineage, the capabilities
a node type offers (TOSCA's normative ones included), which one a requirement connects to.

Loading (implied requirements) and running (a relationship instance's ``capability``)
both ask these questions of the same YAML, so they live below both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: capabilities of TOSCA's normative node types (name -> capability type)
_NORMATIVE_CAPABILITIES: dict[str, dict[str, str]] = {
    "tosca.nodes.Root": {"feature": "tosca.capabilities.Node"},
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
        "host": "tosca.capabilities.Container",
    },
    "tosca.nodes.WebApplication": {"app_endpoint": "tosca.capabilities.Endpoint"},
    "tosca.nodes.DBMS": {"host": "tosca.capabilities.Container"},
    "tosca.nodes.Database": {"database_endpoint": "tosca.capabilities.Endpoint.Database"},
}
#: capability types that derive from another (child -> parent)
_CAPABILITY_PARENTS = {
    "tosca.capabilities.Endpoint.Admin": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Endpoint.Database": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Endpoint.Public": "tosca.capabilities.Endpoint",
    "tosca.capabilities.Compute": "tosca.capabilities.Container",
    "tosca.capabilities.Endpoint": "tosca.capabilities.Root",
    "tosca.capabilities.Container": "tosca.capabilities.Root",
    "tosca.capabilities.Node": "tosca.capabilities.Root",
}


def capabilities_of(type_name: Any, node_types: Mapping[str, Any]) -> dict[str, Any]:
    """name -> capability type of a node type, inherited ones included."""
    capabilities: dict[str, Any] = {}
    for ancestor in reversed(lineage(type_name, node_types)):
        capabilities.update(_NORMATIVE_CAPABILITIES.get(ancestor, {}))
        for name, body in mapping(mapping(node_types.get(ancestor)).get("capabilities")).items():
            capabilities[str(name)] = body.get("type") if isinstance(body, Mapping) else body
    return capabilities


def matching_capability(capabilities: Mapping[str, Any], wanted: Any) -> str | None:
    """The capability a requirement's ``capability`` (a name or a type) connects to."""
    if not isinstance(wanted, str):
        return None
    if wanted in capabilities:
        return wanted
    return next((n for n, t in capabilities.items() if _is_a(t, wanted)), None)


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def lineage(type_name: Any, node_types: Mapping[str, Any]) -> list[str]:
    chain: list[str] = []
    while isinstance(type_name, str) and type_name not in chain:
        chain.append(type_name)
        type_name = mapping(node_types.get(type_name)).get("derived_from")
    if "tosca.nodes.Root" not in chain:
        chain.append("tosca.nodes.Root")
    return chain


def wanted_capability(
    template: Mapping[str, Any], node_types: Mapping[str, Any], requirement: str
) -> Any:
    for entries in [template.get("requirements")] + [
        mapping(node_types.get(t)).get("requirements")
        for t in lineage(template.get("type"), node_types)
    ]:
        for entry in entries if isinstance(entries, list) else ():
            value = mapping(mapping(entry).get(requirement))
            if value.get("capability"):
                return value["capability"]
    return None


def _is_a(capability_type: Any, wanted: str) -> bool:
    seen: set[str] = set()
    while isinstance(capability_type, str) and capability_type not in seen:
        if capability_type == wanted:
            return True
        seen.add(capability_type)
        capability_type = _CAPABILITY_PARENTS.get(capability_type)
    return False
