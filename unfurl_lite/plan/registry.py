"""Planning by workflow name: each built-in workflow's planner, as its declaration
(:mod:`unfurl_lite.model.builtin_workflows`) names it, or a TOSCA workflow the spec defines.

Planners are imported when their workflow is asked for (``unfurl plan`` of a deploy never
loads heal's or scale's code), so no planner module imports another through here and
none imports the registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from unfurl_lite.errors import PlanError
from unfurl_lite.load.workflows import custom_names
from unfurl_lite.model.builtin_workflows import BY_NAME
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.plan.tasks import Plan


def planner(workflow: str) -> Callable[..., Plan]:
    """The built-in workflow's planner (KeyError for a name that is not one)."""
    module, _, function = BY_NAME[workflow].planner.partition(":")
    planned: Callable[..., Plan] = getattr(
        importlib.import_module(f"unfurl_lite.plan.{module}"), function
    )
    return planned


def build(ensemble: Ensemble, workflow: str, options: Mapping[str, Any] | None = None) -> Plan:
    """The plan of a built-in workflow, or of a TOSCA workflow the spec defines, with the
    workflow's own options (``instance_names``, ``force``, Cloudify's parameters...)."""
    given = dict(options or {})
    declared = BY_NAME.get(workflow)
    if declared is not None:
        plan = planner(workflow)(ensemble, **given)
        plan.affects_history = declared.changes_history
        return plan
    if workflow in custom_names(ensemble.spec):
        from unfurl_lite.plan.tosca import plan_custom  # start-up: only a custom workflow needs it

        return plan_custom(ensemble, workflow, **given)
    raise PlanError(f"unknown workflow {workflow!r}", hint="choose one of: " + ", ".join(BY_NAME))
