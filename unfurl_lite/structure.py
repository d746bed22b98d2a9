"""Sections Unfurl 1.2.0 allows beyond TOSCA's: a service template's ``types:`` (types of
any kind in one section, told apart by what they derive from) and ``spec.instances``
(instances declared in the spec, which exist without being deployed)."""

from __future__ import annotations

from typing import Any

#: what Unfurl records as ``created`` for an instance declared in the spec
SPEC_CREATED = "::root"


def split_types(types: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(node types, relationship types) among a ``types:`` section. A type is a relationship
    type when its ``derived_from`` chain reaches ``tosca.relationships``; other kinds
    (capability, data, ...) reach their own normative prefix and are neither."""
    if not isinstance(types, dict):
        return {}, {}
    nodes: dict[str, Any] = {}
    relationships: dict[str, Any] = {}
    for name in types:
        kind = _kind(str(name), types)
        if kind == "node":
            nodes[name] = types[name]
        elif kind == "relationship":
            relationships[name] = types[name]
    return nodes, relationships


def _kind(name: str, types: dict[str, Any]) -> str:
    seen: set[str] = set()
    current: Any = name
    while isinstance(current, str) and current in types and current not in seen:
        seen.add(current)
        body = types[current]
        current = body.get("derived_from") if isinstance(body, dict) else None
    if not isinstance(current, str) or current in seen:
        return "node"
    if current.startswith(("tosca.relationships.", "unfurl.relationships.")):
        return "relationship"
    if current.startswith(("tosca.nodes.", "unfurl.nodes.")) or "." not in current:
        return "node"
    return "other"


def spec_instance_record(record: Any) -> dict[str, Any]:
    """The status record of an instance declared in the spec, as Unfurl creates it: ready
    (``ok``) unless it says otherwise, created by the topology itself."""
    record = dict(record) if isinstance(record, dict) else {}
    record.setdefault("readyState", "ok")
    record.setdefault("created", SPEC_CREATED)
    return record
