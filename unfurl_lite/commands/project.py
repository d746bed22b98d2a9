"""Project commands that run no job: init, validate, plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from unfurl_lite.commands.common import (
    ENSEMBLE_ARG,
    complete_instances,
    echo_json,
    is_terminal,
    show,
)

EXAMPLE_ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
        # a database the app needs; each operation is a shell command
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create: echo "creating {{ SELF.name }}"
                delete: echo "deleting {{ SELF.name }}"
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
          interfaces:
            Standard:
              operations:
                configure:
                  implementation: {className: Shell}
                  inputs:
                    command: echo "configuring {{ SELF.name }}"
                delete: echo "deleting {{ SELF.name }}"
"""

GITIGNORE = "jobs/*.log\ntosca_repositories\n.unfurl-lite.lock\n"


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False), default=".")
@click.option("--from", "source", type=click.Path(exists=True, file_okay=False),
              help="Copy this project directory (e.g. examples/three-tier) instead of the "
                   "built-in example.")
@click.option("--json", "as_json", is_flag=True, help="Print what was created as JSON.")
def init(directory: str, source: str | None, as_json: bool) -> None:
    """Create DIRECTORY (default: here) as a git repo with an example ensemble."""
    import shutil

    from unfurl_lite.errors import UnfurlLiteError
    from unfurl_lite.repo import find_repo, init_repo

    root = Path(directory)
    ensemble = root / "ensemble.yaml"
    if ensemble.exists():
        raise UnfurlLiteError(f"{ensemble} already exists", hint="choose an empty directory")
    if source and not (Path(source) / "ensemble.yaml").exists():
        raise UnfurlLiteError(f"{source} has no ensemble.yaml", hint="name an example directory")
    if source:
        _refuse_links_out(Path(source))
    root.mkdir(parents=True, exist_ok=True)
    # always a repository of its own, even inside another checkout
    existing = find_repo(root)
    repo = existing if existing and existing.root == root.resolve() else init_repo(root)
    if source:
        shutil.copytree(source, root, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".git"))
    else:
        ensemble.write_text(EXAMPLE_ENSEMBLE)
    gitignore = root / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(GITIGNORE)
    problem = None
    try:
        added = [p for p in root.rglob("*")
                 if (p.is_file() or p.is_symlink()) and ".git" not in p.parts]
        repo.commit(added, "Create ensemble")
        committed = "and committed "
    except UnfurlLiteError as exc:
        problem = exc.message
        committed = f"(not committed: {exc.message}) "
    if as_json:
        echo_json({"ensemble": str(ensemble), "repository": str(repo.root),
                   "committed": problem is None, "problem": problem, "from": source})
        return
    click.echo(f"Created {ensemble} {committed}in a git repository at {repo.root}.")
    click.echo(f"Next: unfurl plan {root}   then: unfurl deploy --approve {root}")


def _refuse_links_out(source: Path) -> None:
    """Symlinks are copied as symlinks; one that leads outside the source directory would
    put (or point the new repository at) files that are not the project's, so it is
    refused before anything is copied."""
    import os

    from unfurl_lite.errors import UnfurlLiteError

    base = source.resolve()
    for directory, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = Path(directory) / name
            if not path.is_symlink():
                continue
            target = path.resolve()
            if not target.is_relative_to(base):
                raise UnfurlLiteError(
                    f"{path} is a symlink to {os.readlink(path)}, outside {source}: "
                    "nothing was copied",
                    hint="replace the link with the file it points to, or remove it",
                )


@click.command()
@ENSEMBLE_ARG
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def validate(ensemble: str | None, as_json: bool) -> None:
    """Check ENSEMBLE's syntax, schema and references; exit 1 with every problem found."""
    from unfurl_lite.loader import load_ensemble

    loaded = load_ensemble(ensemble)
    if as_json:
        echo_json(
            {
                "valid": True,
                "ensemble": str(loaded.path),
                "templates": len(loaded.topology.templates),
                "instances": len(loaded.instances),
            }
        )
    else:
        click.echo(
            f"{loaded.path}: valid ({len(loaded.topology.templates)} templates, "
            f"{len(loaded.instances)} recorded instances)"
        )


@click.command()
@ENSEMBLE_ARG
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
@click.option("--force", is_flag=True, help="Plan as deploy --force would.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(
    ensemble: str | None, workflow: str, instances: tuple[str, ...], force: bool, as_json: bool
) -> None:
    """Show the tasks a workflow would run, in order, with the reason for each; run nothing."""
    from unfurl_lite import render
    from unfurl_lite.loader import load_ensemble
    from unfurl_lite.plan import plan_workflow

    loaded = load_ensemble(ensemble)
    options: dict[str, Any] = {"instance_names": instances}
    if workflow == "deploy":
        options["force"] = force
    if workflow not in ("deploy", "undeploy", "check", "discover"):
        from unfurl_lite import tosca_workflows

        tosca_workflows.require(loaded.spec, workflow)
    result = plan_workflow(loaded, workflow, **options)
    if as_json:
        echo_json(render.plan_json(result))
    elif is_terminal():
        show(render.plan_tree(result))
    else:
        click.echo(render.plan_text(result))


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
    from unfurl_lite import completion as completing

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
    from click.shell_completion import get_completion_class

    from unfurl_lite.cli import cli

    shell = shell or "bash"
    complete_class = get_completion_class(shell)
    assert complete_class is not None
    script = complete_class(cli, {}, "unfurl", "_UNFURL_COMPLETE").source()
    if as_json:
        echo_json({"shell": shell, "script": script})
    else:
        click.echo(script)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the version as JSON.")
def version(as_json: bool) -> None:
    """Print the version and the project's git commit (Unfurl's `unfurl version`)."""
    from unfurl_lite import __version__
    from unfurl_lite.cli import version_text

    if as_json:
        text = version_text()
        commit = text.partition("(commit ")[2].rstrip(")") or None
        echo_json({"version": __version__, "commit": commit})
    else:
        click.echo(version_text())
