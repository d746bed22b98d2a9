"""Options shared by the job commands, and how a job is shown and confirmed."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import click

from unfurl_lite.cli.commands.unfurl_options import output_options
from unfurl_lite.cli.terminal import console as console  # the commands take them from here
from unfurl_lite.cli.terminal import is_terminal as is_terminal
from unfurl_lite.errors import ApprovalRequired
from unfurl_lite.model import status_layout as layout
from unfurl_lite.run.options import JobOptions

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


@contextlib.contextmanager
def quiet_collector() -> Iterator[None]:
    """A job allocates a long-lived record per task and almost no reference cycles, yet
    Python's default thresholds rescan the growing heap every 700 allocations: at 10 000
    tasks that was 15% of the job. The command's process is ours, so the model loaded so
    far is frozen out of collection for the job (a library caller's heap is left alone)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


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


@dataclass(frozen=True)
class JobChoice:
    """What a job command was asked, beyond its workflow's parameters: the job's own
    options (:class:`~unfurl_lite.run.options.JobOptions`), how to run it, and how to show
    it. Options left unset keep the defaults the api and run layers give them."""

    options: JobOptions
    dirty: str = "auto"
    instances: tuple[str, ...] = ()
    approve: bool = False
    queue: bool = False
    executor: str | None = None
    broker: str | None = None
    as_json: bool = False
    verbose: int = 0
    quiet: bool = False
    parameters: tuple[str, ...] = ()  # -p NAME=VALUE, as typed
    parameters_file: str | None = None
    variables: tuple[tuple[str, str], ...] = ()  # Unfurl's --var NAME VALUE, as typed
    query: str | None = None  # Unfurl's --query: evaluated once the job is done
    output: str | None = None  # Unfurl's --output: text, json (as --json) or none

    @property
    def shows_json(self) -> bool:
        """The result is one JSON document on stdout (``--json`` or ``--output json``)."""
        return self.as_json or self.output == "json"

    @classmethod
    def take(cls, values: dict[str, Any]) -> JobChoice:
        """The job options among a command's values, removed from them."""
        given = {name: values.pop(name) for name in _CHOICE if name in values}
        jobs = {name: values.pop(name) for name in _JOB if name in values}
        options = JobOptions(**{k: v for k, v in jobs.items() if v is not None})
        choice: dict[str, Any] = {k: tuple(map(tuple, v)) if k == "variables"
                                  else tuple(v) if isinstance(v, list | tuple) else v
                                  for k, v in given.items() if v is not None}
        return cls(options=options, **choice)


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
            help="Tasks to run in parallel (default: the number of cores).",
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
    if not as_json and plan_text_or_tree:
        if isinstance(plan_text_or_tree, str):
            say(plan_text_or_tree)
        else:
            show(plan_text_or_tree)
    if approve or not needs_approval:
        return True
    if not sys.stdin.isatty():
        raise ApprovalRequired(
            "this job changes things and there is no terminal to confirm on",
            hint="review the plan (unfurl plan) and pass --approve to run it",
        )
    if as_json and plan_text_or_tree:
        console(stderr=True).print(plan_text_or_tree)
    # with --json, stdout holds the result document only
    return click.confirm("Run this job?", default=False, err=as_json)


def output_width() -> int | None:
    """The width to fit output to: the terminal's, or in a pipe ``COLUMNS`` when the
    environment sets it (None: as wide as the content)."""
    from unfurl_lite.cli import tables  # start-up: keeps cli.tables (1 module) off `validate`

    return tables.terminal_width() if is_terminal() else tables.environment_width()


def say(text: str, err: bool = False) -> None:
    """Sentences for people, wrapped at spaces to the output's width (never inside a word,
    an id or a time), each continuation line indented under its own."""
    from unfurl_lite.cli import tables  # start-up: keeps cli.tables (1 module) off `validate`

    click.echo(tables.prose(text, output_width()), err=err)


def show(renderable: Any) -> None:
    if isinstance(renderable, str):
        click.echo(renderable)
    else:
        console().print(renderable)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def verbosity(ctx: click.Context, quiet: bool = False, verbose: int = 0) -> int:
    """-1 quiet, 0 normal, 1+ verbose: from the command's own flags or the group's."""
    if quiet:
        return -1
    options: dict[str, Any] = ctx.find_root().obj or {}
    group: int = options.get("verbose", 0)
    return group if group < 0 else group + int(verbose or 0)


#: the click names of the options JobChoice and JobOptions take
_CHOICE = tuple(f.name for f in fields(JobChoice) if f.name != "options")
_JOB = tuple(f.name for f in fields(JobOptions) if f.name not in ("recorded", "retry_interval"))
