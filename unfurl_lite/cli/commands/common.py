"""Options shared by the job commands, and how a job is shown and confirmed."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from unfurl_lite.cli import jobflow
from unfurl_lite.cli.commands.unfurl_options import output_options
from unfurl_lite.cli.jobflow import JobChoice as JobChoice
from unfurl_lite.cli.jobflow import echo_json as echo_json
from unfurl_lite.cli.jobflow import quiet_collector as quiet_collector
from unfurl_lite.cli.jobflow import show as show
from unfurl_lite.cli.terminal import console as console  # the commands take them from here
from unfurl_lite.cli.terminal import is_terminal as is_terminal
from unfurl_lite.model import status_layout as layout

ENSEMBLE_HELP = "The ensemble file, or its directory (default: ./ensemble.yaml)."
ENSEMBLE_ARG = click.argument("ensemble", required=False, type=click.Path())


def ensemble_option(positional: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The one way every command names its ensemble: ``--ensemble/-e PATH``, and, where
    the command takes no other arguments, the same as an optional ENSEMBLE argument (as
    Unfurl's ``unfurl deploy ENSEMBLE``). The command receives it as ``ensemble``."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        if not positional:
            return click.option("--ensemble", "-e", "ensemble", type=click.Path(),
                                default=None, help=ENSEMBLE_HELP)(func)

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            given, argument = kwargs.pop("ensemble_flag", None), kwargs.get("ensemble")
            if given and argument and given != argument:
                raise click.UsageError(f"two ensembles given: {argument} and -e {given}")
            kwargs["ensemble"] = given or argument
            return func(*args, **kwargs)

        command = click.option("--ensemble", "-e", "ensemble_flag", type=click.Path(),
                               default=None, help=ENSEMBLE_HELP)(command)
        return ENSEMBLE_ARG(command)

    return decorate


def instance_names(ensemble: str | None) -> list[str]:
    """Template and instance names, read cheaply (no validation) for shell completion."""

    from ruamel.yaml import YAML  # start-up: keeps ruamel (36 modules) off `validate`, `deploy`

    path = Path(ensemble or ".")
    if path.is_dir():
        path = path / "ensemble.yaml"
    try:
        doc = YAML(typ="safe").load(path.read_text())
        spec: dict[str, Any] = doc.get("spec") or {}
        service: dict[str, Any] = spec.get("service_template") or {}
        topology: dict[str, Any] = service.get("topology_template") or {}
        templates: dict[str, Any] = topology.get("node_templates") or {}
        status: dict[str, Any] = doc.get("status") or {}
        instances = layout.flatten(status.get("instances") or {})
    except Exception:  # completion must never fail loudly
        return []
    return sorted({str(n) for n in [*templates, *instances] if not str(n).startswith("+")})


def complete_instances(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    # start-up: keeps click.shell_completion off `validate`, `deploy`: only completion needs it
    from click.shell_completion import CompletionItem

    ensemble = ctx.params.get("ensemble") or ctx.params.get("ensemble_flag")
    return [CompletionItem(n) for n in instance_names(ensemble) if n.startswith(incomplete)]


def job_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every job command takes (Unfurl's names and meanings), handed to the
    command as one typed record, ``job``."""

    @functools.wraps(func)
    def command(*args: Any, **values: Any) -> Any:
        return func(*args, job=JobChoice.take(values), **values)

    decorators = [
        click.option(
            "--dryrun", "--dry-run", "dryrun", is_flag=True,
            help="Run nothing, show what would run, record nothing (--dry-run: Cloudify's "
            "spelling).",
        ),
        click.option("-a", "--approve", is_flag=True, help="Do not ask for confirmation."),
        click.option(
            "--commit/--no-commit",
            default=True,
            show_default=True,
            help="Commit the job's records to git.",
        ),
        click.option(
            "-m", "--message", help="Commit message (default: Updating status for job ID)."
        ),
        click.option(
            "--dirty",
            type=click.Choice(["auto", "ok", "abort"]),
            default="auto",
            show_default=True,
            help="What to do when the repo has uncommitted changes: abort on any "
            "(abort), on any but the ensemble's own files, whose edited spec files are "
            "committed with the job (auto), or go on (ok).",
        ),
        click.option(
            "--jobs",
            "-j",
            "jobs",
            type=click.IntRange(min=1),
            default=None,
            help="Tasks to run in parallel (default: twice the number of cores, at least 4).",
        ),
        click.option(
            "--instance",
            "-i",
            "instances",
            multiple=True,
            shell_complete=complete_instances,
            help="Limit the job to this instance (repeatable) and what it needs.",
        ),
        click.option(
            "--jobexitcode",
            type=click.Choice(["error", "degraded", "never"]),
            default="error",
            show_default=True,
            help="Exit 64 when the job ends at this status or worse.",
        ),
        click.option(
            "--queue",
            is_flag=True,
            help="If a job is running on this ensemble, wait for it to end, then run.",
        ),
        click.option(
            "--retries",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Retry a failing task this many times, with back-off.",
        ),
        click.option(
            "--env-passthrough",
            is_flag=True,
            help="Give operations this whole environment, not only the allow-list.",
        ),
        click.option(
            "--allow-outside-paths",
            is_flag=True,
            help="Let file(), shell cwd and the job records use paths outside the project.",
        ),
        click.option(
            "--executor",
            type=click.Choice(["local", "celery"]),
            default=None,
            help="Where operations run: this process (local) or Celery workers "
            "(default: $UNFURL_EXECUTOR or local).",
        ),
        click.option(
            "--broker",
            default=None,
            help="The Celery broker for --executor celery "
            "(default: $UNFURL_BROKER or redis://127.0.0.1:6379/0).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the job's result as JSON."),
        click.option("-v", "--verbose", count=True, help="More output (repeat for more)."),
        click.option("-q", "--quiet", is_flag=True, help="Only errors and the final result."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return output_options(command)


def confirm_plan(
    plan_text_or_tree: Any, approve: bool, needs_approval: bool, as_json: bool
) -> bool:
    """Show the plan; ask on a terminal; refuse (clearly) when nobody can be asked."""
    return jobflow.confirm_plan(plan_text_or_tree, approve, needs_approval, as_json,
                                is_terminal())


def output_width() -> int | None:
    """The width to fit output to: the terminal's, or in a pipe ``COLUMNS`` when the
    environment sets it (None: as wide as the content)."""
    return jobflow.output_width(is_terminal())


def say(text: str, err: bool = False) -> None:
    """Sentences for people, wrapped at spaces to the output's width (never inside a word,
    an id or a time), each continuation line indented under its own."""
    jobflow.say(text, is_terminal(), err)


def verbosity(ctx: click.Context, quiet: bool = False, verbose: int = 0) -> int:
    """-1 quiet, 0 normal, 1+ verbose: from the command's own flags or the group's."""
    if quiet:
        return -1
    options: dict[str, Any] = ctx.find_root().obj or {}
    group: int = options.get("verbose", 0)
    return group if group < 0 else group + int(verbose or 0)
