"""Replace top-level sections of an ensemble's text, leaving every other byte alone.

A job changes only ``status``, ``lastJob`` and ``jobsLog``. Rewriting just those lines
keeps the user's spec exactly as typed (indentation, quoting, comments, long lines) and
avoids parsing and re-emitting the whole document in ruamel's round trip. It applies only
when the text is plainly laid out: every top-level key a simple name at column 0, in the
order the parser saw them, and no comment, anchor, tag or column-0 line inside a section
being replaced. Otherwise :func:`replace` returns None and the caller takes the round trip.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: a top-level key: a simple name at column 0 (the text is scanned with a newline before it)
_TOP_KEYS = re.compile(r"\n([A-Za-z_][\w.-]*)[ \t]*:(?=[ \t\n]|\Z)")
#: a column-0 line that is no top-level key, comment or blank line (``...``, ``---``)
_STRAY = re.compile(r"\n(?![A-Za-z_][\w.-]*[ \t]*:(?:[ \t\n]|\Z))[^ \t\n#]")
_UNSAFE = re.compile(r"[#&!]")  # a comment, an anchor others may alias, a tag


def replace(text: str, keys: Iterable[str], sections: Mapping[str, str]) -> str | None:
    """``text`` with each of ``sections`` (key -> YAML text of ``{key: value}``) swapped
    in for that top-level key, appended at the end when the key is new; None when the text
    is not laid out plainly enough to do it safely. ``keys`` are the top-level keys the
    parser found in ``text``, in order. Lines end at ``\\n`` only, as YAML's do; each
    check is one scan of the text (a 10 000-instance status is 100 000 lines)."""
    if text.startswith("\ufeff"):  # a byte order mark (Windows editors): kept
        replaced = replace(text[1:], keys, sections)
        return None if replaced is None else "\ufeff" + replaced
    if "\r" in text:  # CRLF line ends (git's core.autocrlf): kept, the sections get them too
        unix = text.replace("\r\n", "\n")
        if "\r" in unix or unix.count("\n") != text.count("\r\n"):
            return None  # a lone carriage return, or mixed line ends
        replaced = replace(unix, keys, sections)
        return None if replaced is None else replaced.replace("\n", "\r\n")
    scanned = "\n" + text  # every line, the first too, starts after a newline
    starts = [(m.group(1), m.start()) for m in _TOP_KEYS.finditer(scanned)]
    if [key for key, _ in starts] != list(keys):
        return None
    if starts and _STRAY.search(scanned, starts[0][1] + 1):
        return None  # a document marker (``...``, ``---``): a section after it is lost
    out: list[str] = []
    cursor = 0
    for n, (key, start) in enumerate(starts):
        if key not in sections:
            continue
        end = starts[n + 1][1] if n + 1 < len(starts) else len(text)
        newline = text.find("\n", start, end)
        body_start = end if newline < 0 else newline + 1
        body = text[body_start:end]  # no column-0 line but comments: _STRAY saw to that
        if _UNSAFE.search(text, start, body_start) or "#" in body or "&" in body:
            return None
        out += [text[cursor:start], sections[key], _trailing_blank_lines(body)]
        cursor = end
    out.append(text[cursor:])
    result = "".join(out)
    if result and not result.endswith("\n"):
        result += "\n"
    seen = {key for key, _ in starts}
    return result + "".join(text for key, text in sections.items() if key not in seen)


def _trailing_blank_lines(body: str) -> str:
    """The blank lines that end a section's body (kept after its new text)."""
    content = len(body.rstrip(" \t\n"))
    if not content:
        return body
    newline = body.find("\n", content)  # the end of the last line that holds something
    return body[newline + 1:] if newline >= 0 else ""
