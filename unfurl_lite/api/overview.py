"""The status overview: one row per instance, from the ensemble, jobs.tsv and the spec.

The row answers "what is it, how is it, since when, and does the spec still match": its
recorded status and node state, the effective status folded over what it requires, the
last changeId that touched it (and the time that id encodes), and drift markers.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from unfurl_lite.expressions.digest import spec_digest
from unfurl_lite.expressions.limits import budgeted
from unfurl_lite.model import changeid
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, Status
from unfurl_lite.plan.drift import Drift, ensemble_drift
from unfurl_lite.plan.topology import instance_graph, operationless, planned_instances
from unfurl_lite.record import interrupted
from unfurl_lite.record.history import iso
from unfurl_lite.run.observer import CANCELLING
from unfurl_lite.run.status import fold_effective

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1


def last_change(instance: Instance) -> str | None:
    """The newer of lastConfigChange and lastStateChange (changeIds sort by time)."""
    ids = [
        c
        for c in (instance.last_config_change, instance.last_state_change)
        if c and changeid.is_changeid(c)
    ]
    return max(ids) if ids else None


def _time_of(change: str | None) -> str | None:
    return iso(changeid.decode(change)) if change else None


def instance_row(
    ensemble: Ensemble,
    instance: Instance,
    effective: Status | None,
    drift: Drift,
    recorded: bool,
) -> dict[str, Any]:
    template = ensemble.topology.templates.get(instance.template)
    change = last_change(instance)
    created = instance.created
    return {
        "name": instance.name,
        "template": instance.template,
        "type": template.type if template else None,
        "status": str(instance.status),
        "effective": str(effective or instance.status),
        "state": str(instance.state) if instance.state else None,
        "priority": str(instance.priority),
        "recorded": recorded,
        "created": created if isinstance(created, str | bool) else None,
        "discovered": instance.discovered,
        "protected": instance.protected,
        "lastChange": change,
        "lastChangeTime": _time_of(change),
        "lastConfigChange": instance.last_config_change or None,
        "lastStateChange": instance.last_state_change or None,
        "drift": drift.as_json(),
    }


def status(ensemble: str | Path | Ensemble | None = None) -> dict[str, Any]:
    """The overview of every instance (loading the ensemble if given as a path): the whole
    of ``unfurl status --json`` (schema: unfurl_lite/schema/status.schema.json)."""
    # start-up: keeps load.loader (7 modules) off overview's import until status() runs
    from unfurl_lite.load.loader import load_ensemble

    return status_report(ensemble if isinstance(ensemble, Ensemble) else load_ensemble(ensemble))


@budgeted  # its templates render within one budget
def status_report(ensemble: Ensemble) -> dict[str, Any]:
    """The overview of a loaded ensemble (see :func:`status`)."""
    drift = ensemble_drift(ensemble)
    instances = planned_instances(ensemble)
    effective = fold_effective(
        instances, instance_graph(ensemble, instances), operationless(ensemble.topology)
    )
    rows = [
        instance_row(
            ensemble,
            inst,
            effective.get(name),
            drift.get(name, Drift()),
            name in ensemble.instances,
        )
        for name, inst in instances.items()
    ]
    last = ensemble.last_job or {}
    last_id = last.get("changeId")
    digest = spec_digest(ensemble.spec)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "ensemble": str(ensemble.path),
        "lastJob": {
            "changeId": last_id,
            "time": _time_of(last_id) if changeid.is_changeid(last_id) else None,
            "workflow": last.get("workflow"),
            # a cancelled job did not end "ok", whatever the instances' status
            "status": "cancelled" if last.get("state") in ("cancelled", *CANCELLING)
            else (last.get("readyState") or {}).get("effective")
            or (last.get("readyState") or {}).get("local"),
            "summary": last.get("summary"),
        }
        if last_id
        else None,
        "specChanged": (digest != last.get("specDigest")) if last_id else None,
        "counts": dict(Counter(r["status"] for r in rows)),
        "instances": rows,
        "interrupted": _interrupted(ensemble),
    }


def _interrupted(ensemble: Ensemble) -> dict[str, Any] | None:
    found = interrupted.find(ensemble.project_root)
    if found is None:
        return None
    return {"changeId": found.change_id, "workflow": found.workflow, "pid": found.pid,
            "inFlight": list(found.in_flight), "resume": found.command}
