"""The everyday block-style YAML of an ensemble to plain data, one line at a time.

ruamel's C composer makes a Python node object for every key and value before anything
is built from them (about 380,000 at N=10,000: 3.5 s of a 5 MB ensemble). An ensemble as
people and generators write it is a narrow subset of YAML: block mappings and sequences
by indentation, plain or quoted one-line scalars, literal block scalars, comments, small
flow collections on one line (:mod:`flowyaml`). This module reads that subset straight
from the lines (a tenth of the time) and raises :class:`NeedsFullLoader` at the first
thing outside it (multi-line flow collections, anchors, tags, escapes, folded block or
multi-line quoted scalars, tabs, document markers...), so the C composer's
road reads every other document: the two roads never disagree about a document, and
what is refused or reported keeps going through the loaders that know YAML in full.

Scalars are typed by :func:`scalars.implicit_type`, exactly as the composer's road
types them; the guard's limits (depth, size, names without control characters) are
judged conservatively while reading, declining whatever the guard might refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from unfurl_lite.load import flowyaml
from unfurl_lite.load.flowyaml import NeedsFullLoader
from unfurl_lite.load.guard import MAX_DEPTH, MAX_EXPANDED_CHARS, MAX_EXPANDED_NODES
from unfurl_lite.model.narrow import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

__all__ = ["NeedsFullLoader", "load"]

#: a character ruamel's reader refuses, a line break only YAML 1.1 knows, a tab, a BOM
#: or a carriage return: any of them and the document takes the full road
_OUTSIDE = "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
#: the characters of a text all ASCII (almost every ensemble) that are inside the subset:
#: deleting them from its bytes leaves what is outside, in a fortieth of the time a
#: pattern's search takes (2 ms against 30-70 ms for a 5 MB ensemble), and the full
#: pattern's ranges (~6 ms to compile) are built only for a text that is not ASCII
_INSIDE_ASCII = bytes([10, *range(0x20, 0x7f)])
#: one line: its indentation, a list item's dash, a mapping key (plain, without a space
#: before its colon, or quoted on one line) and the rest of the line
_LINE = re.compile(r"""^(\ *+)(-\ ++|-$)?
                       (?:([\w$./+][\w$./+@()-]*+(?:\ ++[\w$./+@()-]++)*+):(?:\ ++|$)
                         |("[^"\\\n]*+"|'(?:[^'\n]|'')*+')\ *+:(?:\ ++|$))?
                       (.*)$""", re.M | re.X)
_DOUBLE = re.compile(r'"([^"\\]*)" *(?: #.*)?$')
_SINGLE = re.compile(r"'((?:[^']|'')*)' *(?: #.*)?$")
_LITERAL = re.compile(r"\|(-?) *(?: #.*)?$")
#: what a plain scalar may not start with (``-``, ``?`` and ``:`` only when a space follows:
#: ``-1`` and ``::db`` are plain scalars)
_INDICATORS = frozenset("[]{}#&*!|>'\"%@`,?:-")
#: the first characters of a plain key that YAML might read as another type than a string
_TYPED_KEY_START = frozenset("0123456789+-.~=<tTfFnN")
#: containers nested deeper than this are left to the guard's own walk
_MAX_NESTING = MAX_DEPTH // 2

# the kinds of a logical line
_KEY_VALUE, _KEY_BLOCK, _ITEM_VALUE, _ITEM_BLOCK = range(4)

#: a logical line: its indentation, kind, key (or None) and one-line value (or None)
_Line: TypeAlias = "tuple[int, int, str | None, Any]"
_END: _Line = (-1, _KEY_BLOCK, None, None)  # after the last line: closes every container


def load(text: str, scalar: Callable[[str], Any], key_type: Callable[[str], str]
         ) -> tuple[Any, bool]:
    """The document's plain data and whether a key is a merge directive (``+...``);
    ``scalar`` types a plain scalar as the composer's road does, ``key_type`` names the
    type a plain key would load as (anything but 'str' declines)."""
    if len(text) > MAX_EXPANDED_CHARS or (
            text.encode("ascii").translate(None, _INSIDE_ASCII) if text.isascii()
            else re.compile(_OUTSIDE).search(text)):
        raise NeedsFullLoader("a character outside the subset")
    lines, flow_nodes, distinct = _logical_lines(text, scalar, key_type)
    # each logical line makes at most a container and a value, and a flow collection the
    # nodes it counted: within the guard's count
    if not lines or 2 * len(lines) + 1 + flow_nodes > MAX_EXPANDED_NODES:
        raise NeedsFullLoader("an empty document, or beyond the guard's limits")
    lines.append(_END)
    reader = _Reader(lines)
    data, end = reader.node(0, 0)
    if end != len(lines) - 1:
        raise NeedsFullLoader("a line outside the document's structure")
    _last_read[:] = [(text, distinct)]
    return data, reader.directives


#: the last text read whole and its distinct lines (see :func:`distinct_lines`)
_last_read: list[tuple[str, str]] = []


def distinct_lines(text: str) -> str | None:
    """Each distinct line of ``text`` once (joined by line breaks), when ``text`` (this
    very string) is the last text :func:`load` read whole, else None. In a text it read,
    every mapping key is on one line with its colon (a block key, or a one-line flow
    mapping's): a search for keys can search these lines instead of the whole text (a
    ninth of it at N=10,000)."""
    for last, lines in _last_read[:1]:  # a copy: another thread's load may replace it
        if last is text:
            return lines
    return None


def _logical_lines(text: str, scalar: Callable[[str], Any], key_type: Callable[[str], str]
                   ) -> tuple[list[_Line], int, str]:
    """Each line's indentation and what it holds; ``- key: value`` is two logical lines
    (the item, then its mapping at the key's column); a literal block scalar, or a plain
    one folded over several lines, is read with the line that opens it; a one-line flow
    collection is read by :mod:`flowyaml` (the nodes it made are counted, second)."""
    out: list[_Line] = []
    flow_nodes = 0
    append = out.append
    skip_to = 0  # the raw line after the last block scalar read
    typed_start = _TYPED_KEY_START
    plain_start = _INDICATORS
    raw = text.split("\n")
    lines, distinct = _parts(raw)
    last = len(lines) - 1
    for number, (spaces, dash, plain, quoted, rest) in enumerate(lines):
        if number < skip_to:
            continue
        indent = len(spaces)
        if dash:
            if plain or quoted:
                append((indent, _ITEM_BLOCK, None, None))
                indent += len(dash)
            elif not rest or rest[0] == "#":
                append((indent, _ITEM_BLOCK, None, None))
                continue
        elif not plain and not quoted:
            if not rest or rest[0] == "#":
                continue
            raise NeedsFullLoader("a line that is neither a key nor an item")
        if plain:
            key: str | None = plain
            if plain[0] in typed_start and (key_type(plain) != "str" or plain[:3] == "..."):
                raise NeedsFullLoader("a key YAML reads as another type than a string")
        elif quoted:
            name = quoted[1:-1] if quoted[0] == '"' else quoted[1:-1].replace("''", "'")
            if not name.isprintable():
                raise NeedsFullLoader("a name with a character the guard judges")
            key = name
        else:
            key = None
        if key is not None and (not rest or rest[0] == "#"):
            append((indent, _KEY_BLOCK, key, None))
            continue
        first = rest[0]
        if first not in plain_start and " #" not in rest and ": " not in rest \
                and rest[-1] not in ": ":
            if number < last and len(lines[number + 1][0]) > indent:  # a line deeper: folded?
                rest, skip_to = _folded(rest, indent, raw, number + 1)
            value = scalar(rest)
        elif first in "[{":
            value, nodes = flowyaml.read(rest, scalar, key_type)
            flow_nodes += nodes
        else:
            value, skip_to = _value(rest, indent, raw, number + 1, scalar)
        append((indent, _KEY_VALUE if key is not None else _ITEM_VALUE, key, value))
    return out, flow_nodes, distinct


#: a line's parts by :data:`_LINE`: indentation, dash, plain key, quoted key, the rest
_Parts = tuple[str, str, str, str, str]


def _parts(raw: list[str]) -> tuple[list[_Parts], str]:
    """Each line's parts by :data:`_LINE` (indentation, dash, plain key, quoted key, the
    rest), the pattern matched once for each distinct line: an ensemble repeats most of
    its lines (a generated one of 180,000 lines has 20,000 distinct), and a dictionary
    lookup costs a tenth of a match; and the distinct lines."""
    seen: dict[str, _Parts] = {}
    found = seen.get
    match = _LINE.match
    out: list[_Parts] = []
    append = out.append
    for line in raw:
        parts = found(line)
        if parts is None:  # the pattern matches any line (each of its parts may be empty)
            parts = seen[line] = cast("_Parts", match(line).groups(default=""))  # type: ignore[union-attr]
        append(parts)
    # the lines as one string: the parts, and the memory of the split, are not kept
    return out, "\n".join(seen)


def _folded(first: str, indent: int, raw: list[str], number: int) -> tuple[str, int]:
    """A plain scalar continued on the lines after its first, each more indented than its
    key or item at ``indent`` (as emitters fold long values at their width): the lines
    joined by a space, a blank line kept as a line break. Declines a continuation line
    that YAML might read otherwise (an indicator first, a colon, a comment)."""
    pieces = [first]
    blank = 0
    count = len(raw)
    while number < count:
        line = raw[number]
        content = line.strip(" ")
        if not content:
            blank += 1
            number += 1
            continue
        if len(line) - len(line.lstrip(" ")) <= indent:
            break
        if content[0] in _INDICATORS or content[0] == "#" or ": " in content \
                or " #" in content or content[-1] == ":":
            raise NeedsFullLoader("a continuation line YAML might read otherwise")
        pieces.append("\n" * blank if blank else " ")
        pieces.append(content)
        blank = 0
        number += 1
    return "".join(pieces), number - blank


def _value(rest: str, indent: int, raw: list[str], number: int, scalar: Any) -> tuple[Any, int]:
    """The one-line value ``rest`` (or the literal block scalar it opens, read from
    ``raw[number:]``), and the number of the next raw line to read."""
    first = rest[0]
    if first == '"':
        found = _DOUBLE.match(rest)
        if found is None:
            raise NeedsFullLoader("a double-quoted scalar with escapes or on several lines")
        return found.group(1), number
    if first == "'":
        found = _SINGLE.match(rest)
        if found is None:
            raise NeedsFullLoader("a single-quoted scalar on several lines")
        return found.group(1).replace("''", "'"), number
    if first == "|":
        found = _LITERAL.match(rest)
        if found is None:
            raise NeedsFullLoader("a block scalar with an indicator")
        return _literal(raw, number, indent, bool(found.group(1)))
    if first in _INDICATORS and (first not in "-?:" or rest[1:2] in ("", " ")):
        raise NeedsFullLoader("a scalar starting with an indicator")
    cut = rest.find(" #")
    text = (rest if cut < 0 else rest[:cut]).rstrip(" ")
    if ": " in text or text[-1] == ":":
        raise NeedsFullLoader("a colon YAML reads as another mapping")
    if cut < 0:  # trailing spaces: an emitter folding at its width leaves one there
        text, number = _folded(text, indent, raw, number)
    return scalar(text), number


def _literal(raw: list[str], number: int, indent: int, strip: bool) -> tuple[str, int]:
    """A literal block scalar (``|``, ``|-``) of a key or item at column ``indent``."""
    start = number
    count = len(raw)
    while number < count and not raw[number].strip(" "):
        number += 1
    if number == count:
        raise NeedsFullLoader("an empty block scalar")
    first = raw[number]
    column = len(first) - len(first.lstrip(" "))
    if column <= indent or any(len(raw[n]) > column for n in range(start, number)):
        raise NeedsFullLoader("a block scalar without content or with leading spaces")
    body: list[str] = [""] * (number - start)
    margin = " " * column
    while number < count:
        line = raw[number]
        if line.startswith(margin):
            if len(line) > column and not line[column:].strip(" "):
                raise NeedsFullLoader("a line of spaces beyond the block scalar's column")
            body.append(line[column:])
        elif line.strip(" "):
            break
        else:
            body.append("")
        number += 1
    while body and body[-1] == "":
        body.pop()
    text = "\n".join(body)
    if start + len(body) == count:  # the text's last line, with no line break after it
        return text, number
    return (text if strip else text + "\n"), number


class _Reader:
    """Logical lines (ending with :data:`_END`) to nested values by indentation."""

    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.directives = False

    def node(self, number: int, depth: int) -> tuple[Any, int]:
        if depth > _MAX_NESTING:
            raise NeedsFullLoader("beyond the guard's depth")
        indent, kind, _, _ = self.lines[number]
        if kind >= _ITEM_VALUE:
            return self.sequence(number, indent, depth)
        return self.mapping(number, indent, depth)

    def mapping(self, number: int, indent: int, depth: int) -> tuple[dict[str, Any], int]:
        lines = self.lines
        out: dict[str, Any] = {}
        while True:
            line_indent, kind, key, value = lines[number]
            if line_indent != indent:
                break
            if kind >= _ITEM_VALUE:
                raise NeedsFullLoader("a list item among a mapping's keys")
            assert key is not None
            if key in out:
                raise NeedsFullLoader("a duplicate key")
            if key[:1] == "+":
                self.directives = True
            number += 1
            following, following_kind, _, _ = lines[number]
            if kind == _KEY_BLOCK:
                if following > indent:
                    value, number = self.node(number, depth + 1)
                elif following == indent and following_kind >= _ITEM_VALUE:
                    value, number = self.sequence(number, indent, depth + 1)
            elif following > indent:
                raise NeedsFullLoader("a scalar continued on the next line")
            out[key] = value
        if line_indent > indent:
            raise NeedsFullLoader("an indentation no container has")
        return out, number

    def sequence(self, number: int, indent: int, depth: int) -> tuple[list[Any], int]:
        lines = self.lines
        out: list[Any] = []
        append = out.append
        while True:
            line_indent, kind, _, value = lines[number]
            if line_indent != indent or kind < _ITEM_VALUE:
                break
            number += 1
            if lines[number][0] > indent:
                if kind == _ITEM_VALUE:
                    raise NeedsFullLoader("a scalar continued on the next line")
                value, number = self.node(number, depth + 1)
            append(value)
        if line_indent > indent:
            raise NeedsFullLoader("an indentation no container has")
        return out, number
