"""The ``unfurl`` command: a click group whose commands load only when called.

Each command lives in a module of ``unfurl_lite.cli.commands``; this module knows their names
so that ``--version`` and ``--help`` import nothing heavy. Every ``UnfurlLiteError``
becomes one clear message and its exit code (1); a usage error (a misspelled command or
option) exits 2, as click and Unfurl do; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from unfurl_lite.cli.commands.unfurl_options import global_options
from unfurl_lite.cli.quick import error_text, escape_unencodable
from unfurl_lite.cli.version import version_text
from unfurl_lite.errors import STORAGE_ERRNOS, InputError, UnfurlLiteError, storage_error
from unfurl_lite.model.builtin_workflows import WORKFLOWS


def _summary(name: str, spelling: str, summary: str) -> str:
    """A command's line in ``unfurl --help``; ``install`` and ``uninstall`` are
    Cloudify's names for Unfurl's workflows."""
    if spelling.replace("-", "_") == name:
        return summary
    return f"Cloudify's name for {name}."

#: name: (module in cli/commands:attribute, one-line help --help shows without importing it);
#: the workflows' commands come from their declarations (model.builtin_workflows)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("project:init", "Create a new ensemble project (a git repo)."),
    "validate": ("project:validate", "Check an ensemble for errors."),
    "plan": ("project:plan", "Show what a workflow would do, run nothing."),
    "completion": (
        "project:completion",
        "Print a shell completion script (bash, zsh, fish).",
    ),
    "status": ("inspect:status", "Show instances, their status and drift."),
    "history": ("inspect:history", "List jobs, newest first, with commits."),
    "show": ("inspect:show_change", "Show one job or task by changeId."),
    "diff": ("inspect:diff", "Show what changed between two jobs."),
    "graph": ("graph:graph", "Print the topology as a graph (DOT, Mermaid or SVG)."),
    "resume": (
        "control:resume",
        "Continue the last failed, cancelled or killed job.",
    ),
    "export": (
        "export:export",
        "Print the expanded ensemble (includes and directives applied).",
    ),
    "serve": ("serve:serve", "Serve a read-only dashboard of the project in a browser."),
    "version": ("project:version", "Print the version (same as --version)."),
    "cancel": ("control:cancel", "Cancel the job running on an ensemble."),
    "worker": (
        "distributed:worker",
        "Start a Celery worker that runs this project's operations.",
    ),
    "agents": (
        "distributed:agents",
        "List agent queues and the workers serving them; --start the missing ones.",
    ),
    **{spelling: (f"jobs:{spelling}", _summary(workflow.name, spelling, workflow.summary))
       for workflow in WORKFLOWS for spelling in workflow.commands},
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        target, _ = COMMANDS[cmd_name]
        module_name, _, attribute = target.partition(":")
        module = importlib.import_module(f"unfurl_lite.cli.commands.{module_name}")
        if module_name == "jobs":  # a workflow's command, made from its declaration
            made: click.Command = module.command_for(attribute)
            return made
        command: click.Command = getattr(module, attribute)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["unfurl.json"] = wants_json(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:

        try:
            try:
                return super().invoke(ctx)
            except OSError as exc:  # a full disk or a read-only file anywhere: no traceback

                if exc.errno not in STORAGE_ERRNOS:
                    raise
                raise storage_error(exc) from None
        except UnfurlLiteError as exc:
            if ctx.meta.get("unfurl.json"):
                click.echo(_error_json(exc))
            click.echo(error_text(exc), err=True)
            ctx.exit(exc.exit_code)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib  # start-up: a misspelled command only: not on every command's imports

            close = difflib.get_close_matches(name, list(COMMANDS), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise click.UsageError(f"No such command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)


def _completion(install: bool) -> Callable[[click.Context, click.Parameter, bool], None]:
    """``--install-completion``/``--show-completion``, the spelling typer made familiar,
    as shortcuts for ``unfurl completion [--install]`` with the shell from $SHELL."""

    def callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        # start-up: keeps cli.completion (1 module) off `--help`, `validate` until callback() runs
        from unfurl_lite.cli.completion import detect_shell

        completion = ctx.command.get_command(ctx, "completion") if isinstance(
            ctx.command, click.Group) else None
        assert completion is not None  # the command table names it
        ctx.invoke(completion, shell=detect_shell(), install=install, as_json=False)
        ctx.exit()

    return callback


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(message="%(version)s", version=version_text())
@click.option("--install-completion", is_flag=True, expose_value=False, is_eager=True,
              callback=_completion(install=True),
              help="Install shell completion for your shell ($SHELL), then exit.")
@click.option("--show-completion", is_flag=True, expose_value=False, is_eager=True,
              callback=_completion(install=False),
              help="Print the completion script for your shell, then exit.")
@click.option("-v", "--verbose", count=True, help="More output (repeat for more).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors and the final result.")
@click.option("--no-color", is_flag=True, help="No colours or styles, even on a terminal.")
@global_options
@click.pass_context
def cli(ctx: click.Context, verbose: int, quiet: bool, no_color: bool) -> None:
    """unfurl-lite: plan and run deployment jobs on a git-backed TOSCA ensemble."""
    from unfurl_lite.load import parsecache  # start-up: keeps load.parsecache off `--help`

    parsecache.enable()  # the command may use the user's cache; the library does not unasked
    escape_unencodable()
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = -1 if quiet else verbose
    if no_color:
        # start-up: keeps cli.terminal (1 module) off `--help` until cli() runs
        from unfurl_lite.cli.terminal import disable_colour

        disable_colour()


def help_text() -> str:
    """What ``unfurl --help`` prints, as click's help option prints it."""
    ctx = click.Context(cli, info_name="unfurl", **cli.context_settings)
    return ctx.get_help() + "\n"


def main(argv: list[str] | None = None) -> Any:

    try:
        return cli.main(args=argv, prog_name="unfurl", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        if wants_json(sys.argv[1:] if argv is None else argv):
            error = {"error": exc.format_message(), "hint": None, "exitCode": exc.exit_code}
            click.echo(json.dumps(error, indent=2))
        exc.show()
        sys.exit(exc.exit_code)
    except UnfurlLiteError as exc:
        if wants_json(sys.argv[1:] if argv is None else argv):
            click.echo(_error_json(exc))
        click.echo(error_text(exc), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)


def wants_json(args: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it belongs to a command)."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _error_json(exc: Exception) -> str:
    """An error as the one JSON document a ``--json`` caller parses from stdout."""

    data: dict[str, Any] = {"error": str(exc), "exitCode": 1}
    if isinstance(exc, UnfurlLiteError):
        data.update(error=exc.message, hint=exc.hint, exitCode=exc.exit_code)
    if isinstance(exc, InputError):
        data["problems"] = [
            {"message": p.message, "file": p.file, "line": p.line, "path": p.path, "hint": p.hint}
            for p in exc.problems
        ]
    return json.dumps(data, indent=2)
