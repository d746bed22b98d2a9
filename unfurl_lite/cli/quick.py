"""``unfurl plan [ENSEMBLE]`` answered without click, as click would answer it.

A plan is the first look at an ensemble, and what scripts run before each job. Importing
click and building the commands' options (click brings ``inspect``, ``uuid``, ``platform``,
``gettext`` and ``locale``, and writes every option's help) was a fifth of a cold plan's
time beyond the interpreter's start. A command line that names nothing but ``plan`` and its
ensemble leaves every option at its default, so this module makes the call the click
command makes (:func:`plan_of`, shared with it) and writes what ``click.echo`` writes.
Every other command line (an option, ``--``, a terminal on stdout, which gets rich's tree,
shell completion, an unreadable path) goes to click, unchanged. Errors are said as the
click group says them (:func:`error_text`), with the same exit codes.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import STORAGE_ERRNOS, InputError, UnfurlLiteError, storage_error

if TYPE_CHECKING:
    from unfurl_lite.model.ensemble import Ensemble
    from unfurl_lite.plan.tasks import Plan

#: what click.echo removes from text written to a stream that is not a terminal
_STYLE = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def answers(args: list[str]) -> bool:
    """Whether click would call ``plan`` with every option at its default for ``args``,
    and write its text (stdout is not a terminal)."""
    if not args or args[0] != "plan" or len(args) > 2:
        return False
    if len(args) == 2 and (not args[1] or args[1].startswith("-")):
        return False
    if "_UNFURL_COMPLETE" in os.environ:  # click answers shell completion
        return False
    stdout = sys.stdout
    try:
        if stdout.isatty() or codecs.lookup(stdout.encoding).name != "utf-8":
            return False
    except (AttributeError, LookupError, TypeError, ValueError):
        return False
    # click.Path checks only that an existing path is readable
    return len(args) == 1 or not os.path.exists(args[1]) or os.access(args[1], os.R_OK)


def run(args: list[str]) -> int | None:
    """The plan of ``args`` (see :func:`answers`) written as the click command writes it;
    None, or the exit code of an error said as the click group says it (as click's
    ``main`` returns them to a caller in Python)."""
    from unfurl_lite.load import parsecache  # start-up: keeps load.parsecache off `--help`

    parsecache.enable()  # as the click group's callback does
    escape_unencodable()
    try:
        try:
            _, result = plan_of(args[1] if len(args) == 2 else None, "deploy", (), (), {})
            # start-up: keeps cli.render (3 modules) off `--help`, `validate` until run() runs
            from unfurl_lite.cli.render import plan_text

            _echo(sys.stdout, plan_text(result))
            return None
        except OSError as exc:  # a full disk or a read-only file anywhere: no traceback
            if exc.errno not in STORAGE_ERRNOS:
                raise
            raise storage_error(exc) from None
    except UnfurlLiteError as exc:
        _echo(sys.stderr, error_text(exc))
        return exc.exit_code
    except (EOFError, KeyboardInterrupt):
        _echo(sys.stderr, "")
        _echo(sys.stderr, "Aborted.")
        return 1
    except OSError as exc:  # a reader that went away (`| head`): 1, as click
        if exc.errno != errno.EPIPE:
            raise
        return 1


def plan_of(ensemble: str | None, workflow: str, instances: tuple[str, ...],
            variables: tuple[tuple[str, str], ...], given: dict[str, Any]
            ) -> tuple[Ensemble, Plan]:
    """The ensemble loaded (with the job's ``--var`` inputs) and the workflow's plan: what
    ``unfurl plan`` shows, however it was asked."""
    # start-up: keeps api, load.loader (15 modules) off `--help` until plan_of() runs
    from unfurl_lite import api
    from unfurl_lite.load.loader import load_ensemble
    from unfurl_lite.load.plainyaml import loads_frozen
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


def _echo(stream: Any, text: str) -> None:
    """As ``click.echo`` writes a line to a stream that is not a terminal."""
    if not stream.isatty():
        text = _STYLE.sub("", text)
    stream.write(text + "\n")
    stream.flush()


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
