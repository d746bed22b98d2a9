"""Limits on what a YAML document may be, checked right after parsing and before any
merge, validation or copying: the checks later steps rely on to stay fast and safe.

ruamel shares aliased nodes instead of copying them, so a "billion laughs" document
parses quickly and only explodes when something (merge, ``to_plain``, jsonschema) walks
it. The guard measures the size the document *would* have with every alias expanded,
in time linear in its real size, and refuses it before that happens.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import re
from collections.abc import Iterator, Mapping

from unfurl_lite.errors import InputError, LimitExceeded, Problem
from unfurl_lite.load.positions import location
from unfurl_lite.security.characters import control_character

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from ruamel.yaml.nodes import Node

    from unfurl_lite.model.narrow import YAMLScalar

MAX_EXPANDED_NODES = 1_000_000  # nodes with every alias expanded (an alias bomb)
MAX_EXPANDED_CHARS = 50_000_000  # characters of keys and strings with every alias expanded
#: levels of nested mappings and lists: the status Unfurl 1.2.0 writes for the longest chain
#: of hosts it deploys (about 140, two levels a host) fits
MAX_DEPTH = 300
MAX_KEYS = 500_000  # mapping keys, counted in the text before parsing
#: keys and list items, counted in the text before parsing: each is a node of the composed
#: document first (about 400 bytes), so this bounds the parse's memory (about 200 MB)
MAX_VALUES = 500_000
MAX_ANCHORS = 10_000  # anchors (&name), counted in the text before parsing
#: what follows a mapping key: ``key: v``, ``key:`` at a line's end, ``"key":v`` (JSON)
_KEY_ENDS = (": ", ":\n", ":\t", ":\r", '":', "':")
_BRACKETS = re.compile(r"[\[\]{}]")
PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:omap")
SCALARS = (str, int, float, bool, type(None), datetime.date)
#: a node of a document as parsed: its keys may be of any kind until ``check`` has refused them
_Parsed: TypeAlias = "Mapping[Any, Any] | list[Any] | YAMLScalar"


def check_text(text: str, filename: str) -> None:
    """Refuse, before any parser runs (in time linear in the text and constant memory),
    what no ensemble needs and every parser chokes on: too many mapping keys or anchors,
    and deeply nested flow collections (``[[[[...``) the parser would recurse into.
    Counting is by text, so a quoted ``: `` or bracket may count too: that only errs on
    the side of refusing a pathological file."""
    _check_counts(text, filename)
    _check_compact_nesting(text, filename)
    if "[" not in text and "{" not in text:  # a block document: nothing to count
        return
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                position = match.start()
                line = text.count("\n", 0, position) + 1
                column = position - (text.rfind("\n", 0, position) + 1) + 1
                raise InputError(Problem(
                    f"nested more than {MAX_DEPTH} levels deep", file=filename,
                    line=line, column=column, hint="flatten the document",
                ))
        elif depth:
            depth -= 1


#: a line whose leading block indicators (``- - - x``, ``? ? x``) end past this column: each
#: starts a block collection nested in the one before, and C's parser recurses into each
#: (200,000 of them crash it); the document's own depth limit is far lower
MAX_INDICATOR_COLUMN = 4 * MAX_DEPTH
_DEEP_INDICATORS = re.compile(
    rf"(?=[ \t]*[-?:][ \t])[ \t?:-]{{{MAX_INDICATOR_COLUMN + 1},}}")
#: the same after a newline: a search anchored on ``\n`` skips the positions inside lines,
#: which ``^`` under re.M tries one by one (twice the time on a 5 MB ensemble); the run's
#: length is asked first, a count of one character class that stops at an ordinary line's
#: indentation, where the indicator's lookahead backtracked through it (a quarter of the
#: time on a 5 MB ensemble); what it matches, and where, are the same
_DEEP_LINE = re.compile(
    rf"\n(?=[ \t?:-]{{{MAX_INDICATOR_COLUMN + 1}}})" + _DEEP_INDICATORS.pattern)


def _check_compact_nesting(text: str, filename: str) -> None:
    found = _DEEP_INDICATORS.match(text) or _DEEP_LINE.search(text)
    if found is not None:
        run = found.group().lstrip("\n")
        start = found.end() - len(run)
        indicators = len(re.findall(r"[-?:](?=[ \t])", run))
        raise InputError(Problem(
            f"nested more than {MAX_DEPTH} levels deep (a line opens {indicators} block "
            f"collections, the last at column {len(run)})", file=filename,
            line=text.count("\n", 0, start) + 1, hint="flatten the document"))


#: values (keys and list items, counted in the text) of a document read by the round-trip
#: parser (merge directives, includes, imports; locating a problem): pure Python, about
#: 20 µs a value, where the C parser that reads plain documents takes a tenth of that
MAX_ROUND_TRIP_VALUES = 200_000


def estimated_values(text: str) -> int:
    """Mapping keys and list items, counted in the text (an upper bound: a quoted ``: ``
    or comma counts too)."""
    keys, items = _counted(text)
    return keys + items


#: the last text counted and its counts: a load asks :func:`check_text` and
#: :func:`estimated_values` of the same text (nine scans of it each, 50 ms at 5 MB)
_last_counts: list[tuple[str, tuple[int, int]]] = []


def _counted(text: str) -> tuple[int, int]:
    """Mapping keys and list items (flow and block) counted in the text."""
    for last, counts in _last_counts[:1]:  # a copy: another thread's load may replace it
        if last is text:
            return counts
    # a separator ending in a tab or a carriage return is counted only in a text that has
    # one (a search for one character is a hundredth of a count of two: 12 ms at 5 MB)
    keys = sum(text.count(sep) for sep in _KEY_ENDS if sep[-1] not in "\t\r" or sep[-1] in text)
    items = text.count(",") + text.count("- ") + text.count("-\n")
    _last_counts[:] = [(text, (keys, items))]
    return keys, items


#: what the round-trip parser may still read in the load under way (its files together)
_round_trip_left: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "unfurl_lite_round_trip_left", default=None)


@contextlib.contextmanager
def round_trip_budget() -> Iterator[None]:
    """One load: the ensemble, its includes and its imports share MAX_ROUND_TRIP_VALUES."""
    token = _round_trip_left.set([MAX_ROUND_TRIP_VALUES])
    try:
        yield
    finally:
        _round_trip_left.reset(token)


def check_round_trip(text: str, filename: str) -> None:
    """Refuse, before the round-trip parser starts, a document (or the files of one load
    together) it would take minutes on."""
    values = estimated_values(text)
    left = _round_trip_left.get()
    if values > (left[0] if left is not None else MAX_ROUND_TRIP_VALUES):
        together = left is not None and left[0] < MAX_ROUND_TRIP_VALUES
        raise LimitExceeded(Problem(
            f"the document has about {values} keys and list items"
            + (" more than the files read before it leave room for" if together else "")
            + ": a document with merge directives (+include...) or imports, and the files "
            f"it includes or imports, may have at most {MAX_ROUND_TRIP_VALUES} in all "
            f"(a plain one {MAX_VALUES}): refused before parsing", file=filename,
            hint="move the large data to a plain ensemble without directives, or split it"))
    if left is not None:
        left[0] -= values


def _check_counts(text: str, filename: str) -> None:
    keys, items = _counted(text)
    if keys > MAX_KEYS:
        raise LimitExceeded(Problem(
            f"the document has about {keys} mapping keys (more than {MAX_KEYS}): refused "
            "before parsing", file=filename,
            hint="split the ensemble, or generate fewer keys",
        ))
    if keys + items > MAX_VALUES:
        raise LimitExceeded(Problem(
            f"the document has about {keys} mapping keys and {items} list items (more than "
            f"{MAX_VALUES} values in all): refused before parsing", file=filename,
            hint="split the ensemble, or generate fewer values",
        ))
    if "&" not in text:  # the pattern's scan costs a second at N=10,000
        return
    for anchors, match in enumerate(_ANCHOR.finditer(text), start=1):
        if anchors > MAX_ANCHORS:
            position = match.end() - 1
            raise LimitExceeded(Problem(
                f"the document defines more than {MAX_ANCHORS} anchors (&name): refused "
                "before parsing", file=filename, line=text.count("\n", 0, position) + 1,
                hint="use fewer anchors: merge directives or includes share content too",
            ))


# an anchor or alias starts a node: at a line's start, after "key:", "-", "[", "{" or ","
_NODE_START = r"(?:^[ \t]*|:[ \t]+|-[ \t]+|[\[{,][ \t]*)"
_ANCHOR = re.compile(_NODE_START + r"&[^\s\[\]{},]", re.M)
_ALIAS = re.compile(_NODE_START + r"\*[^\s\[\]{},]", re.M)


def check_aliases(text: str, filename: str) -> None:
    """Refuse an alias inside its own anchor (``&r {self: *r}``), and a document that
    aliases and merge keys (``<<: *a``) make huge, measured on the composed node graph
    (linear in the text) before anything is constructed: ruamel's round-trip loader
    turns a recursive alias silently into null, and copies merged keys into every mapping
    (quadratic in a chain of merges, minutes for a few thousand lines). Only texts with
    both an anchor and an alias are composed."""
    if "&" not in text or "*" not in text or not (_ANCHOR.search(text) and _ALIAS.search(text)):
        return
    # start-up: keeps ruamel (36 modules) off `plan`, `validate` until check_aliases() runs
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        root = YAML(typ="safe", pure=False).compose(text)  # C's composer: 10x faster
    except (YAMLError, RecursionError, ValueError):
        return  # the parse proper reports it, with its line
    if root is not None:
        _measure_composed(root, filename)


def _measure_composed(root: Node, filename: str) -> None:
    # start-up: keeps ruamel (36 modules) off `plan`, `validate` until _measure_composed() runs
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    sizes: dict[int, tuple[int, int]] = {}  # id -> (nodes, characters) with aliases expanded
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            sizes[id(node)] = _composed_size(node, _children(node), sizes, filename)
            continue
        if not isinstance(node, MappingNode | SequenceNode) or id(node) in sizes:
            continue
        if id(node) in on_path:
            mark = node.start_mark
            raise InputError(Problem(
                "recursive alias: the anchor" + (f" &{node.anchor}" if node.anchor else "")
                + " contains an alias to itself",
                file=filename, line=mark.line + 1, column=mark.column + 1,
                hint="remove the alias, or copy the content it should repeat",
            ))
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _children(node: Node) -> list[Node]:
    from ruamel.yaml.nodes import SequenceNode  # start-up: keeps ruamel (36 modules) off `plan`

    return node.value if isinstance(node, SequenceNode) else [
        item for pair in node.value for item in pair]


def _composed_size(node: Node, children: list[Node], sizes: dict[int, tuple[int, int]],
                   filename: str) -> tuple[int, int]:
    """Nodes and characters of ``node`` as constructed: each alias a copy of its anchor,
    a merge key (``<<: *a``) the merged mappings' pairs (not a key and a mapping)."""
    # start-up: keeps ruamel (36 modules) off `plan`, `validate` until _composed_size() runs
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    def size(child: Node) -> tuple[int, int]:
        found = sizes.get(id(child))
        return found if found is not None else (1, len(str(child.value)))

    total, chars = 1, 0
    merged: list[Node] = []
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                merged.extend(value.value if isinstance(value, SequenceNode) else [value])
                children = [c for c in children if c is not key and c is not value]
    for mapping in merged:
        nodes, length = size(mapping)
        total, chars = total + nodes - 1, chars + length
    for child in children:
        nodes, length = size(child)
        total, chars = total + nodes, chars + length
    if total > MAX_EXPANDED_NODES or chars > MAX_EXPANDED_CHARS:
        mark = node.start_mark
        what = (f"more than {MAX_EXPANDED_NODES} nodes (mappings, lists and values)"
                if total > MAX_EXPANDED_NODES
                else f"more than {MAX_EXPANDED_CHARS} characters of keys and strings")
        raise LimitExceeded(Problem(
            f"the document has {what} once its aliases and merge keys (<<) are expanded, "
            "counting an alias's content each time it is used (an alias bomb?): refused "
            "before it was built", file=filename, line=mark.line + 1,
            column=mark.column + 1, hint="use fewer or smaller aliases and merges"))
    return total, chars


#: keys whose values are data, not names: control characters in their keys are allowed
#: (an operation's reported attributes must never make the ensemble unloadable)
DATA_KEYS = frozenset({"attributes"})


def check(document: Any, filename: str) -> None:
    """Raise InputError if the document is an alias bomb, too deep, self-referencing, or
    has keys that are not strings, or names (keys) with control characters."""
    sizes: dict[int, tuple[int, int, int]] = {}  # id -> (expanded size, height, characters)
    in_progress: set[int] = set()
    free: set[int] = set()  # data whose keys are not names (an operation's attributes)
    stack: list[tuple[_Parsed, bool]] = [(document, False)]
    aliased = False  # some node is met twice: the document uses aliases
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, Mapping | list):
            _check_scalar(node, filename)
            continue
        key = id(node)
        if expanded:
            in_progress.discard(key)
            sizes[key] = _measure(node, sizes, filename, aliased)
            continue
        if key in sizes:
            aliased = True  # met again: an alias to it
            continue
        if key in in_progress:
            raise _problem(filename, node, "a node contains itself through an alias",
                           "remove the recursive alias")
        tag = getattr(getattr(node, "tag", None), "value", None)
        if tag and tag not in PLAIN_TAGS:
            raise _problem(filename, node, f"unsupported YAML value tagged {tag!r} "
                           "(custom tags are not part of the ensemble format)",
                           "remove the tag: use plain mappings and lists")
        in_progress.add(key)
        stack.append((node, True))
        data = key in free
        v: _Parsed  # a value as parsed: narrowed below by isinstance
        if isinstance(node, Mapping):
            for k, v in node.items():
                if not isinstance(k, str):
                    raise _problem(
                        filename, node,
                        f"mapping key {_show(k)} is a {type(k).__name__}, not a string",
                        "quote the key so it is a string", k,
                    )
                if data or k in DATA_KEYS:
                    if isinstance(v, Mapping | list):
                        free.add(id(v))
                    stack.append((v, False))
                    continue
                bad = control_character(k)
                if bad is not None:
                    raise _problem(
                        filename, node,
                        f"name {_show(k)} contains the control character {bad}: names "
                        "(templates, instances, types, keys) may not",
                        "remove the control character from the name", k,
                    )
                stack.append((v, False))
        else:
            items: list[_Parsed] = node
            if data:
                free.update(id(v) for v in items if isinstance(v, Mapping | list))
            stack.extend((v, False) for v in items)


def _measure(
    node: Mapping[Any, Any] | list[Any], sizes: dict[int, tuple[int, int, int]], filename: str,
    aliased: bool = False,
) -> tuple[int, int, int]:
    """Nodes, height and characters of ``node`` with every alias in it expanded: a big
    string repeated by thousands of aliases is small as parsed and huge once copied."""
    total, height, chars = 1, 0, 0
    children: list[_Parsed]
    if isinstance(node, Mapping):
        chars += sum(len(k) for k in node if isinstance(k, str))
        children = list(node.values())
    else:
        children = list(node)
    for child in children:
        if isinstance(child, Mapping | list):
            size, child_height, child_chars = sizes.get(id(child), (1, -1, 0))
        else:
            size, child_height = 1, -1
            child_chars = len(child) if isinstance(child, str) else 1
        total += size
        chars += child_chars
        height = max(height, child_height + 1)
    if total > MAX_EXPANDED_NODES:
        raise _limit(
            filename, node,
            f"the document has more than {MAX_EXPANDED_NODES} nodes (mappings, lists and "
            "values" + (", counting an alias's content each time it is used: an alias "
                        "bomb?)" if aliased else ")"),
            "use fewer or smaller aliases" if aliased else "split the ensemble",
        )
    if chars > MAX_EXPANDED_CHARS:
        raise _limit(
            filename, node,
            f"the document has more than {MAX_EXPANDED_CHARS} characters of keys and "
            "strings" + (" (counting an alias's content each time it is used: an alias "
                         "bomb?)" if aliased else ""),
            "use fewer or smaller aliases" if aliased else "split the ensemble",
        )
    if height > MAX_DEPTH:
        raise _problem(filename, node, f"nested more than {MAX_DEPTH} levels deep",
                       "flatten the document")
    return total, height, chars


def _check_scalar(value: Any, filename: str) -> None:
    if not isinstance(value, SCALARS):
        raise InputError(Problem(
            f"unsupported YAML value of type {type(value).__name__} "
            "(custom tags, sets and binary are not part of the ensemble format)",
            file=filename,
            hint="use plain strings, numbers, booleans, lists and mappings",
        ))


def _show(key: Any) -> str:
    text = repr(key)
    return text if len(text) < 60 else text[:57] + "..."


def _limit(filename: str, node: Any, message: str, hint: str) -> LimitExceeded:
    return LimitExceeded(_problem(filename, node, message, hint).problems)


def _problem(filename: str, node: Any, message: str, hint: str, key: Any = None) -> InputError:
    line, column = location(node, key) if key is not None else location(node)
    if line is None and key is not None:  # the key has no position: the node's own
        line, column = location(node)
    return InputError(Problem(message, file=filename, line=line, column=column, hint=hint))
