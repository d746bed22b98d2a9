"""One-line flow collections of the everyday ensemble (``implementation: {className: Shell}``,
``targets: [a, b]``) read without a YAML parser, for :mod:`blockyaml`.

The subset: ``{key: value, ...}`` and ``[value, ...]`` on one line, nested a few levels,
with plain scalars made of letters, digits, spaces and ``_$./+@()=~-`` and quoted scalars
without escapes. Anything else (a colon or ``#`` inside a plain scalar, a key without a
value, a trailing comma, a complex key, an alias, a tag...) raises
:class:`NeedsFullLoader`: the full loader reads the document, and the property tests
hold the two to the same data.
"""

from __future__ import annotations

import re
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class NeedsFullLoader(Exception):
    """The document is outside the subset: read it with a full YAML loader."""


#: a token of a flow collection: an opening or closing bracket, a comma, a key's colon
#: (a space or the line's end after it), a double- or single-quoted scalar, a plain one
_TOKEN = re.compile(r"""\ *(?:
    ([\[\]{},])
  | (:)(?=\ |$)
  | "([^"\\]*)"
  | '((?:[^']|'')*)'
  | ([\w$./+()=~-](?:[\w$./+@()=~ -]*[\w$./+@()=~-])?)
)\ *""", re.X)
_END = re.compile(r"\ *(?:\ \#.*)?$")
MAX_NESTING = 8  # levels within the line: with the block levels, within the guard's depth


def read(text: str, scalar: Callable[[str], Any], key_type: Callable[[str], str]
         ) -> tuple[Any, int]:
    """The flow collection ``text`` (a trailing comment allowed) and how many nodes it
    made (containers and scalars: the guard's count)."""
    reader = _Reader(text, scalar, key_type)
    value = reader.collection(0)
    if not _END.match(text, reader.at):
        raise NeedsFullLoader("more after a flow collection")
    return value, reader.nodes


class _Reader:
    def __init__(self, text: str, scalar: Callable[[str], Any],
                 key_type: Callable[[str], str]) -> None:
        self.text = text
        self.scalar = scalar
        self.key_type = key_type
        self.at = 0
        self.nodes = 0

    def token(self) -> re.Match[str]:
        found = _TOKEN.match(self.text, self.at)
        if found is None or found.end() == self.at:
            raise NeedsFullLoader("a flow collection outside the subset")
        plain = found.group(5)
        if plain is not None and plain[0] == "-" and plain[1:2] in ("", " "):
            raise NeedsFullLoader("a flow entry starting with '- '")
        self.at = found.end()
        return found

    def collection(self, depth: int) -> Any:
        if depth > MAX_NESTING:
            raise NeedsFullLoader("flow collections nested deep")
        opening = self.token().group(1)
        if opening not in ("[", "{"):
            raise NeedsFullLoader("a flow collection outside the subset")
        self.nodes += 1
        closing = "]" if opening == "[" else "}"
        items: list[Any] = []
        mapping: dict[str, Any] = {}
        following = _TOKEN.match(self.text, self.at)
        if following is not None and following.group(1) == closing:
            self.at = following.end()
            return items if opening == "[" else mapping
        while True:
            if opening == "[":
                items.append(self.value(depth))
            else:
                key = self.key()
                if key in mapping:
                    raise NeedsFullLoader("a duplicate key")
                if self.token().group(2) != ":":
                    raise NeedsFullLoader("a flow key without ': '")
                mapping[key] = self.value(depth)
            separator = self.token().group(1)
            if separator == closing:
                return items if opening == "[" else mapping
            if separator != ",":
                raise NeedsFullLoader("a flow collection outside the subset")

    def key(self) -> str:
        found = self.token()
        self.nodes += 1
        plain, double, single = found.group(5), found.group(3), found.group(4)
        if plain is not None:
            if self.key_type(plain) != "str" or plain.startswith("..."):
                raise NeedsFullLoader("a key YAML reads as another type than a string")
            return plain
        name = double if double is not None else single.replace("''", "'") \
            if single is not None else None
        if name is None or not name.isprintable():
            raise NeedsFullLoader("a flow key outside the subset")
        return name

    def value(self, depth: int) -> Any:
        following = _TOKEN.match(self.text, self.at)
        if following is not None and following.group(1) in ("[", "{"):
            return self.collection(depth + 1)
        found = self.token()
        self.nodes += 1
        if found.group(5) is not None:
            return self.scalar(found.group(5))
        if found.group(3) is not None:
            return found.group(3)
        if found.group(4) is not None:
            return found.group(4).replace("''", "'")
        raise NeedsFullLoader("a flow value outside the subset")
