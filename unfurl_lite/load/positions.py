"""Where a node of a round-trip document is in its file: what every problem names.

Below both the YAML reader and the shape guard, which each report positions; ruamel's
comment types are never imported here: a node can only be one of them once the round
trip (which already needs them) has imported them, so a command that never reads a
document the slow way (a job on a cached ensemble) does not import ruamel for this.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def location(node: Any, key: Any = None) -> tuple[int | None, int | None]:
    """1-based (line, column) of a mapping key or sequence item, or of the node itself."""
    comments = sys.modules.get("ruamel.yaml.comments")
    if comments is None or not isinstance(node, comments.CommentedMap | comments.CommentedSeq):
        return None, None
    try:
        if key is not None:
            if isinstance(node, comments.CommentedMap):
                line, col = node.lc.key(key)
            else:
                line, col = node.lc.item(key)
        else:
            line, col = node.lc.line, node.lc.col
    except (KeyError, IndexError, TypeError, AttributeError):
        return None, None
    if line is None:
        return None, None
    return line + 1, (col + 1 if col is not None else None)
