"""Unfurl 1.2.0's job options that are not a workflow's parameters, spelled as Unfurl
spells them.

``--var NAME VALUE``, ``--query`` and ``--output`` belong to every job (and to ``plan``).
An option Unfurl has and unfurl-lite does not build is still known here, so that using it
is refused by name (exit 1), never mistaken for a typo (click's "No such option", exit 2)
and never accepted and ignored. The deploy options (``--template``, ``--check``,
``--repair``...) are the deploy workflow's parameters, declared with it in
:mod:`unfurl_lite.model.builtin_workflows`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from unfurl_lite.errors import OptionRefused

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: Unfurl's options that unfurl-lite refuses: option -> (takes a value, why, what to do)
REFUSED: dict[str, tuple[bool, str, str]] = {
    "--push": (False, "pushing the job's commit is not supported",
               "run `git push` after the job"),
    "--starttime": (True, "setting the job's start time is not supported",
                    "changeIds always come from the clock"),
    "--use-environment": (True, "Unfurl's environments (unfurl.yaml projects) are not "
                          "supported", "put the inputs in the ensemble's spec.inputs or "
                          "pass them with --var input_NAME VALUE"),
    "--trace": (True, "tracing a --query is not supported", "run the query without it"),
    "--save": (False, "saving an ad hoc command in the job history is not supported",
               "every `unfurl run` job is recorded"),
    "--host": (True, "running a command on a host through Ansible is not supported",
               "run it on this machine: unfurl run -- COMMAND"),
    "--module": (True, "running an Ansible module is not supported",
                 "run a shell command: unfurl run -- COMMAND"),
    # check's and discover's filters of Unfurl's (deploy builds its own, as parameters)
    "--force": (False, "forcing a check or a discover is not supported: both run the "
                "operation on every selected instance that has one",
                "drop --force; limit the job with --template or --instance"),
    "--skip-new": (False, "a check that leaves out instances no job created yet is not "
                   "supported", "limit the check with --template or --instance"),
    "--change-detection": (True, "--change-detection is not supported by check (a check "
                           "reconfigures nothing)", "drop it"),
    "--template": (True, "--template is not supported by this command",
                   "select the template's instances with --node-ids TEMPLATE"),
    # `unfurl`'s own options, before the command
    "--home": (True, "Unfurl's home project (.unfurl_home) is not supported",
               "drop --home (or give --home '', Unfurl's spelling of no home)"),
    "--runtime": (True, "Unfurl's runtimes (a virtualenv per project) are not supported",
                  "run unfurl-lite from the Python environment you want"),
    "--version-check": (True, "checking a runtime's Unfurl version is not supported",
                        "drop --version-check"),
    "--tmp": (True, "choosing the directory of temporary files this way is not supported",
              "set TMPDIR"),
    "--loglevel": (True, "Unfurl's log levels are not supported",
                   "use -v (more output) or -q (less)"),
    "--logfile": (True, "writing the log to a file is not supported",
                  "redirect the output: unfurl ... 2>&1 | tee FILE"),
}

#: ``unfurl``'s own options that unfurl-lite refuses (before the command)
REFUSED_GLOBALLY = ("--home", "--runtime", "--version-check", "--tmp", "--loglevel",
                    "--logfile")
#: ``unfurl``'s own flags that turn off what unfurl-lite never does: given, they change
#: nothing, as they would change nothing in Unfurl without a runtime, upstream
#: repositories or a version to check
NOTHING_TO_TURN_OFF = {
    "--no-runtime": "Ignore runtime settings (unfurl-lite has none).",
    "--skip-upstream-check": "Skip pulling upstream repositories (unfurl-lite pulls none).",
    "--no-version-check": "Skip the runtime's version check (unfurl-lite makes none).",
}

#: which refused options each command of Unfurl's takes
REFUSED_BY_COMMAND: dict[str, tuple[str, ...]] = {
    "deploy": ("--push", "--starttime", "--use-environment", "--trace"),
    "undeploy": ("--push", "--starttime", "--use-environment", "--trace"),
    "check": ("--push", "--starttime", "--use-environment", "--trace", "--force",
              "--skip-new", "--change-detection"),
    "discover": ("--push", "--starttime", "--use-environment", "--trace", "--force"),
    "run": ("--push", "--starttime", "--use-environment", "--trace", "--save", "--host",
            "--module"),
    "plan": ("--starttime", "--use-environment", "--trace"),
    "stop": ("--push", "--starttime", "--use-environment", "--trace", "--force", "--template"),
}
#: where a command refuses an option for its own reason
WHY_BY_COMMAND: dict[tuple[str, str], tuple[str, str]] = {
    ("stop", "--force"): ("forcing a stop is not supported: stop runs the stop operation of "
                          "every selected instance", "drop --force; choose instances with "
                          "--instance or --node-ids"),
}


def _refuse(name: str, command: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    why, hint = WHY_BY_COMMAND.get((command, name), REFUSED[name][1:])

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value in (None, False, ()) or ctx.resilient_parsing:
            return
        if name == "--home" and value == "":  # no home: what unfurl-lite always has
            return
        raise OptionRefused(f"Unfurl's option {name} is not supported by unfurl-lite: {why}",
                            hint=hint)

    return callback


def refused_options(command: str) -> Decorator:
    """Hidden options that refuse Unfurl's options the command does not build (none for
    a command Unfurl does not have)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name in REFUSED_BY_COMMAND.get(command, ()):
            takes_value = REFUSED[name][0]
            func = click.option(
                name, hidden=True, expose_value=False, callback=_refuse(name, command),
                is_flag=not takes_value, default=None if takes_value else False,
            )(func)
        return func

    return decorate


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--var``, ``--query`` and ``--output``: every job command's, as Unfurl's."""
    func = click.option(
        "--output", "output", type=click.Choice(["text", "json", "none"]), default=None,
        help="How to print the job's summary: text (the default), json (as --json), none.",
    )(func)
    func = click.option(
        "--query", metavar="EXPRESSION",
        help="Evaluate this expression when the job is done and print its result.",
    )(func)
    return click.option(
        "--var", "variables", nargs=2, multiple=True, metavar="NAME VALUE",
        help="A job variable (repeatable): input_NAME VALUE sets the topology input NAME "
             "(VALUE read as YAML) for this job.",
    )(func)


def job_inputs(variables: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The topology inputs ``--var input_NAME VALUE`` sets: VALUE read as YAML, as if it
    were written in the ensemble. Unfurl uses other variables only for its projects'
    settings, which unfurl-lite has none of: they are refused by name."""
    from unfurl_lite.load import yamlio  # start-up: keeps load.yamlio (2 modules) off `--help`

    inputs: dict[str, Any] = {}
    for name, value in variables:
        if not name.startswith("input_") or name == "input_":
            raise OptionRefused(
                f"--var {name}: only input_NAME variables are supported by unfurl-lite "
                "(Unfurl's other job variables configure its projects and environments)",
                hint="set a topology input with --var input_NAME VALUE",
            )
        inputs[name[len("input_"):]] = yamlio.to_plain(yamlio.parse(value, f"--var {name}"))
    return inputs


def global_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``unfurl``'s own options, Unfurl's spellings: the flags that turn off what
    unfurl-lite never does are accepted (they change nothing); the others are refused by
    name. Hidden from ``--help``: they are Unfurl's, not unfurl-lite's."""
    for name, help_text in NOTHING_TO_TURN_OFF.items():
        func = click.option(name, is_flag=True, hidden=True, expose_value=False,
                            help=help_text)(func)
    for name in REFUSED_GLOBALLY:
        func = click.option(name, hidden=True, expose_value=False,
                            callback=_refuse(name, "unfurl"), default=None)(func)
    return func
