"""What each instance was last deployed with, and what its operations would run with now.

Unfurl records, for every task, a digest of the inputs it ran with (``digestValue``).
Deploy's reconfigure, update and drift compare that baseline with the digest of the same
operation's inputs rendered from today's spec; secrets take no part, so a rotated secret
is not a change. The baseline comes from the records' fields (jobs.tsv's and the job
records'), never from the summary text meant for people.
"""

from __future__ import annotations

from collections.abc import Mapping

from unfurl_lite.errors import ExpressionError, UnfurlLiteError
from unfurl_lite.expressions.context import make_context, render_inputs
from unfurl_lite.expressions.digest import digest, digestable, input_digest
from unfurl_lite.load import yamlio
from unfurl_lite.load.digestkey import key_provider
from unfurl_lite.load.jobslog import log_records
from unfurl_lite.load.taskrecords import JOBS_DIR, TaskRecord, task_records
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Operation
from unfurl_lite.model.narrow import is_list, is_map, is_mapping
from unfurl_lite.plan.tasks import CHECK, DISCOVER, RUN, STOP_REASON
from unfurl_lite.plan.topology import is_present
from unfurl_lite.security.taint import env_variables

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RELATIONSHIP_INTERFACES = ("Configure", "RelationshipLifecycle")
#: tasks that observe or run ad hoc: what they ran with is not what was deployed
NOT_DEPLOYING = (CHECK, RUN, DISCOVER, STOP_REASON)


def _qualified(ensemble: Ensemble, instance: str, operation: str,
               detail: TaskRecord | None) -> str:
    """The operation's full name from its job record; for a task without one (or written
    before records named the interface), through the instance's template, or by its
    short name when the template no longer has it."""
    if detail is not None and detail.qualified_name:
        return detail.qualified_name
    recorded = ensemble.instances.get(instance)
    template = ensemble.topology.templates.get(recorded.template) if recorded else None
    op = template.operation(operation) if template else None
    return op.qualified_name if op else operation


class Baseline(tuple[str, str]):
    """(changeId, digestValue) of a recorded run, with the ``digestKeys`` it recorded
    (what it read; "" when not known) for comparing as Unfurl does."""

    keys: str

    def __new__(cls, change_id: str, value: str, keys: str = "") -> Baseline:
        made = super().__new__(cls, (change_id, value))
        made.keys = keys
        return made


def recorded_keys(baseline: tuple[str, str]) -> str:
    return baseline.keys if isinstance(baseline, Baseline) else ""


def deployed_digests(ensemble: Ensemble) -> dict[tuple[str, str], tuple[str, str]]:
    """(instance, qualified operation) -> (changeId, digestValue) of its latest successful run,
    or of the last update that brought the instance in line with the spec.

    jobs.tsv (Unfurl's log) says which tasks succeeded on which target with which digest;
    the job records in ``jobs/`` add what Unfurl's log has no field for: the task's reason
    (checks, discovers and ad hoc runs are no baseline) and the operation's interface."""
    details = {r.change_id: r for r in task_records(ensemble.project_root)}
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for record in log_records(ensemble.jobs_tsv, ensemble.changes):
        target = record.get("target", "")
        name = target[2:] if target.startswith("::") else ""
        if not name or "::" in name or record.get("status") != "ok":
            continue  # a job's own line, a relationship's operation, or a failed task
        detail = details.get(record["changeId"])
        if detail is not None and (detail.reason in NOT_DEPLOYING or not detail.class_name):
            continue
        qualified = _qualified(ensemble, name, record.get("operation", ""), detail)
        found[(name, qualified)] = Baseline(record["changeId"], record.get("digestValue", ""),
                                            record.get("digestKeys", ""))
    for name, instance in ensemble.instances.items():
        baseline = instance.extra.get("specDigests")
        if not is_map(baseline):
            continue
        change_id = str(baseline.get("changeId", ""))
        for op, value in baseline.items():
            if op == "changeId":
                continue
            if found.get((name, op), ("", ""))[0] <= change_id:
                found[(name, op)] = (change_id, str(value))
    return found


def current_digest(ensemble: Ensemble, instance: str, op: Operation, keys: str = "") -> str:
    """The digestValue the operation would be recorded with if it ran now (with ``keys``,
    an earlier run's digestKeys: the digest of those, now, as Unfurl checks); raises the
    expression's error when its inputs cannot be rendered."""
    # start-up: keeps expressions.reads off baselines's import until current_digest() runs
    from unfurl_lite.expressions.reads import (
        operation_reads,
        plain_reads,
        reads_digest,
        recorded_keys_digest,
    )

    inputs = op.run_inputs
    ctx = make_context(ensemble.topology, ensemble.instances, instance)
    key = key_provider(ensemble.project_root)  # environment values: keyed digests
    ctx.project_root = ensemble.project_root
    rendered = digestable(render_inputs(inputs, {}, ctx))
    if op.implementation is None:
        return input_digest(rendered, key)[1]
    reads = plain_reads(inputs, op.environment, op.implementation.kind)
    if reads is None:  # something is evaluated: watch what a second rendering reads
        watching = make_context(ensemble.topology, ensemble.instances, instance)
        watching.project_root = ensemble.project_root
        reads = operation_reads(inputs, op.environment, op.implementation.kind, watching,
                                keys.split(","))
    if keys:
        value = recorded_keys_digest(keys, reads, rendered, ctx, key)
        return "changed: " + keys if value is None else value
    return reads_digest(reads, rendered, key)[1]


def environment_read(ensemble: Ensemble, instance: str, op: Operation) -> tuple[str, ...]:
    """The environment variables the operation's inputs read now (for the plan to say why
    it reconfigures: Unfurl's digests cover them, and so do ours, keyed)."""
    ctx = make_context(ensemble.topology, ensemble.instances, instance)
    try:
        rendered = digestable(render_inputs(dict(op.inputs), {}, ctx))
    except (ExpressionError, UnfurlLiteError):
        return ()
    found = (name for value in rendered.values() for name in env_variables(value))
    return tuple(dict.fromkeys(found))


def _recorded_reads(ensemble: Ensemble, change_id: str) -> dict[str, Any] | None:
    """What the task ``change_id`` read, from its job record: its inputs by name and the
    other values by Unfurl's expression (``::svc::greeting``)."""
    from ruamel.yaml import YAMLError  # start-up: keeps ruamel (38 modules) off baselines's import

    for path in (ensemble.project_root / JOBS_DIR).glob(f"job*-{change_id[:8]}.yaml"):
        try:
            data = yamlio.parse_plain(yamlio.read_text(path))
        except (UnfurlLiteError, YAMLError, ValueError, OSError):
            return None
        changes = data.get("changes") if is_mapping(data) else None
        for entry in changes if is_list(changes) else []:
            if is_mapping(entry) and entry.get("changeId") == change_id:
                found = dict(entry.get("inputs") or {})
                for dep in entry.get("dependencies") or []:
                    if is_mapping(dep) and "ref" in dep:
                        found[str(dep["ref"])] = dep.get("expected")
                return found
    return None


def changed_reads(ensemble: Ensemble, instance: str, op: Operation, change_id: str) -> list[str]:
    """The digest keys (inputs, and values read such as ``::svc::greeting``) whose value
    differs from what the task ``change_id`` ran with, for the plan to say why an operation
    runs again; empty when that cannot be told."""
    # start-up: keeps expressions.reads off baselines's import until changed_reads() runs
    from unfurl_lite.expressions.reads import operation_reads

    def value_digest(value: Any) -> str:
        return digest([value])

    recorded = _recorded_reads(ensemble, change_id)
    if recorded is None or op.implementation is None:
        return []
    inputs = op.run_inputs
    try:
        ctx = make_context(ensemble.topology, ensemble.instances, instance)
        ctx.project_root = ensemble.project_root
        rendered = digestable(render_inputs(inputs, {}, ctx))
        watching = make_context(ensemble.topology, ensemble.instances, instance)
        watching.project_root = ensemble.project_root
        reads = operation_reads(inputs, op.environment, op.implementation.kind, watching,
                                list(recorded))
    except (ExpressionError, UnfurlLiteError):
        return []
    now = {**{k: rendered.get(k) for k in reads.inputs}, **dict(reads.dependencies)}
    for key in recorded:  # what an older record listed, though nothing reads it now
        if "::" not in key and key in rendered:
            now.setdefault(key, rendered[key])
    differs = [key for key in recorded
               if key not in now or value_digest(recorded[key]) != value_digest(now[key])]
    return differs or [key for key in now if key not in recorded]


def digest_now(ensemble: Ensemble, instance: str, op: Operation, keys: str = "") -> str | None:
    """:func:`current_digest`, or None when the inputs cannot be rendered now."""

    try:
        return current_digest(ensemble, instance, op, keys)
    except (ExpressionError, UnfurlLiteError):
        return None


def changed_operations(
    ensemble: Ensemble, deployed: Mapping[tuple[str, str], tuple[str, str]]
) -> dict[str, list[str]]:
    """instance -> the operations whose inputs differ from what last ran (or that are gone)."""
    changed: dict[str, list[str]] = {}
    for (name, qualified), baseline in deployed.items():
        digest = baseline[1]
        instance = ensemble.instances.get(name)
        if instance is None or not is_present(instance):
            continue
        template = ensemble.topology.templates.get(instance.template)
        if template is None or qualified.split(".")[0] in RELATIONSHIP_INTERFACES:
            continue
        op = template.operation(qualified)
        if op is None or op.implementation is None or digest_now(
            ensemble, name, op, recorded_keys(baseline)
        ) != digest:
            changed.setdefault(name, []).append(qualified)
    return changed


def spec_baseline(ensemble: Ensemble, name: str) -> dict[str, str]:
    """The digests of the instance's node operations as the spec now has them."""
    template = ensemble.topology.templates[ensemble.instances[name].template]
    digests: dict[str, str] = {}
    for interface, ops in template.interfaces.items():
        for op in ops.values():
            if op.implementation is not None and interface not in RELATIONSHIP_INTERFACES:
                value = digest_now(ensemble, name, op)
                if value is not None:
                    digests[op.qualified_name] = value
    return digests
