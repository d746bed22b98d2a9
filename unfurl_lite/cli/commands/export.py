"""``unfurl export``: the ensemble as the tool sees it, includes and merge directives applied.

Scripts and reviewers want the one document every command works from, not the files it
was assembled from; JSON by default (what Unfurl's ``export`` prints), YAML on request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from unfurl_lite.cli.commands.common import ENSEMBLE_ARG

#: Unfurl 1.2.0's export formats, named so that asking for one says it is not here
UNFURL_FORMATS = ("deployment", "blueprint", "environments", "deployments", "python")


def expanded_document(ensemble: str | None) -> dict[str, Any]:
    """The validated ensemble's whole document with every merge directive applied."""
    from unfurl_lite.load import merge, yamlio
    from unfurl_lite.load.loader import load_ensemble

    loaded = load_ensemble(ensemble)
    if not loaded.merged:
        return loaded.plain or {}
    expanded = merge.expand(loaded.document, loaded.path, loaded.project_root)
    return dict(yamlio.to_plain(expanded))


@click.command()
@ENSEMBLE_ARG
@click.option("--format", "format_", metavar="[json|yaml]", default=None,
              help="Output format: json (default) or yaml.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--file", "out_file", type=click.Path(dir_okay=False),
              help="Write the document to this file instead of printing it.")
def export(ensemble: str | None, format_: str | None, as_json: bool, out_file: str | None) -> None:
    """Print ENSEMBLE's expanded document: includes and merge directives applied."""
    from unfurl_lite.load import yamlio

    if format_ in UNFURL_FORMATS:
        raise click.UsageError(
            f"--format {format_} (Unfurl's GraphQL/Python export) is not supported here: "
            "use --format json or yaml for the expanded ensemble document")
    if format_ not in (None, "json", "yaml"):
        raise click.BadParameter(f"{format_!r} is not one of 'json', 'yaml'",
                                 param_hint="'--format'")
    if as_json and format_ == "yaml":
        raise click.UsageError("--json and --format yaml contradict each other")
    document = expanded_document(ensemble)
    if (format_ or "json") == "json":
        text = json.dumps(document, indent=2, default=str) + "\n"
    else:
        text = yamlio.dump(document)
    if out_file:
        yamlio.atomic_write(Path(out_file), text)
    else:
        click.echo(text, nl=False)
