"""Planning by workflow name: each built-in workflow's planner, as its declaration
(:mod:`unfurl_lite.model.builtin_workflows`) names it, or a TOSCA workflow the spec defines.

Planners are imported when their workflow is asked for (``unfurl plan`` of a deploy never
loads heal's or scale's code), so no planner module imports another through here and
none imports the registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from unfurl_lite.errors import JobNotCreated, PlanError
from unfurl_lite.model.builtin_workflows import BY_NAME
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.plan.tasks import Plan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
        plan = planner(workflow)(ensemble, **declared.planner_keywords(given))
        plan.affects_history = declared.changes_history
        return creatable(ensemble, plan)
    # start-up: keeps load.workflows (4 modules) and plan.tosca off built-in workflows' plans
    from unfurl_lite.load.workflows import custom_names
    from unfurl_lite.plan.tosca import plan_custom

    if workflow in custom_names(ensemble.spec):
        return creatable(ensemble, plan_custom(ensemble, workflow, **given))
    raise PlanError(f"unknown workflow {workflow!r}", hint="choose one of: " + ", ".join(BY_NAME))


def creatable(ensemble: Ensemble, plan: Plan) -> Plan:
    """``plan``, unless it would run an operation of a template that is missing a required
    requirement: validate accepts such a template (a job that leaves it alone runs), but
    Unfurl 1.2.0 cannot create a job that runs its operations ("Node template X is missing
    requirements: R", exit 64, nothing recorded)."""
    templates = ensemble.topology.templates
    for task in plan.tasks:
        template = templates.get(task.template)
        if task.operation is not None and template is not None and template.missing_requirements:
            missing = template.missing_requirements
            raise JobNotCreated(
                f"Unable to create job: node template {template.name!r} is missing "
                f"requirements: {', '.join(missing)}",
                hint=f"connect it (`requirements: [{{{missing[0]}: TEMPLATE}}]`), add a "
                     "template with the capability it asks for, make the requirement optional "
                     "(occurrences: [0, 1]), or leave the template out of the job (--template)")
    return plan
