"""The status layout: Unfurl writes an instance hosted on another nested under its host's
record (``instances:`` inside the host's entry), so both tools must read and write that
shape; a flat layout (older unfurl-lite) still reads. Pure functions over records: loading
flattens, recording nests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from unfurl_lite.model.entities import Instance, NodeTemplate
from unfurl_lite.model.narrow import is_map

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

#: the key, in an instance's record, of the instances it hosts
CHILDREN = "instances"
#: the key, in an instance's ``extra``, naming the instance it is hosted on
HOSTED_ON = "hostedOn"


def flatten(recorded: Any, detach: bool = False) -> dict[str, tuple[Any, str | None]]:
    """name -> (record without its hosted instances, host's name or None), in document
    order, hosts before what they host. ``detach`` takes the hosted instances out of the
    records themselves (to rewrite them) rather than out of copies."""
    found: dict[str, tuple[Any, str | None]] = {}

    def walk(entries: YAMLValue, parent: str | None) -> None:
        if not isinstance(entries, Mapping):
            return
        for name, record in entries.items():
            name = str(name)
            children = None
            if is_map(record) and CHILDREN in record:
                if detach:
                    children = record.pop(CHILDREN)
                else:
                    children = record[CHILDREN]
                    record = {k: v for k, v in record.items() if k != CHILDREN}
            if name not in found:
                found[name] = (record, parent)
            walk(children, name)

    walk(recorded, None)
    return found


def host_instances(
    templates: Mapping[str, NodeTemplate], instances: Mapping[str, Instance]
) -> dict[str, str]:
    """instance -> the instance it is hosted on: its pinned host, or the only instance of
    its template's host template."""
    by_template: dict[str, list[str]] = {}
    for inst in instances.values():
        by_template.setdefault(inst.template, []).append(inst.name)
    hosts: dict[str, str] = {}
    for inst in instances.values():
        template = templates.get(inst.template)
        host = template.host if template is not None else None
        if host is None or host == inst.template:
            continue
        pinned = inst.extra.get(HOSTED_ON)
        peers = by_template.get(host, [])
        if isinstance(pinned, str) and pinned in peers:
            hosts[inst.name] = pinned
        elif len(peers) == 1 and peers[0] != inst.name:
            hosts[inst.name] = peers[0]
    return hosts


def nest(
    records: Mapping[str, Any], parents: Mapping[str, str | None], order: Iterable[str], empty: Any
) -> Any:
    """Arrange flat ``records`` as Unfurl writes them: each under its host's record.
    ``empty`` makes a new mapping (ruamel's type for a round-trip document)."""
    top = empty()
    placed: set[str] = set()

    def root_of(name: str) -> str | None:
        seen = {name}
        parent = parents.get(name)
        while parent is not None:
            if parent in seen or parent not in records:
                return None  # a cycle or a missing host: written at the top
            seen.add(parent)
            parent = parents.get(parent)
        return name

    def place(name: str) -> None:
        if name in placed:
            return
        placed.add(name)
        record = records[name]
        parent = parents.get(name)
        if parent is not None and root_of(name) is not None:
            place(parent)
            host = records[parent]
            if is_map(record) and record.get(HOSTED_ON) == parent:
                record.pop(HOSTED_ON)
            if is_map(host):
                children = host.get(CHILDREN)
                if children is None:
                    children = empty()
                    host[CHILDREN] = children
                children[name] = record
                return
        top[name] = record

    for name in order:
        if name in records:
            place(name)
    for name in records:
        place(name)
    return top
