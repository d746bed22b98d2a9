"""Tables that fit the terminal without breaking what people copy: ids (changeIds,
instance names, commits) and times are never wrapped or cut; other text is cut with an
ellipsis when the width runs out. Plain aligned text, fitted to the terminal, or in a pipe
to ``COLUMNS`` only when the environment sets it (a pipe has no width of its own, and
scripts read ``--json``)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

ELLIPSIS = "…"
GAP = 2  # spaces between plain-text columns
MIN_SHRUNK = 4  # a cut column keeps at least this many characters (with the ellipsis)


READABLE = 8  # a column that must give up more than to this is left out instead


@dataclass(frozen=True)
class Column:
    """A table column: its header, and whether its cells must be kept whole."""
    header: str
    keep: bool = False  # an id or a time: never wrapped, never cut
    #: gives up its width before the others (higher first), and is left out rather than
    #: cut below READABLE characters (an author, say, before a summary)
    give: int = 0
    #: a shorter form of a cell, used for the whole column when the table must be cut
    short: Callable[[str], str] | None = None


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, ending in an ellipsis when cut."""
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS if width > 0 else ""


def fit_widths(
    natural: list[int], keep: list[bool], total: int | None, gap: int = GAP,
    give: list[int] | None = None,
) -> list[int]:
    """Column widths within ``total`` (None: no limit): the cuttable column that gives
    first (then the widest) gives up a character at a time; kept columns never shrink,
    so the row may stay wider."""
    widths = list(natural)
    if total is None:
        return widths
    gives = give or [0] * len(widths)
    floor = [w if k else min(w, MIN_SHRUNK) for w, k in zip(natural, keep, strict=True)]
    excess = sum(widths) + gap * (len(widths) - 1) - total
    while excess > 0:
        candidates = [i for i, w in enumerate(widths) if w > floor[i]]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: (gives[i], widths[i]))
        widths[widest] -= 1
        excess -= 1
    return widths


def environment_width() -> int | None:
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def stream_width(stream: object) -> int | None:
    """The width to fit what goes to ``stream`` (stdout, stderr): its terminal's, or in a
    pipe ``COLUMNS`` when the environment sets it."""
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty() and os.environ.get("TERM") != "dumb":
        return terminal_width()
    return environment_width()


def terminal_width() -> int:
    import shutil  # start-up: keeps shutil (zlib, bz2, lzma) off a job in a pipe (`deploy -q`)

    return environment_width() or shutil.get_terminal_size().columns


def plain(
    title: str, columns: list[Column], rows: list[list[str]], total: int | None,
    bold_header: bool = False,
) -> str:
    """Aligned columns within ``total`` characters where the kept columns allow: columns
    with nothing in them go first, then the gap narrows, then cuttable text is cut, and
    last the rightmost cuttable columns are left out."""
    shown = list(range(len(columns)))
    natural = _natural(columns, rows)
    gap = GAP
    if total is not None and _width(natural, gap) > total:
        rows = [[c.short(v) if c.short else v for c, v in zip(columns, r, strict=True)]
                for r in rows]
        natural = _natural(columns, rows)
    if total is not None and _width(natural, gap) > total:
        shown = [i for i in shown if any(r[i] for r in rows)]
        for i in sorted((i for i in shown if columns[i].give), key=lambda i: -columns[i].give):
            if _fitted(columns, natural, shown, total, gap)[shown.index(i)] < min(
                    natural[i], READABLE):
                shown.remove(i)  # left out rather than cut unreadable
        if _width([natural[i] for i in shown], gap) > total:
            gap = 1  # a narrower gap before any text is cut
        cuttable = [i for i in shown if not columns[i].keep]
        while cuttable and _floor_width(columns, natural, shown, gap) > total:
            shown.remove(cuttable.pop())
    widths = _fitted(columns, natural, shown, total, gap)
    lines = [title] if title else []
    for n, row in enumerate([[c.header for c in columns], *rows]):
        cells = [cut(row[i], widths[k]).ljust(widths[k]) for k, i in enumerate(shown)]
        line = (" " * gap).join(cells).rstrip()
        lines.append("\x1b[1m" + line + "\x1b[0m" if n == 0 and bold_header else line)
    return "\n".join(lines)


def _natural(columns: list[Column], rows: list[list[str]]) -> list[int]:
    return [max(len(c.header), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]


def _fitted(columns: list[Column], natural: list[int], shown: list[int], total: int | None,
            gap: int) -> list[int]:
    return fit_widths([natural[i] for i in shown], [columns[i].keep for i in shown], total,
                      gap, [columns[i].give for i in shown])


def _floor_width(columns: list[Column], natural: list[int], shown: list[int], gap: int) -> int:
    return _width([natural[i] if columns[i].keep else min(natural[i], MIN_SHRUNK)
                   for i in shown], gap)


def _width(widths: list[int], gap: int) -> int:
    return sum(widths) + gap * (len(widths) - 1)


_DATE_TIME = re.compile(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)")


def wrap(text: str, total: int | None, indent: str = "  ") -> str:
    """A sentence wrapped at spaces within ``total``, never inside a word, an id or a
    date and time; continuation lines indented."""
    if total is None or len(text) <= total:
        return text
    import textwrap  # start-up: keeps textwrap (1 module) off tables's import

    protected = _DATE_TIME.sub("\\1\0\\2", text)
    body = protected.lstrip(" ")
    lead = protected[: len(protected) - len(body)]
    lines = textwrap.wrap(body, width=total, initial_indent=lead,
                          subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False)
    return "\n".join(line.replace("\0", " ") for line in lines)


def prose(text: str, total: int | None) -> str:
    """Each line of ``text`` wrapped as :func:`wrap` does, its continuation lines indented
    two more than its own (a plan's task, a footer line stay under their parent)."""
    if total is None:
        return text
    lines: list[str] = []
    for line in text.split("\n"):
        indent = line[: len(line) - len(line.lstrip(" "))]
        lines.append(wrap(line, total, indent + "  ") if line.strip() else line)
    return "\n".join(lines)
