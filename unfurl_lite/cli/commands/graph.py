"""``unfurl graph``: the topology as a picture (DOT, Mermaid or SVG), like ``terraform graph``.

DOT and Mermaid are text that needs nothing to write; SVG is drawn by Graphviz. The
picture goes to stdout unless ``-o`` names a file, which is written whole or not at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from unfurl_lite.cli.commands.common import ensemble_option

FORMATS = ("dot", "mermaid", "svg")


@click.command()
@ensemble_option()
@click.option("--format", "format_", type=click.Choice(FORMATS), default=None,
              help="dot (default; Graphviz's language), mermaid, or svg (drawn by Graphviz).")
@click.option("--instances", is_flag=True,
              help="Draw instances (hosted ones inside their host, relationship instances "
                   "on the edges) instead of templates.")
@click.option("--output", "-o", "out_file", type=click.Path(dir_okay=False), default=None,
              help="Write the picture to this file instead of printing it (- : stdout).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the graph's nodes and edges as JSON instead of a picture.")
def graph(
    ensemble: str | None, format_: str | None, instances: bool, out_file: str | None,
    as_json: bool,
) -> None:
    """Print ENSEMBLE's topology as a graph: templates (or --instances) coloured by status,
    with labelled edges for hosted-on, dependency and other relationships.

    \b
    unfurl graph | dot -Tpng > topology.png
    unfurl graph --format svg -o topology.svg
    unfurl graph --format mermaid --instances
    """
    # start-up: keeps view.diagram, view.formats (17 modules) off graph's import until graph() runs
    from unfurl_lite.view import diagram as view
    from unfurl_lite.view import formats

    if as_json and format_ is not None:
        raise click.UsageError("--json and --format contradict each other: give one")
    topology = view.load_graph(ensemble, instances=instances)
    if as_json:

        text = json.dumps(view.as_json(topology), indent=2, ensure_ascii=False) + "\n"
    elif format_ == "svg":
        text = formats.to_svg(topology)
    elif format_ == "mermaid":
        text = formats.to_mermaid(topology)
    else:
        text = formats.to_dot(topology)
    if out_file and out_file != "-":
        from unfurl_lite.load import yamlio  # start-up: keeps load.yamlio off graph's import

        yamlio.atomic_write(Path(out_file), text)
    else:
        click.echo(text, nl=False)
