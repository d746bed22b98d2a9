"""The graph as SVG drawn by Graphviz's ``dot`` (Debian's ``graphviz`` package).

Graphviz lays out large graphs far better than anything small enough to ship here; when
it is missing the error says which package to install and which formats need nothing.
"""

from __future__ import annotations

import shutil
import subprocess

from unfurl_lite.errors import ToolMissing, UnfurlLiteError
from unfurl_lite.view.diagram import Graph
from unfurl_lite.view.dot import render as to_dot

#: seconds Graphviz may take: with the options below 1,000 templates take about 5 s
TIMEOUT = 120.0
#: from this many nodes, Graphviz's network simplex gets one pass per phase: a 1,000-node
#: tree of hosts and dependencies then lays out in 5 s instead of 30 (measured on one
#: core; the picture is less compact)
LARGE = 150
LARGE_OPTIONS = ("-Gnslimit=1", "-Gnslimit1=1")


def find_dot() -> str:
    """The path of Graphviz's ``dot`` on PATH, or a clear error naming the package."""
    found = shutil.which("dot")
    if found is None:
        raise ToolMissing(
            "Graphviz's `dot` program is not on PATH: it draws the SVG picture",
            hint="install Debian's `graphviz` package (`apt-get install graphviz`; "
            "elsewhere the Graphviz package of your system), or use --format dot or "
            "--format mermaid, which need nothing",
        )
    return found


def render(graph: Graph) -> str:
    options = LARGE_OPTIONS if len(graph.nodes) >= LARGE else ()
    return dot_to_svg(to_dot(graph), options)


def dot_to_svg(source: str, options: tuple[str, ...] = ()) -> str:
    dot = find_dot()
    try:
        done = subprocess.run(
            [dot, "-Tsvg", *options],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise UnfurlLiteError(
            f"Graphviz's `dot` took more than {TIMEOUT:.0f}s to draw the graph",
            hint="use --format dot and lay it out with another Graphviz program",
        ) from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise UnfurlLiteError(
            f"Graphviz's `dot` could not draw the graph: {reason}",
            hint="use --format dot to see what was given to it",
        )
    return done.stdout.decode("utf-8")
