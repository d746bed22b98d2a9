"""How two mappings merge (Unfurl's merge, with its ``+%`` strategies): the override's
values win, a null or empty mapping leaves the base's mapping, and lists are appended to.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from unfurl_lite.errors import InputError, Problem
from unfurl_lite.load.origins import (
    definitions,
    merged_from,
    new_map,
    new_seq,
    note_merge,
    put,
    source_file,
)
from unfurl_lite.model.narrow import YAMLList, is_list, is_map

STRATEGY_KEY = "+%"
_DROP = object()  # the override removes the key

def merge_maps(base: Any, override: Any) -> CommentedMap:
    """Recursively merge two expanded maps into a new one; the override's values win.

    As Unfurl's merge: a null or empty mapping over a mapping leaves the mapping (the
    override said nothing about it); ``+%: whiteout`` removes the key, ``nullout`` makes it
    null, ``error`` refuses the merge. Lists are appended to (items already present are not
    repeated, single-key mapping items merge by key, ``+%: merge`` items merge by position),
    so an include can add requirements.
    """
    out = new_map(override if isinstance(override, CommentedMap) else None,
                   source_file(override) or source_file(base) or "")
    skip: set[Any] = set()
    for key, value in override.items():
        if key == STRATEGY_KEY:
            continue
        old = base.get(key) if key in base else _DROP
        new = _merge_value(key, old, value)
        if new is _KEEP:
            continue
        if new is _DROP:
            skip.add(key)
            continue
        if is_map(old) and is_map(new):
            note_merge(out, key, definitions(base, key) + definitions(override, key))
        put(out, key, new, override, key, None)
    for key, value in base.items():
        if key != STRATEGY_KEY and key not in out and key not in skip:
            put(out, key, value, base, key, None)
    for key in out:
        if not merged_from(out, key):
            note_merge(out, key, merged_from(override, key) or merged_from(base, key))
    return out


_KEEP = object()  # the override leaves the base's value as it is


def _merge_value(key: Any, old: Any, new: Any) -> Any:
    if is_map(new) or new is None:
        strategy = new.get(STRATEGY_KEY) if new else None
        if is_map(old):
            strategy = strategy or old.get(STRATEGY_KEY) or "merge"
            if strategy == "merge":
                return merge_maps(old, new) if new else _KEEP
            if strategy == "error":
                raise InputError([Problem(
                    f"merging {key!r} is not allowed: `+%: error` was set",
                    path=str(key), hint="remove one of the definitions or the `+%: error`",
                )], summary="merge directives failed")
        if strategy == "whiteout":
            return _DROP
        if strategy == "nullout":
            return None
        return new
    if is_list(old) and is_list(new):
        return _merge_lists(old, new)
    return new


def _merge_lists(old: YAMLList, new: YAMLList) -> CommentedSeq:
    out = new_seq(new if isinstance(new, CommentedSeq) else None, source_file(new) or "")
    for index, item in enumerate(old):
        put(out, index, item, old, index, None)
    for index, item in enumerate(new):
        if is_map(item) and item.get(STRATEGY_KEY) == "merge":
            if index >= len(out):
                put(out, len(out), item, new, index, None)
            elif is_map(out[index]):
                out[index] = merge_maps(out[index], item)
            else:
                out[index] = item
            continue
        slot = _single_key_slot(out, item)
        if slot is not None:
            out[slot] = merge_maps(out[slot], item)
        elif item not in out:
            put(out, len(out), item, new, index, None)
    return out


def _single_key_slot(seq: YAMLList, item: Any) -> int | None:
    if not is_map(item) or len(item) != 1:
        return None
    (key,) = item
    for index, existing in enumerate(seq):
        if is_map(existing) and len(existing) == 1 and key in existing:
            return index
    return None
