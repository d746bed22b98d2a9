"""What each instance was last deployed with, and what its operations would run with now.

Unfurl records, for every task, a digest of the inputs it ran with (``digestValue``).
Deploy's reconfigure, update and drift compare that baseline with the digest of the same
operation's inputs rendered from today's spec; secrets take no part, so a rotated secret
is not a change. The baseline comes from the structured job records (never from the
summary text meant for people).
"""

from __future__ import annotations

from collections.abc import Mapping

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.expressions.digest import digestable, input_digest
from unfurl_lite.load.loader import Ensemble
from unfurl_lite.load.taskrecords import TaskRecord, task_records
from unfurl_lite.model.entities import Operation
from unfurl_lite.plan.tasks import CHECK, DISCOVER, RUN
from unfurl_lite.plan.topology import is_present

RELATIONSHIP_INTERFACES = ("Configure", "RelationshipLifecycle")
#: tasks that observe or run ad hoc: what they ran with is not what was deployed
NOT_DEPLOYING = (CHECK, RUN, DISCOVER)


def _qualified(ensemble: Ensemble, record: TaskRecord, instance: str) -> str:
    """The operation's full name; records older than the ``interface`` field name it
    through the instance's template (or by its short name, when the template lost it)."""
    if record.qualified_name:
        return record.qualified_name
    recorded = ensemble.instances.get(instance)
    template = ensemble.topology.templates.get(recorded.template) if recorded else None
    op = template.operation(record.operation) if template else None
    return op.qualified_name if op else record.operation


def deployed_digests(ensemble: Ensemble) -> dict[tuple[str, str], tuple[str, str]]:
    """(instance, qualified operation) -> (changeId, digestValue) of its latest successful run,
    or of the last update that brought the instance in line with the spec."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for record in task_records(ensemble.project_root):
        name = record.instance
        if (name is None or not record.succeeded or not record.class_name
                or record.reason in NOT_DEPLOYING):
            continue
        found[(name, _qualified(ensemble, record, name))] = (
            record.change_id, record.digest_value)
    for name, instance in ensemble.instances.items():
        baseline = instance.extra.get("specDigests")
        if not isinstance(baseline, dict):
            continue
        change_id = str(baseline.get("changeId", ""))
        for op, value in baseline.items():
            if op == "changeId":
                continue
            if found.get((name, op), ("", ""))[0] <= change_id:
                found[(name, op)] = (change_id, str(value))
    return found


def current_digest(ensemble: Ensemble, instance: str, op: Operation) -> str:
    """The digestValue the operation would be recorded with if it ran now; raises the
    expression's error when its inputs cannot be rendered."""
    from unfurl_lite.expressions.context import make_context, render_inputs

    inputs = dict(op.inputs)
    if op.implementation is not None and op.implementation.primary and "command" not in inputs:
        inputs["command"] = op.implementation.primary
    ctx = make_context(ensemble.topology, ensemble.instances, instance)
    return input_digest(digestable(render_inputs(inputs, {}, ctx)))[1]


def digest_now(ensemble: Ensemble, instance: str, op: Operation) -> str | None:
    """:func:`current_digest`, or None when the inputs cannot be rendered now."""
    from unfurl_lite.expressions.expr import ExpressionError

    try:
        return current_digest(ensemble, instance, op)
    except (ExpressionError, UnfurlLiteError):
        return None


def changed_operations(
    ensemble: Ensemble, deployed: Mapping[tuple[str, str], tuple[str, str]]
) -> dict[str, list[str]]:
    """instance -> the operations whose inputs differ from what last ran (or that are gone)."""
    changed: dict[str, list[str]] = {}
    for (name, qualified), (_, digest) in deployed.items():
        instance = ensemble.instances.get(name)
        if instance is None or not is_present(instance):
            continue
        template = ensemble.topology.templates.get(instance.template)
        if template is None or qualified.split(".")[0] in RELATIONSHIP_INTERFACES:
            continue
        op = template.operation(qualified)
        if op is None or op.implementation is None or digest_now(ensemble, name, op) != digest:
            changed.setdefault(name, []).append(qualified)
    return changed


def spec_baseline(ensemble: Ensemble, name: str) -> dict[str, str]:
    """The digests of the instance's node operations as the spec now has them."""
    template = ensemble.topology.templates[ensemble.instances[name].template]
    digests = {}
    for interface, ops in template.interfaces.items():
        for op in ops.values():
            if op.implementation is not None and interface not in RELATIONSHIP_INTERFACES:
                value = digest_now(ensemble, name, op)
                if value is not None:
                    digests[op.qualified_name] = value
    return digests
