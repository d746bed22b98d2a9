"""The overview's topology picture: Graphviz when ``dot`` is installed, else the built-in
drawing (same nodes, edges and colours), so the dashboard works on a bare machine."""

from __future__ import annotations

import re
from pathlib import Path

from unfurl_lite.api import load
from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.view.diagram import build_graph

_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_SCRIPT = re.compile(r"<script\b.*?</script\s*>", re.DOTALL | re.IGNORECASE)


def inline(svg: str) -> str:
    """An SVG document as an element of an HTML page: without its XML declaration, DOCTYPE
    and comments before ``<svg>`` (and never a script, whatever drew it)."""
    return _SCRIPT.sub("", _PROLOGUE.sub("", svg, count=1)).strip()


def picture_of(ensemble: Ensemble, instances: bool = False) -> tuple[str, str]:
    """(SVG, what drew it: "graphviz" or "built-in") of a loaded ensemble."""
    # start-up: keeps view.formats (17 modules) off picture's import until picture_of() runs
    from unfurl_lite.view.formats import to_builtin_svg, to_svg

    graph = build_graph(ensemble, instances=instances)
    try:
        return inline(to_svg(graph)), "graphviz"
    except UnfurlLiteError:  # no `dot` on this machine
        return inline(to_builtin_svg(graph)), "built-in"


def topology_svg(ensemble: Path, instances: bool = False) -> tuple[str, str]:
    """:func:`picture_of` the ensemble at ``ensemble``; raises the loader's error."""
    return picture_of(load(ensemble), instances)
