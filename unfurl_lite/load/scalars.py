"""What a plain scalar is under YAML 1.2's core schema, exactly as ruamel resolves it: the
one table the parsers type scalars by and the emitter asks before writing a string plain.

Its own module, apart from the parsers: a job writes its records (the emitter) without
reading any YAML when the parse cache answered its load.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TYPES = (
    ("bool", r"true|True|TRUE|false|False|FALSE"),
    ("float", r"""[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                | [-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
                | [-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
                | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)"""),
    ("int", r"[-+]?0b[0-1_]+ | [-+]?0o?[0-7_]+ | [-+]?[0-9_]+ | [-+]?0x[0-9a-fA-F_]+"),
    ("null", r"~ | null|Null|NULL"),
    ("timestamp", r"""[0-9]{4}-[0-9]{2}-[0-9]{2}
                    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[\ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}
                      (?:\.[0-9]*)?(?:[\ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"""),
    ("merge", r"<<"),
    ("value", r"="),
    ("yaml", r"! | & | \*"),
)
# ruamel tries a type only for the first characters it can start with; none starts with _
_IMPLICIT = re.compile(
    r"^(?!_)(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _TYPES) + r")$",
    re.X,
)


@lru_cache(maxsize=65536)
def implicit_type(text: str) -> str:
    """What a plain scalar ``text`` loads as under YAML 1.2: 'str', 'int', 'bool'..."""
    if text == "":
        return "null"
    match = _IMPLICIT.match(text)
    return "str" if match is None else str(match.lastgroup)
