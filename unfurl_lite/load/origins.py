"""Where each part of a merged document came from: every container the merge builds keeps
ruamel's line info and the file each key was read from, and a key merged from several
mappings remembers each of them, so a problem inside included content names its file.
"""

from __future__ import annotations

from dataclasses import dataclass

from unfurl_lite.load import positions

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the merge when it builds (a job on a cached ensemble never)
    from typing import Any

    from ruamel.yaml.comments import CommentedMap, CommentedSeq

_ORIGIN = "_unfurl_lite_origin"  # container attribute: {key or index or None: file}
_MERGED = "_unfurl_lite_merged"  # map attribute: {key: [Definition, ...]} for merged keys


Path_ = tuple[str | int, ...]


def source_file(node: Any, key: Any = None) -> str | None:
    """The file a container (or one of its keys or items) was read from, if known."""
    origin = getattr(node, _ORIGIN, None)
    if not origin:
        return None
    if key is not None and key in origin:
        return str(origin[key])
    return origin.get(None)


@dataclass(frozen=True)
class Definition:
    """One of several mappings that were merged under the same key."""

    file: str | None
    line: int | None
    value: Any


def merged_from(node: Any, key: Any) -> list[Definition]:
    """Every mapping merged into ``node[key]``, in merge order; empty if it had one source.

    Validation uses it to tell a deliberate override from two files both defining a name.
    """
    return list(getattr(node, _MERGED, {}).get(key, []))


def has_merged(node: Any) -> bool:
    """Whether any key of ``node`` was merged from several mappings (never for plain data:
    a check asks this once instead of :func:`merged_from` for each of its keys)."""
    return bool(getattr(node, _MERGED, None))


def definitions(node: Any, key: Any) -> list[Definition]:
    return merged_from(node, key) or [
        Definition(source_file(node, key), positions.location(node, key)[0], node[key])
    ]


def format_path(path: Path_ | list[Any]) -> str:
    """``spec.node_templates.app.requirements[0]``: how users see a place in the document."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def new_map(src: CommentedMap | None, file: str) -> CommentedMap:
    from ruamel.yaml.comments import CommentedMap  # start-up: keeps ruamel (38 modules) off `plan`

    out = CommentedMap()
    if src is not None:
        out.lc.line, out.lc.col = src.lc.line, src.lc.col
    setattr(out, _ORIGIN, {None: file})
    return out


def new_seq(src: CommentedSeq | None, file: str) -> CommentedSeq:
    from ruamel.yaml.comments import CommentedSeq  # start-up: keeps ruamel (38 modules) off `plan`

    out = CommentedSeq()
    if src is not None:
        out.lc.line, out.lc.col = src.lc.line, src.lc.col
    setattr(out, _ORIGIN, {None: file})
    return out


def put(dst: CommentedMap | CommentedSeq, key: Any, value: Any, src: Any, src_key: Any,
        file: str | None) -> None:
    """Store value under key, carrying over the position and file it was read from."""
    if isinstance(dst, list):  # a new_seq
        dst.append(value)
    else:
        dst[key] = value
    data = getattr(getattr(src, "lc", None), "data", None)
    if data and src_key in data:
        if dst.lc.data is None:  # a CommentedSeq or CommentedMap: both keep positions in .lc
            dst.lc.data = {}
        dst.lc.data[key] = list(data[src_key])
    origin = getattr(dst, _ORIGIN)
    owner = source_file(src, src_key) if src is not None else None
    origin[key] = owner or file


def note_merge(node: Any, key: Any, definitions: list[Definition]) -> None:
    if definitions:
        merged: dict[Any, list[Definition]] = getattr(node, _MERGED, None) or {}
        merged[key] = definitions
        setattr(node, _MERGED, merged)
