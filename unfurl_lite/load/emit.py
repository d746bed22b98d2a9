"""A fast writer for the plain data a job records, byte for byte what ``yamlio.dump`` writes.

ruamel's round-trip emitter is pure Python and walks an event stream: at 10 000 instances
the status section and the job files took longer to dump than the whole job took to run.
Records are simple data (mappings with name-like keys, lists, short ASCII strings, ints,
booleans), so this writer lays them out directly with ruamel's rules for block style,
quoting and line folding. Anything outside that subset (floats, dates, non-ASCII or
multi-line strings, lists of lists) makes :func:`dump` return None and the caller uses
ruamel: the bytes written never depend on which writer ran. Round-trip containers
(which may carry comments) are left to ruamel too.
"""

from __future__ import annotations

import re
from functools import lru_cache

from unfurl_lite.load.scalars import implicit_type
from unfurl_lite.model.narrow import type_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WIDTH = 80  # yamlio's ruamel width, which is Unfurl's
ENTRY_INDENT = 2  # the keys of a mapping in a top-level list: a record's entries
_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_RUNS = re.compile("( +)")  # words and the runs of spaces between them
_PRINTABLE = frozenset(chr(c) for c in range(0x20, 0x7F))


class _GiveUp(Exception):
    """The data has a shape this writer does not reproduce exactly."""


class Shared:
    """What the documents of one record share, emitted once for both: a job's file and
    its changes file hold the same task entries, the changes file's with fewer keys.
    :meth:`view` declares an entry of the later document a part of one of the earlier;
    the part's text is made from the pieces of the whole's as the whole is written. It is
    keyed by the entries' identity, so the documents must stay unchanged (and alive) until
    the last is dumped."""

    __slots__ = ("texts", "views")

    def __init__(self) -> None:
        self.views: dict[int, dict[Any, Any]] = {}  # id(whole) -> its part
        self.texts: dict[int, tuple[str, int]] = {}  # id(part) -> its text, its end column

    def view(self, part: dict[Any, Any], whole: dict[Any, Any]) -> bool:
        """Declare ``part`` (a non-empty entry) ``whole`` less some of its pairs: its keys
        are some of whole's, in whole's order, each with the very object whole holds.
        False, and nothing declared, when it is not so."""
        if not part:
            return False
        pairs = iter(whole.items())
        for key, value in part.items():
            for whole_key, whole_value in pairs:
                if whole_key == key:
                    if whole_value is not value:
                        return False
                    break
            else:
                return False
        self.views[id(whole)] = part
        return True


class _Writer:
    __slots__ = ("column", "memo", "parts", "whitespace")

    def __init__(self, memo: Shared | None = None) -> None:
        self.parts: list[str] = []
        self.column = 0
        self.whitespace = True
        self.memo = memo

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.column += len(text)

    def newline(self, indent: int) -> None:
        self.parts.append("\n" + " " * indent)
        self.column = indent
        self.whitespace = True


def dump(data: Any, memo: Shared | None = None) -> str | None:
    """The YAML text of a non-empty mapping, or None if only ruamel can write it exactly.

    ``memo``, shared by the documents of one record written two ways: the entries (the
    mappings of a top-level list) it declares parts of others are not written again, their
    text is taken from their whole's (see :class:`Shared`)."""
    if type_of(data) is not dict or not data:
        return None
    writer = _Writer(memo)
    try:
        _mapping(writer, data, 0)
    except _GiveUp:
        return None
    writer.parts.append("\n")
    return "".join(writer.parts)


def _mapping(w: _Writer, mapping: dict[Any, Any], indent: int) -> None:
    """A key starts at ``indent`` whatever came before it (after a newline, after ``- ``,
    or at the document's start), so a pair's text depends on nothing but the pair: an
    entry's part is the text of some of its pairs, joined as the entry joins them."""
    part: dict[Any, Any] | None = None
    if w.memo is not None and indent == ENTRY_INDENT:
        made = w.memo.texts.get(id(mapping))
        if made is not None:  # a part, made as its whole was written
            w.parts.append(made[0])
            w.column, w.whitespace = made[1], False
            return
        part = w.memo.views.get(id(mapping))
    parts = w.parts
    # a job's entries repeat most of their one-line pairs (``status: ok``): made once;
    # the status's are mostly unique (names, changeIds): made each time
    lines = _LINES if w.memo is not None else None
    line_break = "\n" + " " * indent
    runs: list[str] = []  # the part's runs of pairs, each joined
    run = -1  # where the part's current run starts in parts (-1: not in one)
    end = indent  # the column after the part's last pair
    first = True
    for key, value in mapping.items():
        if first:
            first = False
        else:
            parts.append(line_break)
        if part is not None:
            if key in part:  # the same object (Shared.view)
                if run < 0:
                    run = len(parts)
            elif run >= 0:  # the run ended before this pair's line break
                runs.append("".join(parts[run:-1]))
                run = -1
        kind = type_of(value)
        line = None
        if kind is str and lines is not None:
            line = lines.get((key, value, indent))
            if line is None:
                line = _one_line(key, kind, value, indent)
                if line is not None:
                    if len(lines) >= _PAIRS_MAX:
                        lines.clear()
                    lines[(key, value, indent)] = line
        elif kind in _SCALARS:
            line = _one_line(key, kind, value, indent)
        if line is not None:
            parts.append(line)
            w.column = indent + len(line)
            w.whitespace = False
            if run >= 0:
                end = w.column
            continue
        w.column, w.whitespace = indent, True
        _pair(w, key, value, indent)
        if run >= 0:
            end = w.column
    if part is not None and w.memo is not None:
        if run >= 0:
            runs.append("".join(parts[run:]))
        w.memo.texts[id(part)] = (line_break.join(runs), end)


#: the text of a pair whose value is a scalar or a mapping of scalars, by key, value and
#: indent (a pair always starts at its indent, so its text depends on nothing else):
#: records repeat most of theirs (``status: ok``, ``readyState: {local: ok}``)
_PAIRS: dict[tuple[Any, ...], tuple[str, int]] = {}
_PAIRS_MAX = 20_000
_SCALARS = frozenset({str, int, bool, type(None)})
_SHORT = 160  # longer strings are seldom repeated: not kept


def _pair(w: _Writer, key: Any, value: Any, indent: int) -> None:
    kind = type_of(value)
    if kind in _SCALARS:
        if kind is str and len(value) > _SHORT:
            _emit_pair(w, key, value, indent)
            return
        cached: Any = (key, kind, value, indent)
    elif kind is dict and 0 < len(value) <= 4:
        cached = _flat(value)
        if cached is None:
            _emit_pair(w, key, value, indent)
            return
        cached = (key, cached, indent)
    else:
        _emit_pair(w, key, value, indent)
        return
    found = _PAIRS.get(cached)
    if found is None:
        alone = _Writer()
        alone.column = indent
        _emit_pair(alone, key, value, indent)
        found = ("".join(alone.parts), alone.column)
        if len(_PAIRS) >= _PAIRS_MAX:
            _PAIRS.clear()
        _PAIRS[cached] = found
    w.parts.append(found[0])
    w.column = found[1]
    w.whitespace = False


#: the text of a pair whose value is a string that fits its line, by key, value and
#: indent, in the documents of a record written with a memo (a job's files)
_LINES: dict[tuple[Any, str, int], str] = {}
#: keys known to be written plain (a record's few dozen names)
_PLAIN_KEYS: set[str] = set()


def _one_line(key: Any, kind: type[Any], value: Any, indent: int) -> str | None:
    """The text of a scalar pair that fits on its line, laid out as :func:`_emit_pair`
    lays it out (``key: value``, quoted where ruamel quotes), or None for the general road.
    Most of a record's values are unique (changeIds, targets, digests): built here, they
    neither pass through a writer of their own nor push the repeated pairs out of
    :data:`_PAIRS`."""
    if key not in _PLAIN_KEYS:
        if type(key) is not str or _style(key) != "plain" or len(key) > WIDTH:
            return None
        if len(_PLAIN_KEYS) < _PAIRS_MAX:
            _PLAIN_KEYS.add(key)
    room = WIDTH - indent - len(key) - 2  # what is left after ``key: ``
    if value is None:
        return key + ":"
    if kind is bool:
        return key + (": true" if value else ": false")
    if kind is int:
        return f"{key}: {value}"
    style = _style(value)
    if style == "plain":
        return key + ": " + value if len(value) <= room else None
    if style == "single":
        quoted = value.replace("'", "''")
        return key + ": '" + quoted + "'" if len(quoted) + 2 <= room else None
    return None


def _flat(mapping: dict[Any, Any]) -> tuple[Any, ...] | None:
    """A mapping of short scalars as a key for :data:`_PAIRS` (with the values' types:
    ``True == 1``), or None."""
    items: list[tuple[Any, type[Any], Any]] = []
    for key, value in mapping.items():
        kind = type_of(value)
        if kind not in _SCALARS or (kind is str and len(value) > _SHORT):
            return None
        items.append((key, kind, value))
    return tuple(items)


def _emit_pair(w: _Writer, key: Any, value: Any, indent: int) -> None:
    if not isinstance(key, str) or len(key) > WIDTH or _style(key) != "plain":
        raise _GiveUp
    w.put(key + ":")
    w.whitespace = False
    if value is None:
        return
    kind = type_of(value)
    if kind is dict:
        if not value:
            w.put(" {}")
            return
        w.newline(indent + 2)
        _mapping(w, value, indent + 2)
    elif kind is list:
        if not value:
            w.put(" []")
            return
        w.newline(indent)
        _sequence(w, value, indent)
    else:
        _scalar(w, value, indent + 2)


def _sequence(w: _Writer, items: list[Any], indent: int) -> None:
    for index, item in enumerate(items):
        if index:
            w.newline(indent)
        w.put("-")
        w.whitespace = False
        kind = type_of(item)
        if item is None:
            w.put(" ")
        elif kind is dict:
            w.put(" ")
            if item:
                _mapping(w, item, indent + 2)
            else:
                w.put("{}")
        elif kind is list:
            if item:
                raise _GiveUp
            w.put(" []")
        else:
            _scalar(w, item, indent + 2)


def _scalar(w: _Writer, value: Any, indent: int) -> None:
    if value is True or value is False:
        w.put(" true" if value else " false")
    elif type(value) is int:
        w.put(f" {value}")
    elif type(value) is float and _plain_float(value):
        w.put(f" {value!r}")
    elif type(value) is str:
        style = _style(value)
        if style == "plain":
            _plain(w, value, indent)
        elif style == "single":
            _single_quoted(w, value, indent)
        else:
            raise _GiveUp
    else:
        raise _GiveUp
    w.whitespace = False


def _plain_float(value: float) -> bool:
    """Finite floats whose repr ruamel writes unchanged (0.004, 12.5; not 1e-05 or inf)."""
    text = repr(value)
    return "." in text and "e" not in text and "n" not in text


@lru_cache(maxsize=65536)
def _style(text: str) -> str:
    """'plain', 'single' (quoted) or 'other' (left to ruamel), as ruamel would choose."""
    if not text or not _PRINTABLE.issuperset(text):
        return "single" if text == "" else "other"
    plain = not (
        text[0] == " "
        or text[-1] == " "
        or text.startswith(("---", "..."))
        or _has_block_indicator(text)
        or not _resolves_to_str(text)
    )
    if plain:
        return "plain"
    return "other" if "'" in text else "single"  # ruamel double-quotes those


def _has_block_indicator(text: str) -> bool:
    first = text[0]
    followed_by_space = len(text) == 1 or text[1] == " "
    if first in _INDICATORS or (first in "?:-" and followed_by_space):
        return True
    return ": " in text or " #" in text or text.endswith(":")


def _resolves_to_str(text: str) -> bool:
    return implicit_type(text) == "str"


def _plain(w: _Writer, text: str, indent: int) -> None:
    """ruamel's folding of plain scalars: a word that would pass the width starts a line,
    and a single space once past it becomes the line break."""
    if not w.whitespace:
        w.put(" ")
    w.whitespace = False
    if w.column + len(text) <= WIDTH:  # fits: no fold point can trigger
        w.put(text)
        return
    parts, column, line_break = w.parts, w.column, "\n" + " " * indent
    for token in _RUNS.split(text):
        if not token:
            continue
        if token[0] == " ":
            if len(token) == 1 and column >= WIDTH:
                parts.append(line_break)
                column = indent
            else:
                parts.append(token)
                column += len(token)
        else:
            if len(token) + column > WIDTH and column > indent:
                parts.append(line_break)
                column = indent
            parts.append(token)
            column += len(token)
    w.column = column


def _single_quoted(w: _Writer, text: str, indent: int) -> None:
    """ruamel's folding of single-quoted scalars: a single space past the width breaks."""
    w.put("'" if w.whitespace else " '")
    quoted = text.replace("'", "''")
    if w.column + len(quoted) + 1 <= WIDTH:  # fits: no fold point can trigger
        w.put(quoted + "'")
        return
    parts, column, line_break = w.parts, w.column, "\n" + " " * indent
    if "  " not in text and text[0] != " " and text[-1] != " ":
        w.column = _single_spaced(parts, quoted.split(" "), column, line_break, indent) + 1
        parts.append("'")
        return
    position, last = 0, len(text)
    for token in _RUNS.split(text):
        if not token:
            continue
        size = len(token)
        if token[0] == " ":
            if size == 1 and column > WIDTH and position != 0 and position + 1 != last:
                parts.append(line_break)
                column = indent
            else:
                parts.append(token)
                column += size
        else:
            if "'" in token:
                token = token.replace("'", "''")
            parts.append(token)
            column += len(token)
        position += size
    parts.append("'")
    w.column = column + 1


def _single_spaced(parts: list[str], words: list[str], column: int, line_break: str,
                   indent: int) -> int:
    """Words that single spaces separate (none at either end), folded as
    :func:`_single_quoted` folds them: a space met past the width becomes the line break.
    Each line is joined once instead of a part per word and space (a record's ``summary``,
    one a task, is most of a job file's folding). The column after the last word."""
    line = [words[0]]
    column += len(words[0])
    for word in words[1:]:
        if column > WIDTH:
            parts.append(" ".join(line))
            parts.append(line_break)
            line = [word]
            column = indent + len(word)
        else:
            line.append(word)
            column += 1 + len(word)
    parts.append(" ".join(line))
    return column
