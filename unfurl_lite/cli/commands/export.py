"""``unfurl export``: the ensemble as the tool sees it, includes and merge directives applied.

Scripts and reviewers want the one document every command works from, not the files it
was assembled from; JSON by default (what Unfurl's ``export`` prints), YAML on request.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from unfurl_lite import api
from unfurl_lite.cli.commands.common import ensemble_option
from unfurl_lite.load import yamlio


@click.command()
@ensemble_option()
@click.option("--format", "format_", metavar="[json|yaml]", default=None,
              help="Output format: json (default) or yaml.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--file", "out_file", type=click.Path(dir_okay=False),
              help="Write the document to this file instead of printing it.")
def export(ensemble: str | None, format_: str | None, as_json: bool, out_file: str | None) -> None:
    """Print ENSEMBLE's expanded document: includes and merge directives applied."""
    # start-up: keeps api.project (24 modules) off export's import until export() runs
    from unfurl_lite.api.project import UNFURL_FORMATS

    if format_ in UNFURL_FORMATS:
        raise click.UsageError(
            f"--format {format_} (Unfurl's GraphQL/Python export) is not supported here: "
            "use --format json or yaml for the expanded ensemble document")
    if format_ not in (None, "json", "yaml"):
        raise click.BadParameter(f"{format_!r} is not one of 'json', 'yaml'",
                                 param_hint="'--format'")
    if as_json and format_ == "yaml":
        raise click.UsageError("--json and --format yaml contradict each other")
    document = api.export(ensemble)
    if (format_ or "json") == "json":
        text = json.dumps(document, indent=2, default=str) + "\n"
    else:
        text = yamlio.dump(document)
    if out_file:
        yamlio.atomic_write(Path(out_file), text)
    else:
        click.echo(text, nl=False)
