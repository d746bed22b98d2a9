"""Instances an operation reports (``resources``): discovered ones are added to the
ensemble, known ones take the attributes and status reported for them."""

from __future__ import annotations

import logging

from unfurl_lite.model.entities import Instance, NodeState, Status
from unfurl_lite.model.narrow import is_map
from unfurl_lite.run.operations.base import OperationResult
from unfurl_lite.security.characters import control_character


def add_discovered(
    instances: dict[str, Instance], result: OperationResult, change_id: str = "",
    creator: str = "",
) -> list[str]:
    """Instances an operation found: new ones are recorded as discovered (created: false),
    known ones get the attributes and status reported for them. A resultTemplate's new
    instance is its creator's (``created: ::creator``) when it gives a readyState; without
    one its status is unknown and nothing created it yet (see plan/created.py). Returns
    the names of the new ones."""
    added: list[str] = []
    for resource in result.resources:
        name = str(resource.get("name") or "")
        if not name:
            continue
        if control_character(name):
            logging.getLogger(__name__).warning(
                "warning: discovered instance %r ignored: its name contains a control "
                "character", name)
            continue
        ready = resource.get("status") or resource.get("readyState")
        if is_map(ready):
            ready = ready.get("local")
        status = str(ready or "ok").lower()
        known = instances.get(name)
        if known is not None:
            before = known.status
            known.attributes.update(resource.get("attributes") or {})
            if ready and status in Status.__members__:
                known.status = Status(status)
            if known.status != before and change_id:
                known.last_state_change = change_id
            continue
        made = bool(resource.get("createdByTask"))  # by a resultTemplate: it created it
        if made and not ready:
            status = str(Status.unknown)
        spec: object = (resource.get("readyState") or {}) if made else {}
        state = str(spec.get("state")) if is_map(spec) else None
        instances[name] = Instance(
            name=name,
            template=str(resource.get("template") or name),
            status=Status(status) if status in Status.__members__ else Status.ok,
            state=NodeState(state) if state and state in NodeState.__members__ else None,
            attributes=dict(resource.get("attributes") or {}),
            created=(f"::{creator}" if ready else None) if made else False,
            last_state_change=None if made else change_id or None,
            last_config_change=change_id or None if made else None,
            protected=made and resource.get("protected") in (True, "true", "True", "yes"),
        )
        added.append(name)
    return added
