"""Cloudify's built-in workflows as commands: execute-operation, start, stop, restart, heal,
scale, update (options named as Cloudify's parameters, dashes for underscores)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from unfurl_lite.cli.commands.common import echo_json, ensemble_option, job_options
from unfurl_lite.cli.commands.jobs import execute_workflow
from unfurl_lite.cli.commands.parameters import merge, parameter_options

ENSEMBLE_OPTION = ensemble_option(positional=False)


def _json_mapping(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("give a JSON object, e.g. '{\"port\": 8080}'")
    return parsed


def _names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """Repeatable, and each value may be a comma-separated list."""
    return [n.strip() for item in value for n in item.split(",") if n.strip()]


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed(
        [
            click.option(
                "--type-names", multiple=True, callback=_names,
                help="Only instances of these types or their subtypes (repeatable, or a,b).",
            ),
            click.option(
                "--node-ids", multiple=True, callback=_names,
                help="Only instances of these node templates.",
            ),
            click.option(
                "--node-instance-ids", multiple=True, callback=_names,
                help="Only these instances.",
            ),
        ]
    ):  # fmt: skip
        func = decorator(func)
    return func


def _filters(opts: dict[str, Any]) -> dict[str, Any]:
    return {k: opts[k] for k in ("type_names", "node_ids", "node_instance_ids")}


@click.command("execute-operation")
@click.argument("operation", required=False)
@ENSEMBLE_OPTION
@job_options
@parameter_options
@click.option(
    "--operation-kwargs", callback=_json_mapping, help="JSON object of inputs for the operation."
)
@click.option(
    "--allow-kwargs-override/--no-allow-kwargs-override",
    default=None,
    help="May --operation-kwargs replace inputs the operation defines (default: no, as "
    "Cloudify: a duplicate is an error).",
)
@click.option(
    "--run-by-dependency-order",
    is_flag=True,
    help="Run on an instance only after the instances it depends on.",
)
@filter_options
@click.pass_context
def execute_operation(
    ctx: click.Context, operation: str | None, ensemble: str | None, **opts: Any
) -> None:
    """Run OPERATION (e.g. cloudify.interfaces.lifecycle.start, Standard.configure) on every
    instance the filters select (filters combine as an intersection), created or not."""
    plan_options = merge("execute_operation", {
        "operation": operation,
        "operation_kwargs": opts["operation_kwargs"],
        "allow_kwargs_override": opts["allow_kwargs_override"],
        "run_by_dependency_order": opts["run_by_dependency_order"],
        **_filters(opts),
    }, opts)  # fmt: skip
    if not plan_options["operation"]:
        raise click.UsageError("give the OPERATION (or -p operation=NAME)", ctx)
    execute_workflow(ctx, "execute_operation", ensemble, plan_options, opts)


def _start_stop_command(workflow: str, doc: str) -> click.Command:
    @click.command(workflow, help=doc)
    @ENSEMBLE_OPTION
    @job_options
    @parameter_options
    @click.option(
        "--operation-parms",
        callback=_json_mapping,
        help="JSON object of inputs (operation_kwargs).",
    )
    @click.option(
        "--run-by-dependency-order/--no-run-by-dependency-order",
        default=True,
        show_default=True,
        help="Keep dependency order (otherwise all in parallel).",
    )
    @filter_options
    @click.pass_context
    def command(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
        plan_options = merge(workflow, {
            "operation_parms": opts["operation_parms"],
            "run_by_dependency_order": opts["run_by_dependency_order"],
            **_filters(opts),
        }, opts)  # fmt: skip
        execute_workflow(ctx, workflow, ensemble, plan_options, opts)

    return command


start = _start_stop_command(
    "start",
    "Run cloudify.interfaces.lifecycle.start (or Standard.start) on the selected instances, "
    "dependencies first.",
)
stop = _start_stop_command(
    "stop",
    "Run cloudify.interfaces.lifecycle.stop (or Standard.stop) on the selected instances, "
    "dependents first.",
)


@click.command()
@ENSEMBLE_OPTION
@job_options
@parameter_options
@click.option("--stop-parms", callback=_json_mapping, help="JSON inputs for the stop operations.")
@click.option("--start-parms", callback=_json_mapping, help="JSON inputs for the start operations.")
@click.option(
    "--run-by-dependency-order/--no-run-by-dependency-order", default=True, show_default=True
)
@filter_options
@click.pass_context
def restart(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Stop every selected instance (dependents first), then start them all."""
    plan_options = merge("restart", {
        "stop_parms": opts["stop_parms"],
        "start_parms": opts["start_parms"],
        "run_by_dependency_order": opts["run_by_dependency_order"],
        **_filters(opts),
    }, opts)  # fmt: skip
    execute_workflow(ctx, "restart", ensemble, plan_options, opts)


@click.command()
@click.argument("node_instance_id", metavar="INSTANCE", required=False)
@ENSEMBLE_OPTION
@job_options
@parameter_options
@click.option("--diagnose-value", help="Why you are healing (shown in the plan).")
@click.option(
    "--ignore-failure/--no-ignore-failure",
    default=True,
    show_default=True,
    help="Go on past failures in the uninstall part of a reinstall.",
)
@click.option(
    "--check-status/--no-check-status",
    default=True,
    show_default=True,
    help="Run check_status first; healthy instances are left alone.",
)
@click.option(
    "--allow-reinstall/--no-allow-reinstall",
    default=True,
    show_default=True,
    help="Reinstall what heal operations cannot fix (else fail).",
)
@click.option("--force-reinstall", is_flag=True, help="Skip check and heal: reinstall.")
@click.pass_context
def heal(
    ctx: click.Context, node_instance_id: str | None, ensemble: str | None, **opts: Any
) -> None:
    """Heal INSTANCE and everything on the same host (all instances if omitted)."""
    plan_options = merge("heal", {
        "node_instance_id": node_instance_id,
        "diagnose_value": opts["diagnose_value"],
        "ignore_failure": opts["ignore_failure"],
        "check_status": opts["check_status"],
        "allow_reinstall": opts["allow_reinstall"],
        "force_reinstall": opts["force_reinstall"],
    }, opts)  # fmt: skip
    execute_workflow(ctx, "heal", ensemble, plan_options, opts)


@click.command()
@click.argument("scalable_entity_name", metavar="TEMPLATE", required=False)
@ENSEMBLE_OPTION
@job_options
@parameter_options
@click.option(
    "--delta", type=int, default=1, show_default=True, help="Instances to add (<0: remove)."
)
@click.option("--scale-compute", is_flag=True, help="Scale the host along with what it hosts.")
@click.option(
    "--include-instances", multiple=True, callback=_names, help="Remove these first (scale in)."
)
@click.option(
    "--exclude-instances", multiple=True, callback=_names, help="Never remove these (scale in)."
)
@click.option(
    "--rollback-if-failed/--no-rollback-if-failed",
    default=True,
    show_default=True,
    help="Uninstall what a failed scale-out created.",
)
@click.pass_context
def scale(
    ctx: click.Context, scalable_entity_name: str | None, ensemble: str | None, **opts: Any
) -> None:
    """Scale TEMPLATE (a node template or scaling group) out or in by --delta instances."""
    plan_options = merge("scale", {
        "scalable_entity_name": scalable_entity_name,
        "delta": opts["delta"],
        "scale_compute": opts["scale_compute"],
        "include_instances": opts["include_instances"],
        "exclude_instances": opts["exclude_instances"],
        "rollback_if_failed": opts["rollback_if_failed"],
    }, opts)  # fmt: skip
    if not plan_options["scalable_entity_name"]:
        raise click.UsageError("give the TEMPLATE (or -p scalable_entity_name=NAME)", ctx)
    execute_workflow(ctx, "scale", ensemble, plan_options, opts)


@click.command()
@ENSEMBLE_OPTION
@job_options
@parameter_options
@click.option("--preview", is_flag=True, help="Print the update's steps; run nothing.")
@click.option("--skip-install", is_flag=True, help="Do not install instances of new templates.")
@click.option(
    "--skip-uninstall", is_flag=True, help="Do not remove instances of removed templates."
)
@click.option("--skip-reinstall", is_flag=True, help="Never reinstall changed instances.")
@click.option("--skip-drift-check", is_flag=True, help="Do not run check_drift operations.")
@click.option("--force-reinstall", is_flag=True, help="Reinstall changed instances, never update.")
@click.option(
    "--skip-heal", is_flag=True,
    help="Do not check_status (and reinstall if unhealthy) instances before updating them.",
)
@click.option(
    "--workflow-id", default=None, metavar="WORKFLOW",
    help="Run this workflow (install, uninstall, heal, start, stop, restart, check, discover) "
    "instead of the update steps.",
)
@click.pass_context
def update(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Bring what was deployed in line with the spec, changing as little as it can."""
    plan_options = merge("update", {
        k: opts[k]
        for k in (
            "preview",
            "workflow_id",
            "skip_install",
            "skip_uninstall",
            "skip_reinstall",
            "skip_drift_check",
            "force_reinstall",
            "skip_heal",
        )
    }, opts)  # fmt: skip
    workflow_id = plan_options.pop("workflow_id", None)
    if workflow_id:
        return _run_instead(ctx, workflow_id, ensemble, bool(plan_options["preview"]), opts)
    if plan_options["preview"]:
        from unfurl_lite import api
        from unfurl_lite.cli import render

        plan = api.plan(ensemble, "update", api.PlanOptions.from_mapping(plan_options))
        if opts.get("as_json"):
            echo_json(render.plan_json(plan))
        else:
            click.echo(render.plan_text(plan))
        return
    execute_workflow(ctx, "update", ensemble, plan_options, opts)


WORKFLOW_IDS = {
    "install": "deploy", "deploy": "deploy", "uninstall": "undeploy", "undeploy": "undeploy",
    "heal": "heal", "start": "start", "stop": "stop", "restart": "restart", "check": "check",
    "discover": "discover",
}  # fmt: skip


def _run_instead(
    ctx: click.Context, workflow_id: str, ensemble: str | None, preview: bool, opts: dict[str, Any]
) -> None:
    """update's ``workflow_id``: the spec is already the new one, so running the named
    workflow is what Cloudify does after storing the new deployment plan."""
    import difflib

    workflow = WORKFLOW_IDS.get(workflow_id.replace("-", "_"))
    if workflow is None:
        close = difflib.get_close_matches(workflow_id, list(WORKFLOW_IDS), n=1)
        raise click.BadParameter(
            f"no workflow {workflow_id!r} to run"
            + (f": did you mean {close[0]!r}?" if close else "; choose one of: "
               + ", ".join(WORKFLOW_IDS)),
            param_hint="--workflow-id",
        )
    plan_options: dict[str, Any] = {}
    if workflow in ("deploy", "undeploy", "check", "discover"):
        plan_options["instance_names"] = ()
    if workflow_id.replace("-", "_") in ("install", "uninstall"):  # Cloudify's, not Unfurl's
        flag = "start" if workflow == "deploy" else "delete"
        plan_options[f"{flag}_without_operation"] = True
    if preview:
        from unfurl_lite import api
        from unfurl_lite.cli import render

        options = api.PlanOptions.from_mapping(plan_options)
        click.echo(render.plan_text(api.plan(ensemble, workflow, options)))
        return
    execute_workflow(ctx, workflow, ensemble, plan_options, opts)


@click.command("install-new-agents")
@ENSEMBLE_OPTION
@job_options
@parameter_options
@click.option(
    "--install-agent-timeout", default="300s", show_default=True,
    help="How long to wait for each agent's worker to come up (seconds, or 300s, 5m).",
)
@click.option("--node-ids", multiple=True, callback=_names,
              help="Only instances of these node templates.")
@click.option("--node-instance-ids", multiple=True, callback=_names, help="Only these instances.")
@click.pass_context
def install_new_agents(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Make sure a live worker serves each selected instance's agent queue: register the
    one already serving it (checking its version) or start one; old ones keep running.
    The broker is --broker or UNFURL_BROKER."""
    import os

    plan_options = merge("install_new_agents", {
        "install_agent_timeout": opts["install_agent_timeout"],
        "node_ids": opts["node_ids"],
        "node_instance_ids": opts["node_instance_ids"],
    }, opts)  # fmt: skip
    if opts.get("broker"):  # the operations reach the broker through the job's environment
        os.environ["UNFURL_BROKER"] = opts["broker"]
    execute_workflow(ctx, "install_new_agents", ensemble, plan_options, opts)
