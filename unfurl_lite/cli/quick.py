"""``unfurl plan [ENSEMBLE]`` and a job command with the everyday options answered
without click, as click would answer them.

A plan is the first look at an ensemble, and what scripts run before each job. Importing
click and building the commands' options (click brings ``inspect``, ``uuid``, ``platform``,
``gettext`` and ``locale``, and writes every option's help) was a fifth of a cold plan's
time beyond the interpreter's start. A command line that names nothing but ``plan`` and its
ensemble leaves every option at its default, so this module makes the call the click
command makes (:func:`plan_of`, shared with it) and writes what ``click.echo`` writes.
Every other command line (an option, ``--``, a terminal on stdout, which gets rich's tree,
shell completion, an unreadable path) goes to click, unchanged. Errors are said as the
click group says them (:func:`error_text`), with the same exit codes.

A job (``unfurl deploy --approve --dirty=ok -q [ENSEMBLE]``, what scripts and CI type) is
answered the same way (:func:`job_line`): a workflow's command spelling with only the job
options every script uses (``-a``/``--approve``, ``-q``/``--quiet``, ``--dirty``,
``-j``/``--jobs``, ``--commit``/``--no-commit``, ``--dryrun``, ``--jobexitcode``) and its
ensemble; the options' values are what click's command would have taken, and the job runs,
shows and exits through :mod:`unfurl_lite.cli.jobflow`, the click command's own code. A job
that would ask on a terminal goes to click.

``unfurl validate [ENSEMBLE]`` (what CI runs on every push) is answered the same way as
``plan [ENSEMBLE]``: the verdict and its warnings come from :func:`validated`, shared with
the click command, so the two roads cannot say different things.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from unfurl_lite.cli.terminal import echo
from unfurl_lite.errors import STORAGE_ERRNOS, InputError, UnfurlLiteError, storage_error
from unfurl_lite.model.builtin_workflows import workflow_of_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.ensemble import Ensemble
    from unfurl_lite.plan.tasks import Plan

#: the job options answered here: name -> (the value a flag sets, or the values an
#: option takes; click's own checks refuse anything else, so it is left to click)
_FLAGS = {"-a": ("approve", True), "--approve": ("approve", True),
          "-q": ("quiet", True), "--quiet": ("quiet", True),
          "--commit": ("commit", True), "--no-commit": ("commit", False),
          "--dryrun": ("dryrun", True), "--dry-run": ("dryrun", True)}
_CHOICES = {"--dirty": ("dirty", ("auto", "ok", "abort")),
            "--jobexitcode": ("jobexitcode", ("error", "degraded", "never")),
            "--jobs": ("jobs", None), "-j": ("jobs", None)}


@dataclass
class JobLine:
    """A job command line as click's command would have read it."""

    spelling: str  # the command typed: deploy, install, ...
    ensemble: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # option name -> value given


def answers(args: list[str]) -> bool:
    """Whether click would call ``plan`` with every option at its default for ``args``, or
    a job command with the options :func:`job_line` reads, and write its text (stdout is
    not a terminal)."""
    if not args or "_UNFURL_COMPLETE" in os.environ:  # click answers shell completion
        return False
    if args[0] in ("plan", "validate"):
        if len(args) > 2 or (len(args) == 2 and (not args[1] or args[1].startswith("-"))):
            return False
        ensemble = args[1] if len(args) == 2 else None
    else:
        line = job_line(args)
        if line is None:
            return False
        ensemble = line.ensemble
    stdout = sys.stdout
    try:
        if stdout.isatty() or codecs.lookup(stdout.encoding).name != "utf-8":
            return False
    except (AttributeError, LookupError, TypeError, ValueError):
        return False
    # click.Path checks only that an existing path is readable
    return ensemble is None or not os.path.exists(ensemble) or os.access(ensemble, os.R_OK)


def job_line(args: list[str]) -> JobLine | None:
    """``args`` read as click's command for a workflow would read them, when they name a
    workflow's command that needs no parameter and only options of :data:`_FLAGS` and
    :data:`_CHOICES` with values click takes (the last of a repeated one counts, as in
    click); None for anything else, which click answers."""
    workflow = workflow_of_command(args[0]) if args[0] != "run" else None  # run: --workflow
    if workflow is None or any(p.required for p in workflow.parameters):
        return None
    line = JobLine(args[0])
    words = iter(args[1:])
    for word in words:
        if word and not word.startswith("-") and workflow.ensemble_argument \
                and line.ensemble is None:
            line.ensemble = word
            continue
        taken = _option(word, words)
        if taken is None:
            return None
        line.values[taken[0]] = taken[1]
    if not line.values.get("approve") and sys.stdin.isatty():
        return None  # a job that may ask: click's prompt
    return line


def _option(word: str, words: Iterator[str]) -> tuple[str, Any] | None:
    """The option ``word`` (its value the next of ``words`` where it takes one) as
    (name, value) as click reads it; None when it is not one of the answered options, or
    its value is one click refuses."""
    if word in _FLAGS:
        return _FLAGS[word]
    option, equals, value = word.partition("=")  # --dirty=ok; not -j=2 (click reads "=2")
    if option not in _CHOICES or (equals and not option.startswith("--")):
        return None
    if not equals:
        value = next(words, "")
    name, allowed = _CHOICES[option]
    if allowed is not None:
        return (name, value) if value in allowed else None
    # --jobs: a whole number from 1, as click.IntRange(min=1) reads it
    return (name, int(value)) if value.isascii() and value.isdigit() and int(value) else None


def run(args: list[str]) -> int | None:
    """The plan of ``args``, or its job (see :func:`answers`), written as the click command
    writes it; None, or the exit code (an error's said as the click group says it), as
    click's ``main`` returns them to a caller in Python."""
    from unfurl_lite.load import parsecache  # start-up: keeps load.parsecache off `--help`

    parsecache.enable()  # as the click group's callback does
    escape_unencodable()
    try:
        try:
            if args[0] == "validate":
                loaded, warnings = validated(args[1] if len(args) == 2 else None)
                echo(validity_text(loaded))
                for warning in warnings:
                    echo(f"warning: {warning}", err=True)
                return None
            if args[0] != "plan":
                line = job_line(args)
                assert line is not None  # answers() said so
                return run_job(line)
            _, result = plan_of(args[1] if len(args) == 2 else None, "deploy", (), (), {})
            # start-up: keeps cli.render (3 modules) off `--help`, `validate` until run() runs
            from unfurl_lite.cli.render import plan_text

            echo(plan_text(result))
            return None
        except OSError as exc:  # a full disk or a read-only file anywhere: no traceback
            if exc.errno not in STORAGE_ERRNOS:
                raise
            raise storage_error(exc) from None
    except UnfurlLiteError as exc:
        echo(error_text(exc), err=True)
        return exc.exit_code
    except (EOFError, KeyboardInterrupt):
        echo("", err=True)
        echo("Aborted.", err=True)
        return 1
    except OSError as exc:  # a reader that went away (`| head`): 1, as click
        if exc.errno != errno.EPIPE:
            raise
        return 1


def run_job(line: JobLine) -> int:
    """The job of ``line`` run, shown and exited as the click command does it."""
    # start-up: keeps cli.jobflow (the job's machinery) off `--help`, `plan` until run_job()
    from unfurl_lite.cli.jobflow import JobChoice, execute

    workflow = workflow_of_command(line.spelling)
    assert workflow is not None  # job_line() found it
    job = JobChoice.take(job_values(line))
    level = -1 if job.quiet else 0
    return execute(workflow.name, line.ensemble, job_parameters(line), job, level,
                           tty=False)


def job_parameters(line: JobLine) -> dict[str, Any]:
    """The workflow's parameters click's command gives for ``line``: what the command's
    spelling implies (Cloudify's ``install``), and no instance named."""
    workflow = workflow_of_command(line.spelling)
    assert workflow is not None  # job_line() found it
    given: dict[str, Any] = dict(workflow.commands.get(line.spelling) or {})
    if workflow.parameter("instance_names"):
        given["instance_names"] = ()
    return given


def job_values(line: JobLine) -> dict[str, Any]:
    """The values click's command hands over for ``line``: every job option at its
    default (see :func:`unfurl_lite.cli.commands.common.job_options`) but those given."""
    return {**JOB_DEFAULTS, **line.values}


#: what click's job command gives for each job option not typed
JOB_DEFAULTS: dict[str, Any] = {
    "dryrun": False, "approve": False, "commit": True, "message": None, "dirty": "auto",
    "jobs": None, "instances": (), "jobexitcode": "error", "queue": False, "retries": 0,
    "env_passthrough": False, "allow_outside_paths": False, "executor": None,
    "broker": None, "as_json": False, "verbose": 0, "quiet": False, "output": None,
    "variables": (), "query": None,
}


def plan_of(ensemble: str | None, workflow: str, instances: tuple[str, ...],
            variables: tuple[tuple[str, str], ...], given: dict[str, Any]
            ) -> tuple[Ensemble, Plan]:
    """The ensemble loaded (with the job's ``--var`` inputs) and the workflow's plan: what
    ``unfurl plan`` shows, however it was asked."""
    # start-up: keeps api, load.loader (15 modules) off `--help` until plan_of() runs
    from unfurl_lite import api
    from unfurl_lite.load.collector import loads_frozen
    from unfurl_lite.load.loader import load_ensemble
    from unfurl_lite.model.ensemble import with_inputs

    inputs: dict[str, Any] = {}
    if variables:
        # start-up: only when plan_of() runs with --var (its module is click's)
        from unfurl_lite.cli.commands.unfurl_options import job_inputs

        inputs = job_inputs(variables)
    options = api.PlanOptions(instance_names=instances, **given)
    custom = workflow not in ("deploy", "undeploy", "check", "discover")
    with loads_frozen():
        loaded = with_inputs(load_ensemble(ensemble, given=list(inputs)), inputs)
        return loaded, api.plan(loaded, workflow, options, custom=custom)


def validated(ensemble: str | None) -> tuple[Ensemble, list[str]]:
    """The ensemble validated (its problems raised as one error), and the warnings about
    templates that are missing requirements: what ``unfurl validate`` says, however it was
    asked."""
    # start-up: keeps api (25 modules) off `--help` until validated() runs
    from unfurl_lite import api
    from unfurl_lite.load.collector import loads_frozen

    with loads_frozen():
        loaded = api.validate(ensemble)
    warnings = [f"node template {t.name!r} is missing requirements: "
                f"{', '.join(t.missing_requirements)}: " + (
                    "jobs leave it out (its \"conditional\" directive)"
                    if "conditional" in t.directives
                    else "a job that runs its operations cannot be created")
                for t in loaded.topology.templates.values() if t.missing_requirements]
    return loaded, warnings


def validity_text(loaded: Ensemble) -> str:
    """``validate``'s verdict for a valid ensemble, as a person reads it."""
    return (f"{loaded.path}: valid ({len(loaded.topology.templates)} templates, "
            f"{len(loaded.instances)} recorded instances)")


def escape_unencodable() -> None:
    """A value that is not valid text (a lone surrogate an operation returned) is printed
    escaped (``\\ud800``), as the records hold it, instead of failing the command."""

    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def error_text(exc: Exception) -> str:
    """The error for a person, wrapped at spaces to stderr's width (its hint too)."""
    # start-up: keeps cli.tables (1 module) off `--help`, `plan`, `validate` until error_text() runs
    from unfurl_lite.cli.tables import prose, stream_width

    if isinstance(exc, InputError):
        text = exc.format()
    elif isinstance(exc, UnfurlLiteError):
        text = f"error: {exc.format()}"
    else:
        text = f"error: {exc}"
    return prose(text, stream_width(sys.stderr))
