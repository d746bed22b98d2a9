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

_TOP_KEY = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]|$)")
_UNSAFE = re.compile(r"[#&!]")  # a comment, an anchor others may alias, a tag


def replace(text: str, keys: Iterable[str], sections: Mapping[str, str]) -> str | None:
    """``text`` with each of ``sections`` (key -> YAML text of ``{key: value}``) swapped
    in for that top-level key, appended at the end when the key is new; None when the text
    is not laid out plainly enough to do it safely. ``keys`` are the top-level keys the
    parser found in ``text``, in order."""
    if "\r" in text:  # CRLF line ends (git's core.autocrlf): kept, the sections get them too
        unix = text.replace("\r\n", "\n")
        if "\r" in unix or unix.count("\n") != text.count("\r\n"):
            return None  # a lone carriage return, or mixed line ends
        replaced = replace(unix, keys, sections)
        return None if replaced is None else replaced.replace("\n", "\r\n")
    lines = text.splitlines(keepends=True)
    starts = [(m.group(1), i) for i, line in enumerate(lines) if (m := _TOP_KEY.match(line))]
    if [key for key, _ in starts] != list(keys):
        return None
    if starts and any(_stray(line) for line in lines[starts[0][1]:]):
        return None  # a document marker (``...``, ``---``): a section after it is lost
    bounds = {
        key: (start, starts[n + 1][1] if n + 1 < len(starts) else len(lines))
        for n, (key, start) in enumerate(starts)
    }
    out: list[str] = []
    cursor = 0
    for key, (start, end) in bounds.items():
        if key not in sections:
            continue
        body = lines[start + 1 : end]
        if _UNSAFE.search(lines[start]) or any(
            "#" in line or "&" in line or line[:1].strip() for line in body
        ):
            return None
        trailing = len(body) - len(_rstrip_blank(body))
        out += lines[cursor:start]
        out.append(sections[key])
        out += body[len(body) - trailing :]
        cursor = end
    out += lines[cursor:]
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    out += [text for key, text in sections.items() if key not in bounds]
    return "".join(out)


def _stray(line: str) -> bool:
    """A column-0 line that is no top-level key, comment or blank line."""
    return bool(line[:1].strip()) and line[0] != "#" and _TOP_KEY.match(line) is None


def _rstrip_blank(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end]
