"""Project commands that run no job: init, validate, plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from unfurl_lite import api
from unfurl_lite.cli.commands.common import (
    complete_instances,
    echo_json,
    ensemble_option,
    is_terminal,
    show,
)
from unfurl_lite.cli.commands.parameters import GIVEN, click_parameter
from unfurl_lite.cli.commands.unfurl_options import output_options, refused_options
from unfurl_lite.cli.quick import plan_of, validated, validity_text
from unfurl_lite.model.builtin_workflows import BY_NAME

#: the options plan takes as the job commands do: deploy's and undeploy's, each once
_PLANNED = {p.name: p for w in ("undeploy", "deploy") for p in BY_NAME[w].parameters
            if p.flag and p.cloudify is False}
PLANNED = tuple(_PLANNED)


def planned_options(func: Any) -> Any:
    """Deploy's and undeploy's own options, spelled as those commands spell them."""
    for parameter in reversed(_PLANNED.values()):
        made = click_parameter(parameter)
        if made is not None:
            func.__click_params__ = [*getattr(func, "__click_params__", []), made]
    return func


def _list_examples(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for name, description in api.examples():
        click.echo(f"{name:<16}{description}")
    ctx.exit()


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False), default=".")
@click.option("--from", "source", metavar="EXAMPLE|PATH",
              help="Start from a bundled example by name (three-tier, secrets, ...: see "
                   "--list-examples) or copy a project directory (a PATH with an "
                   "ensemble.yaml) instead of the built-in example.")
@click.option("--list-examples", is_flag=True, expose_value=False, is_eager=True,
              callback=_list_examples, help="List the bundled examples, then exit.")
@click.option("--json", "as_json", is_flag=True, help="Print what was created as JSON.")
def init(directory: str, source: str | None, as_json: bool) -> None:
    """Create DIRECTORY (default: here) with an example ensemble, committed to git.

    Inside an existing git repository the project is added to that repository (unless the
    repository ignores DIRECTORY); elsewhere DIRECTORY becomes a new one.
    """
    created = api.init(directory, source)
    if as_json:
        echo_json(created.as_json())
        return
    committed = ("and committed " if created.problem is None
                 else f"(not committed: {created.problem}) ")
    where = "a new git repository" if created.new_repository else "the git repository"
    click.echo(f"Created {created.ensemble} {committed}in {where} at {created.repository}.")
    root = Path(directory)
    click.echo(f"Next: unfurl plan {root}   then: unfurl deploy --approve {root}")


@click.command()
@ensemble_option()
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def validate(ensemble: str | None, as_json: bool) -> None:
    """Check ENSEMBLE's syntax, schema and references; exit 1 with every problem found."""
    loaded, warnings = validated(ensemble)
    if as_json:
        echo_json(
            {
                "valid": True,
                "ensemble": str(loaded.path),
                "templates": len(loaded.topology.templates),
                "instances": len(loaded.instances),
                "warnings": warnings,
            }
        )
    else:
        click.echo(validity_text(loaded))
        for warning in warnings:
            click.echo(f"warning: {warning}", err=True)


@click.command()
@ensemble_option()
@click.option(
    "--workflow",
    "-w",
    default="deploy",
    show_default=True,
    metavar="NAME",
    help="The workflow to plan: deploy, undeploy, check, discover, or a custom workflow "
    "from the topology's `workflows:`.",
)
@click.option("--instance", "-i", "instances", multiple=True, shell_complete=complete_instances,
              help="Limit to this instance.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("-a", "--approve", is_flag=True, expose_value=False,
              help="Accepted and ignored (plan never asks), so scripts can pass the same "
                   "flags to every command.")
@click.option("-v", "--verbose", count=True, expose_value=False,
              help="Accepted as after any command; the plan is the result.")
@click.option("-q", "--quiet", is_flag=True, expose_value=False,
              help="Accepted as after any command; the plan is the result, so it is shown.")
@planned_options
@output_options
@refused_options("plan")
@click.pass_context
def plan(ctx: click.Context, ensemble: str | None, workflow: str, instances: tuple[str, ...],
         as_json: bool, variables: tuple[tuple[str, str], ...], query: str | None,
         output: str | None, **planned: Any) -> None:
    """Show the tasks a workflow would run, in order, with the reason for each; run nothing.
    The job commands' options (--force, --template, --check, --repair...) plan as that job
    would; one the workflow does not take is refused, naming those it does."""
    # start-up: keeps cli.render (2 modules) off `validate` until plan() runs
    from unfurl_lite.cli import render

    given = {name: planned[name] for name in PLANNED
             if ctx.get_parameter_source(name) in GIVEN}
    loaded, result = plan_of(ensemble, workflow, instances, variables, given)
    found = None
    if query:  # the expression machinery only when asked: a plain plan does not import it
        # start-up: keeps expressions.outputs (7 modules) off `validate` until plan() runs
        from unfurl_lite.expressions.outputs import evaluate_query

        found = evaluate_query(loaded.topology, loaded.instances, query, set(),
                               loaded.project_root)
    if as_json or output == "json":
        document = render.plan_json(result)
        if query:
            document["query"], document["result"] = query, found
        echo_json(document)
        return
    if output != "none":
        if is_terminal():
            show(render.plan_tree(result))
        else:
            click.echo(render.plan_text(result))
    if query:
        click.echo(render.query_text(query, found))


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]), required=False)
@click.option("--install", is_flag=True,
              help="Add completion to your shell's start-up file (~/.bashrc, ~/.zshrc, or "
                   "~/.config/fish/completions/unfurl.fish); SHELL defaults to $SHELL.")
@click.option("--json", "as_json", is_flag=True, help="Print the script or what --install did "
                                                      "as JSON.")
def completion(shell: str | None, install: bool, as_json: bool) -> None:
    """Print the shell completion script for SHELL (default: bash), or --install it.

    By hand: eval "$(unfurl completion bash)" in ~/.bashrc.
    """
    # start-up: keeps cli.completion (1 module) off `validate` until completion() runs
    from unfurl_lite.cli import completion as completing

    if install:
        done = completing.install(shell or completing.detect_shell())
        if as_json:
            echo_json(done.as_json())
        elif done.changed:
            click.echo(f"Added {done.shell} completion to {done.path}: "
                       f"{completing.source_line(done.shell)}")
            click.echo("It takes effect in new shells (or: source the file now).")
        else:
            click.echo(f"{done.shell} completion is already installed in {done.path}.")
        return
    # start-up: keeps click.shell_completion off `validate` until completion() runs
    from click.shell_completion import get_completion_class

    shell = shell or "bash"
    complete_class = get_completion_class(shell)
    assert complete_class is not None
    root = click.get_current_context().find_root().command  # the unfurl group itself
    script = complete_class(root, {}, "unfurl", "_UNFURL_COMPLETE").source()
    if as_json:
        echo_json({"shell": shell, "script": script})
    else:
        click.echo(script)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the version as JSON.")
def version(as_json: bool) -> None:
    """Print the version and the project's git commit (Unfurl's `unfurl version`)."""
    # start-up: __version__ reads the package's metadata when first asked
    from unfurl_lite import __version__
    from unfurl_lite.cli.version import version_text

    if as_json:
        text = version_text()
        commit = text.partition("(commit ")[2].rstrip(")") or None
        echo_json({"version": __version__, "commit": commit})
    else:
        click.echo(version_text())
