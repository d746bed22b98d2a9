"""One registry of planners: each workflow's name and the function that plans it.

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
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.plan.tasks import Plan

#: workflow -> (module of unfurl_lite.plan, planner function); the order is the one the
#: "unknown workflow" hint lists
PLANNERS: dict[str, tuple[str, str]] = {
    "deploy": ("deploy", "plan_deploy"),
    "undeploy": ("deploy", "plan_undeploy"),
    "check": ("deploy", "plan_check"),
    "discover": ("deploy", "plan_discover"),
    "run": ("operations", "plan_run"),
    "execute_operation": ("operations", "plan_execute_operation"),
    "start": ("operations", "plan_start"),
    "stop": ("operations", "plan_stop"),
    "restart": ("operations", "plan_restart"),
    "heal": ("heal", "plan_heal"),
    "scale": ("scale", "plan_scale"),
    "update": ("update", "plan_update"),
    "install_new_agents": ("agents", "plan_install_new_agents"),
}


def planner(workflow: str) -> Callable[..., Plan]:
    """The built-in workflow's planner (KeyError for a name that is not one)."""
    module, function = PLANNERS[workflow]
    planned: Callable[..., Plan] = getattr(
        importlib.import_module(f"unfurl_lite.plan.{module}"), function
    )
    return planned


def build(ensemble: Ensemble, workflow: str, options: Mapping[str, Any] | None = None) -> Plan:
    """The plan of a built-in workflow, or of a TOSCA workflow the spec defines, with the
    workflow's own options (``instance_names``, ``force``, Cloudify's parameters...)."""
    given = dict(options or {})
    if workflow in PLANNERS:
        return planner(workflow)(ensemble, **given)
    if workflow in custom_names(ensemble.spec):
        from unfurl_lite.plan.tosca import plan_custom  # start-up: only a custom workflow needs it

        return plan_custom(ensemble, workflow, **given)
    raise PlanError(f"unknown workflow {workflow!r}", hint="choose one of: " + ", ".join(PLANNERS))
