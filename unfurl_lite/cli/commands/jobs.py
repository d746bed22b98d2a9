"""The job commands: one per built-in workflow and spelling, each made from the
workflow's declaration (:mod:`unfurl_lite.model.builtin_workflows`), and how a job is
confirmed, run and shown.

A command turns what was typed into the typed records a job takes: the parameters the user
gave (:class:`~unfurl_lite.run.options.PlanOptions`; what was not given keeps the
planner's default) and the job's options (:class:`~unfurl_lite.cli.commands.common.JobChoice`).
The CLI and the library therefore plan and record the same job the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import click

from unfurl_lite import api
from unfurl_lite.cli import jobflow, render
from unfurl_lite.cli.commands.common import (
    JobChoice,
    echo_json,
    ensemble_option,
    is_terminal,
    job_options,
    verbosity,
)
from unfurl_lite.cli.commands.parameters import (
    GIVEN,
    click_parameter,
    parameter_options,
    workflow_parameters,
)
from unfurl_lite.cli.commands.unfurl_options import refused_options
from unfurl_lite.model.builtin_workflows import (
    BY_NAME,
    BuiltinWorkflow,
    Parameter,
    workflow_of_command,
)


def given_parameters(ctx: click.Context, workflow: BuiltinWorkflow, spelling: str,
                     values: Mapping[str, Any], job: JobChoice) -> dict[str, Any]:
    """The parameters the user gave: what the command's spelling implies, the dashed
    options and arguments typed, then ``-p``/``--parameters`` over them (Cloudify's ``-p``
    overrides); a parameter not given is left to the planner's default."""
    given = dict(workflow.commands.get(spelling) or {})
    for parameter in workflow.parameters:
        value = values.get(parameter.name)
        typed = parameter.argument and value not in (None, ())
        if typed or (parameter.flag and ctx.get_parameter_source(parameter.name) in GIVEN):
            given[parameter.name] = value
    if workflow.parameter("instance_names"):
        given["instance_names"] = job.instances
    elif job.instances:
        selectors = [p.flag for p in workflow.parameters if p.selects and p.flag]
        raise click.UsageError(
            f"{ctx.info_name} selects instances with {', '.join(reversed(selectors))}, "
            "not --instance" if selectors
            else f"--instance does not apply to {ctx.info_name} (see its --help)", ctx)
    if workflow.takes_cloudify_parameters:
        given.update(workflow_parameters(workflow, job.parameters, job.parameters_file))
    for parameter in workflow.parameters:
        if parameter.required and given.get(parameter.name) in (None, ""):
            raise click.UsageError(f"give the {parameter.argument or parameter.flag} "
                                   f"(or -p {parameter.name}=NAME)", ctx)
    return given


@functools.cache
def command_for(spelling: str) -> click.Command:
    """The command that ``spelling`` (``deploy``, ``install``, ``execute-operation``...)
    names, with the options of its workflow's declaration: made once per process (a click
    command keeps no state between invocations; a library or a test invokes it often)."""
    workflow = workflow_of_command(spelling)
    if workflow is None:
        raise KeyError(spelling)

    def command(ctx: click.Context, ensemble: str | None, job: JobChoice,
                **values: Any) -> None:
        custom = values.pop("custom_workflow", None)
        if custom:
            return run_custom(ctx, custom, ensemble, job, values)
        given = given_parameters(ctx, workflow, spelling, values, job)
        instead = next((p for p in workflow.parameters if p.runs_instead), None)
        if instead is not None and given.get(instead.name):
            return run_instead(ctx, instead, str(given[instead.name]), ensemble, job, given)
        if any(given.get(p.name) for p in workflow.parameters if p.shows_only):
            return show_plan(ctx, workflow.name, ensemble, given, job)
        execute_workflow(ctx, workflow.name, ensemble, given, job)

    decorators: list[Callable[[Any], Any]] = [
        ensemble_option(positional=workflow.ensemble_argument),
        job_options,
        *([parameter_options] if workflow.takes_cloudify_parameters else []),
        *(_attach(made) for p in workflow.parameters if (made := click_parameter(p))),
        *EXTRA_OPTIONS.get(workflow.name, ()),
        refused_options(workflow.name),
    ]
    decorated: Any = click.pass_context(command)
    for decorate in reversed(decorators):
        decorated = decorate(decorated)
    return click.command(spelling, help=workflow.help, short_help=workflow.summary)(decorated)


def _attach(param: click.Parameter) -> Callable[[Any], Any]:
    """A decorator adding a ready-made click parameter, as click.option does."""

    def decorate(func: Any) -> Any:
        func.__click_params__ = [*getattr(func, "__click_params__", []), param]
        return func

    return decorate


#: a command's options that are not its planner's parameters
EXTRA_OPTIONS: dict[str, tuple[Callable[[Any], Any], ...]] = {
    "run": (click.option("--workflow", "-w", "custom_workflow", metavar="NAME", default=None,
                         help="Run the custom workflow NAME from the topology's `workflows:`."),),
}


def run_custom(ctx: click.Context, name: str, ensemble: str | None, job: JobChoice,
               values: Mapping[str, Any]) -> None:
    """``unfurl run --workflow NAME``: a TOSCA workflow of the topology, with its steps."""
    if any(values.get(p.name) for p in BY_NAME["run"].parameters):
        raise click.UsageError("--workflow runs the workflow's own steps: give no "
                               "command or --operation with it", ctx)
    execute_workflow(ctx, name, ensemble, {"instance_names": job.instances}, job, custom=True)


def run_instead(ctx: click.Context, parameter: Parameter, named: str, ensemble: str | None,
                job: JobChoice, given: Mapping[str, Any]) -> None:
    """A parameter naming another workflow to run instead (Cloudify's update can): the
    spec is already the new one, so running the named workflow is what Cloudify does
    after storing the new deployment plan."""

    names = {spelled: (w, dict(w.commands.get(spelled) or {}))
             for w in (BY_NAME[n] for n in parameter.runs_instead)
             for spelled in (*w.commands, w.name)}
    found = names.get(named.replace("-", "_")) or names.get(named)
    if found is None:
        import difflib  # start-up: a misspelled workflow only, not every job's imports

        close = difflib.get_close_matches(named, list(names), n=1)
        raise click.BadParameter(
            f"no workflow {named!r} to run" + (f": did you mean {close[0]!r}?" if close
                                               else "; choose one of: " + ", ".join(names)),
            param_hint=parameter.flag)
    target, options = found  # the spelling's own parameters (Cloudify's install, uninstall)
    if target.parameter("instance_names"):
        options["instance_names"] = ()
    workflow = workflow_of_command(str(ctx.info_name)) or target
    if any(given.get(p.name) for p in workflow.parameters if p.shows_only):
        return show_plan(ctx, target.name, ensemble, options, job)
    execute_workflow(ctx, target.name, ensemble, options, job)


def show_plan(ctx: click.Context, workflow: str, ensemble: str | None,
              given: Mapping[str, Any], job: JobChoice) -> None:
    """The plan alone, as ``unfurl plan`` shows it (a parameter asked only to see it)."""
    plan = api.plan(ensemble, workflow, api.PlanOptions.from_mapping(given))
    if job.shows_json:
        echo_json(render.plan_json(plan))
    else:
        click.echo(render.plan_text(plan))


def execute_workflow(
    ctx: click.Context,
    workflow: str,
    ensemble_path: str | None,
    plan_options: Mapping[str, Any],
    job: JobChoice,
    custom: bool = False,
) -> None:
    """Plan ``workflow``, show the plan, ask when it must, run the job and show its
    result (:func:`unfurl_lite.cli.jobflow.execute`); the exit code is the job's
    (``--jobexitcode``)."""
    level = verbosity(ctx, job.quiet, job.verbose)
    ctx.exit(jobflow.execute(workflow, ensemble_path, plan_options, job, level,
                             is_terminal(), custom))


def show_result(
    ctx: click.Context, result: Any, jobexitcode: str, as_json: bool, tty: bool, level: int = 0,
    summary: bool = True,
) -> None:
    """The job's result (a summary, or the JSON document), then its exit code."""
    ctx.exit(jobflow.show_result(result, jobexitcode, as_json, tty, level, summary))
