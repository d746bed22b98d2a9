"""Where a node of a round-trip document is in its file: what every problem names.

Below both the YAML reader and the shape guard, which each report positions; ruamel's
comment types are imported here, and only the round-trip path (which already needs them)
imports this module.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq


def location(node: Any, key: Any = None) -> tuple[int | None, int | None]:
    """1-based (line, column) of a mapping key or sequence item, or of the node itself."""
    if not isinstance(node, CommentedMap | CommentedSeq):
        return None, None
    try:
        if key is not None:
            if isinstance(node, CommentedMap):
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
