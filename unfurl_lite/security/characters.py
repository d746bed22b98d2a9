"""Names and fields that cannot fool a terminal or forge a record: control characters
(line breaks and escapes included) and bidirectional overrides are found here, for the
loader to refuse in names and for jobs.tsv to escape in fields."""

from __future__ import annotations

#: bidirectional overrides and isolates: they reorder what a terminal shows
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_control(char: str) -> bool:
    """A C0/C1 control character (tab and line breaks included) or a bidi override."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code < 0xA0 or char in _BIDI


def control_character(name: str) -> str | None:
    """The first control character in a name, shown escaped (``\\x1b``), or None."""
    if name.isprintable():
        return None
    for char in name:
        if is_control(char):
            return repr(char)[1:-1]
    return None
