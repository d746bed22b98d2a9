"""Job commands: deploy, undeploy, check, discover and run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from unfurl_lite.cli.commands.common import (
    confirm_plan,
    console,
    echo_json,
    ensemble_option,
    is_terminal,
    job_options,
    output_width,
    quiet_collector,
    say,
    show,
    verbosity,
)
from unfurl_lite.cli.commands.parameters import merge, parameter_options
from unfurl_lite.cli.commands.unfurl_options import (
    deploy_options,
    deploy_plan_options,
    job_inputs,
    output_options,
    refused_options,
    template_option,
)

if TYPE_CHECKING:
    from unfurl_lite.api import PlanOptions

READ_ONLY_WORKFLOWS = ("check", "discover")
RECORDED_OPTION_NAMES = (
    "dryrun",
    "commit",
    "dirty",
    "force",
    "instances",
    "jobs",
    "retries",
    "destroy_discovered",
    "operation",
)


def recorded_options(opts: dict[str, Any]) -> dict[str, Any]:
    """What lastJob.options shows: the options the user set, as Unfurl records them."""
    recorded: dict[str, Any] = {}
    for name in RECORDED_OPTION_NAMES:
        value = opts.get(name)
        if value in (None, False, (), []) or (name == "dirty" and value == "auto"):
            continue
        recorded[name] = list(value) if isinstance(value, tuple) else value
    if opts.get("commit") is not None:
        recorded["commit"] = bool(opts["commit"])
    return recorded


def execute_workflow(
    ctx: click.Context,
    workflow: str,
    ensemble_path: str | None,
    plan_options: PlanOptions | dict[str, Any],
    opts: dict[str, Any],
    custom: bool = False,
) -> None:
    import contextlib

    from unfurl_lite import api
    from unfurl_lite.cli import render
    from unfurl_lite.run.signals import JobControl, handle_signals

    if isinstance(plan_options, dict):
        plan_options = api.PlanOptions.from_mapping(plan_options)
    if opts.get("instances") and plan_options.instance_names is None:
        filters = any(p.name == "node_instance_ids" for p in ctx.command.params)
        raise click.UsageError(
            f"{ctx.info_name} selects instances with --node-instance-ids, --node-ids or "
            "--type-names, not --instance" if filters
            else f"--instance does not apply to {ctx.info_name} (see its --help)", ctx
        )
    as_json = opts.get("as_json", False) or opts.get("output") == "json"
    level = verbosity(ctx, opts)
    options = api.JobOptions(
        workflow=workflow,
        dryrun=opts.get("dryrun", False),
        commit=opts.get("commit", True),
        message=opts.get("message"),
        jobs=opts.get("jobs") or 0,
        jobexitcode=opts.get("jobexitcode", "error"),
        env_passthrough=opts.get("env_passthrough", False),
        allow_outside_paths=opts.get("allow_outside_paths", False),
        retries=opts.get("retries", 0),
        recorded=recorded_options(opts),
    )
    request = api.JobRequest(
        ensemble=ensemble_path,
        workflow=workflow,
        plan_options=plan_options,
        options=options,
        dirty=opts.get("dirty", "auto"),
        executor=opts.get("executor") or os.environ.get("UNFURL_EXECUTOR", "local"),
        executor_options=opts.get("executor_options")
        or ({"broker": opts["broker"]} if opts.get("broker") else None),
        queue=bool(opts.get("queue")),
        custom=custom,
        inputs=job_inputs(tuple(opts.get("variables") or ())),
        query=opts.get("query"),
    )
    tty = is_terminal()

    def confirm(ensemble: Any, plan: Any) -> bool:
        """Show the plan, ask if it must; False (run nothing) when it has no tasks."""
        needs_approval = (workflow not in READ_ONLY_WORKFLOWS and not options.dryrun
                          and bool(plan.tasks))
        shown = render.plan_tree(plan) if tty else render.plan_text(plan)
        if level < 0 and (opts.get("approve") or not needs_approval):
            shown = ""  # quiet: nobody has to read the plan before it runs
        if not confirm_plan(shown, opts.get("approve", False), needs_approval, as_json):
            click.echo("Cancelled: nothing was run.", err=True)
            ctx.exit(1)
        return bool(plan.tasks)

    control = JobControl()
    running = contextlib.ExitStack()

    def observe(count: int) -> Any:
        """The job is about to run: Ctrl-C now means cancel, and progress is shown."""
        running.enter_context(handle_signals(control))
        running.enter_context(quiet_collector())
        if tty and not as_json and level >= 0:
            return running.enter_context(render.ProgressObserver(console(), count))
        return render.LineObserver() if level >= 0 and not as_json else None

    with running:
        result = api.run_job(
            request, confirm=confirm, observe=observe, cancel=control,
            notify=lambda message: say(message, err=True) if level >= 0 else None,
        )
    if result is None:  # confirmed, with nothing to run
        from unfurl_lite.api.jobs import query_ensemble

        found = query_ensemble(ensemble_path, request.query, request.inputs) \
            if request.query else None
        if as_json:
            document: dict[str, Any] = {"workflow": workflow, "summary": "nothing to do",
                                        "tasks": []}
            if request.query:
                document.update(query=request.query, result=found)
            echo_json(document)
        elif level >= 0 and opts.get("output") != "none":
            click.echo("Nothing to do.")
        if request.query and not as_json:
            click.echo(render.query_text(request.query, found))
        return
    show_result(ctx, result, options, as_json, tty, level, summary=opts.get("output") != "none")


def show_result(
    ctx: click.Context, result: Any, options: Any, as_json: bool, tty: bool, level: int = 0,
    summary: bool = True,
) -> None:
    """The job's result; ``summary`` False (``--output none``): only a ``--query``'s."""
    from unfurl_lite.cli import render

    if as_json:
        data = render.result_json(result)
        if result.query is not None:
            data["query"], data["result"] = result.query
        echo_json(data)
        ctx.exit(result.exit_code(options.jobexitcode))
    if result.workflow in ("run", "install_new_agents") and not result.dryrun:
        output = render.run_output_text(result)
        if output:
            click.echo(output)
    if summary and tty and level >= 0:
        show(render.summary_table(result))
    if summary:
        say(render.summary_text(result))
        found = render.changes_table(result, output_width())
        if found:
            show(found)
    if result.query is not None:
        click.echo(render.query_text(*result.query))
    ctx.exit(result.exit_code(options.jobexitcode))


@click.command()
@ensemble_option()
@job_options
@parameter_options
@click.option("--force", is_flag=True, help="Run operations even on instances already ok.")
@deploy_options
@output_options
@refused_options("deploy")
@click.pass_context
def deploy(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Deploy the ensemble: create, configure and start every instance not yet ok."""
    plan_options = {
        "instance_names": opts["instances"], "force": opts["force"],
        **({"start_without_operation": True} if ctx.info_name == "install" else {}),
        **deploy_plan_options(opts),
    }
    if opts.get("destroyunmanaged"):
        plan_options["destroy_discovered"] = True
    execute_workflow(ctx, "deploy", ensemble, merge("deploy", plan_options, opts), opts)


@click.command()
@ensemble_option()
@job_options
@click.option(
    "--destroy-discovered",
    is_flag=True,
    help="Also delete instances that were discovered rather than created.",
)
@click.option(
    "--ignore-failure", is_flag=True, help="Go on past failing instances (Cloudify's uninstall)."
)
@click.option("--destroyunmanaged", is_flag=True, help="Unfurl's name for --destroy-discovered.")
@click.option("--force", is_flag=True,
              help="Delete even what a kept instance (protected, or required by one that "
                   "stays) still needs.")
@template_option
@parameter_options
@output_options
@refused_options("undeploy")
@click.pass_context
def undeploy(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Undeploy: stop and delete instances in reverse dependency order."""
    plan_options = {
        "instance_names": opts["instances"],
        "destroy_discovered": opts["destroy_discovered"] or opts["destroyunmanaged"],
        "ignore_failure": opts["ignore_failure"],
        **({"delete_without_operation": True} if ctx.info_name == "uninstall" else {}),
        **({"force": True} if opts["force"] else {}),
        **({"template": opts["template"]} if opts["template"] else {}),
    }
    execute_workflow(ctx, "undeploy", ensemble, merge("undeploy", plan_options, opts), opts)


@click.command()
@ensemble_option()
@job_options
@template_option
@output_options
@refused_options("check")
@click.pass_context
def check(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Run each instance's check operation and record what it finds (changes nothing live)."""
    execute_workflow(ctx, "check", ensemble, {"instance_names": opts["instances"],
                                              "template": opts["template"]}, opts)


@click.command()
@ensemble_option()
@job_options
@template_option
@output_options
@refused_options("discover")
@click.pass_context
def discover(ctx: click.Context, ensemble: str | None, **opts: Any) -> None:
    """Run each instance's discover operation: record attributes and found instances."""
    execute_workflow(ctx, "discover", ensemble, {"instance_names": opts["instances"],
                                              "template": opts["template"]}, opts)


@click.command(context_settings={"ignore_unknown_options": False})
@ensemble_option(positional=False)
@job_options
@click.option("--operation", help="Run this operation (e.g. configure, Install.check).")
@click.option("--workflow", "-w", "custom_workflow", metavar="NAME",
              help="Run the custom workflow NAME from the topology's `workflows:`.")
@click.argument("command", nargs=-1)
@output_options
@refused_options("run")
@click.pass_context
def run(ctx: click.Context, ensemble: str | None, command: tuple[str, ...], **opts: Any) -> None:
    """Run an ad hoc COMMAND (after --), an --operation, or a custom --workflow on the
    selected instances.

    Example: unfurl run --instance app -- echo hello
    """
    if opts.get("custom_workflow"):
        if command or opts["operation"]:
            raise click.UsageError("--workflow runs the workflow's own steps: give no "
                                   "command or --operation with it", ctx)
        execute_workflow(ctx, opts["custom_workflow"], ensemble,
                         {"instance_names": opts["instances"]}, opts, custom=True)
        return
    execute_workflow(
        ctx,
        "run",
        ensemble,
        {
            "instance_names": opts["instances"],
            "command": command,
            "operation": opts["operation"],
        },
        opts,
    )
