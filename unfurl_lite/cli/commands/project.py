"""Project commands that run no job: init, validate, plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from unfurl_lite.cli.commands.common import (
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

#: What every project's .gitignore holds (the lock file of a running job among them).
GITIGNORE_LINES = ("jobs/*.log", "tosca_repositories", ".unfurl-lite.lock")


def _list_examples(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from unfurl_lite.load import bundled

    for name in bundled.example_names():
        click.echo(f"{name:<16}{bundled.describe(name)}")
    ctx.exit()


def _ensure_ignored(gitignore: Path) -> bool:
    """Add the lines a project needs to its .gitignore (a copied one too); True if changed."""
    text = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in GITIGNORE_LINES if line not in present]
    if not missing:
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    gitignore.write_text(text + "".join(f"{line}\n" for line in missing), encoding="utf-8")
    return True


def _existing_ancestor(path: Path) -> Path:
    path = path.resolve()
    while not path.exists():
        path = path.parent
    return path


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
    import shutil

    from unfurl_lite.errors import UnfurlLiteError
    from unfurl_lite.load import bundled
    from unfurl_lite.load.gitrepo import find_repo, identity_problem, init_repo, is_ignored

    root = Path(directory)
    ensemble = root / "ensemble.yaml"
    if ensemble.exists():
        raise UnfurlLiteError(f"{ensemble} already exists", hint="choose an empty directory")
    origin = bundled.resolve_source(source) if source else None
    if source and origin is None:
        names = ", ".join(bundled.example_names())
        raise UnfurlLiteError(
            f"--from {source}: neither a bundled example nor a directory with an ensemble.yaml",
            hint=f"bundled examples: {names} (unfurl init --list-examples)",
        )
    if origin is not None:
        _refuse_links_out(origin)
    existing = find_repo(_existing_ancestor(root))
    use_existing = existing is not None and (
        existing.root == root.resolve() or not is_ignored(existing, root)
    )
    problem = identity_problem(existing.root if existing and use_existing else Path("/"))
    if problem is not None:
        raise problem
    root.mkdir(parents=True, exist_ok=True)
    repo = existing if existing is not None and use_existing else init_repo(root)
    written: list[Path] = []
    if origin is not None:
        skip = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")
        shutil.copytree(origin, root, symlinks=True, dirs_exist_ok=True, ignore=skip)
        written += [root / p for p in _copied_files(origin)]
    else:
        ensemble.write_text(EXAMPLE_ENSEMBLE)
        written.append(ensemble)
    gitignore = root / ".gitignore"
    if _ensure_ignored(gitignore) and gitignore not in written:
        written.append(gitignore)
    problem_text = None
    try:
        repo.commit(written, "Create ensemble")
        committed = "and committed "
    except UnfurlLiteError as exc:
        problem_text = exc.message
        committed = f"(not committed: {exc.message}) "
    if as_json:
        echo_json({"ensemble": str(ensemble), "repository": str(repo.root),
                   "newRepository": not use_existing, "committed": problem_text is None,
                   "problem": problem_text, "from": source})
        return
    where = "a new git repository" if not use_existing else "the git repository"
    click.echo(f"Created {ensemble} {committed}in {where} at {repo.root}.")
    click.echo(f"Next: unfurl plan {root}   then: unfurl deploy --approve {root}")


def _copied_files(origin: Path) -> list[Path]:
    """The files and symlinks ``init --from`` copies, relative to ``origin`` (links are not
    followed: they are copied, and committed, as links)."""
    import os

    found: list[Path] = []
    for directory, dirs, files in os.walk(origin):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        here = Path(directory)
        links = [d for d in dirs if (here / d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in links]
        found += [(here / name).relative_to(origin) for name in files + links
                  if not name.endswith(".pyc")]
    return found


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
    from unfurl_lite.load.loader import load_ensemble

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
@click.option("-a", "--approve", is_flag=True, expose_value=False,
              help="Accepted and ignored (plan never asks), so scripts can pass the same "
                   "flags to every command.")
@click.option("-v", "--verbose", count=True, expose_value=False,
              help="Accepted as after any command; the plan is the result.")
@click.option("-q", "--quiet", is_flag=True, expose_value=False,
              help="Accepted as after any command; the plan is the result, so it is shown.")
def plan(
    ensemble: str | None, workflow: str, instances: tuple[str, ...], force: bool, as_json: bool
) -> None:
    """Show the tasks a workflow would run, in order, with the reason for each; run nothing."""
    from unfurl_lite.cli import render
    from unfurl_lite.load.loader import load_ensemble
    from unfurl_lite.plan.core import plan_workflow

    loaded = load_ensemble(ensemble)
    options: dict[str, Any] = {"instance_names": instances}
    if workflow == "deploy":
        options["force"] = force
    if workflow not in ("deploy", "undeploy", "check", "discover"):
        from unfurl_lite.plan import tosca as tosca_workflows

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
    from click.shell_completion import get_completion_class

    from unfurl_lite.cli.main import cli

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
    from unfurl_lite.cli.main import version_text

    if as_json:
        text = version_text()
        commit = text.partition("(commit ")[2].rstrip(")") or None
        echo_json({"version": __version__, "commit": commit})
    else:
        click.echo(version_text())
