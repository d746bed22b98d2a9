"""Plan options as one typed record: what a caller may ask of each workflow's planner.

Every field defaults to ``None``, meaning "the workflow's own default" (Cloudify's start
runs by dependency order unless told otherwise, execute_operation does not), so a caller
names only what it means. A field the workflow does not take is refused by name rather than
silently dropped, as a misspelled ``-p`` parameter is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from unfurl_lite.errors import PlanError

_FILTERS = ("type_names", "node_ids", "node_instance_ids")

#: workflow -> the options its planner takes (a custom TOSCA workflow: instance_names)
TAKES: dict[str, tuple[str, ...]] = {
    "deploy": ("instance_names", "force", "start_without_operation", "template", "check",
               "repair", "skip_new", "change_detection", "prune", "upgrade",
               "destroy_discovered"),
    "undeploy": ("instance_names", "destroy_discovered", "ignore_failure",
                 "delete_without_operation", "force", "template"),
    "check": ("instance_names", "template"),
    "discover": ("instance_names", "template"),
    "run": ("instance_names", "command", "operation", "inputs"),
    "execute_operation": ("operation", "operation_kwargs", "allow_kwargs_override",
                          "run_by_dependency_order", *_FILTERS),
    "start": ("operation_parms", "run_by_dependency_order", *_FILTERS),
    "stop": ("operation_parms", "run_by_dependency_order", *_FILTERS),
    "restart": ("stop_parms", "start_parms", "run_by_dependency_order", *_FILTERS),
    "heal": ("node_instance_id", "diagnose_value", "ignore_failure", "check_status",
             "allow_reinstall", "force_reinstall"),
    "scale": ("scalable_entity_name", "delta", "scale_compute", "include_instances",
              "exclude_instances", "rollback_if_failed"),
    "update": ("preview", "skip_install", "skip_uninstall", "skip_reinstall",
               "skip_drift_check", "force_reinstall", "skip_heal", "workflow_id"),
    "install_new_agents": ("install_agent_timeout", "node_ids", "node_instance_ids"),
}
CUSTOM_TAKES = ("instance_names",)


@dataclass(frozen=True)
class PlanOptions:
    """What to plan, beyond the workflow's name (Unfurl's and Cloudify's parameter names)."""

    instance_names: Sequence[str] | None = None
    force: bool | None = None
    template: str | None = None
    check: bool | None = None
    repair: str | None = None
    skip_new: bool | None = None
    change_detection: str | None = None
    prune: bool | None = None
    upgrade: bool | None = None
    destroy_discovered: bool | None = None
    ignore_failure: bool | None = None
    delete_without_operation: bool | None = None
    start_without_operation: bool | None = None
    command: Sequence[str] | None = None
    operation: str | None = None
    inputs: Mapping[str, Any] | None = None
    operation_kwargs: Mapping[str, Any] | None = None
    allow_kwargs_override: bool | None = None
    run_by_dependency_order: bool | None = None
    type_names: Sequence[str] | None = None
    node_ids: Sequence[str] | None = None
    node_instance_ids: Sequence[str] | None = None
    operation_parms: Mapping[str, Any] | None = None
    stop_parms: Mapping[str, Any] | None = None
    start_parms: Mapping[str, Any] | None = None
    node_instance_id: str | None = None
    diagnose_value: str | None = None
    check_status: bool | None = None
    allow_reinstall: bool | None = None
    force_reinstall: bool | None = None
    scalable_entity_name: str | None = None
    delta: int | None = None
    scale_compute: bool | None = None
    include_instances: Sequence[str] | None = None
    exclude_instances: Sequence[str] | None = None
    rollback_if_failed: bool | None = None
    preview: bool | None = None
    skip_install: bool | None = None
    skip_uninstall: bool | None = None
    skip_reinstall: bool | None = None
    skip_drift_check: bool | None = None
    skip_heal: bool | None = None
    workflow_id: str | None = None
    install_agent_timeout: str | float | None = None

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any]) -> PlanOptions:
        """Options from plain data (a journal's ``planOptions``, a parameters file)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise PlanError(f"unknown plan option(s): {', '.join(unknown)}",
                            hint="the options are PlanOptions' fields: " + ", ".join(sorted(known)))
        return cls(**dict(given))

    def given(self) -> dict[str, Any]:
        """The options set (not None), as plain data."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    def replace(self, **changes: Any) -> PlanOptions:
        return dataclasses.replace(self, **changes)

    def for_workflow(self, workflow: str) -> dict[str, Any]:
        """The keyword arguments of ``workflow``'s planner (any other name is a custom
        TOSCA workflow, or unknown and refused by the planner); an option it does not take
        is an error naming the options it does."""
        takes = TAKES.get(workflow, CUSTOM_TAKES)
        given = self.given()
        extra = sorted(set(given) - set(takes))
        if extra:
            raise PlanError(
                f"{workflow} does not take the option(s) {', '.join(extra)}",
                hint=f"{workflow} takes: " + (", ".join(takes) or "no options"),
            )
        return {name: tuple(value) if isinstance(value, list) else value
                for name, value in given.items()}
