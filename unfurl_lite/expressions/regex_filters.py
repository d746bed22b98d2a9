"""Ansible's regular-expression filters (``regex_replace``, ``regex_search``,
``regex_findall``, ``regex_escape``) and the pattern compiler its ``match``/``search``/
``regex`` tests share, as ansible-core 2.15 gives them; a pattern that could run for hours
is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.ansible_filters import _text


def _flags(ignorecase: Any, multiline: Any) -> int:
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


#: a group holding a quantifier, itself quantified (``(a+)+``, ``(\\w*\\s?)*``): such a
#: pattern can take exponential time on a short text, and a regex step cannot be stopped
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")


def compiled(pattern: Any, flags: int = 0) -> re.Pattern[str]:
    """A template's regular expression, refused when it could run for hours; it is text,
    as Python's ``re`` takes it under Ansible (a list or a number is an error there)."""
    if not isinstance(pattern, str):
        raise ExpressionError(f"a regular expression is text, not {type(pattern).__name__}: "
                              f"{pattern!r}")
    text = pattern
    if _NESTED_QUANTIFIER.search(text):
        raise ExpressionError(
            f"regular expression {text!r} repeats a repeated group, which can take "
            "exponential time; it is refused",
            hint="rewrite it without a quantifier on a group that has one, e.g. (a+)+ as a+")
    try:
        return re.compile(text, flags)
    except re.error as exc:
        raise ExpressionError(f"invalid regular expression {text!r}: {exc}") from None


def regex_replace(value: Any = "", pattern: str = "", replacement: str = "",
                  ignorecase: bool = False, multiline: bool = False) -> str:
    return compiled(pattern, _flags(ignorecase, multiline)).sub(replacement, _text(value))


def regex_findall(value: Any, regex: str, multiline: bool = False,
                  ignorecase: bool = False) -> list[Any]:
    return compiled(regex, _flags(ignorecase, multiline)).findall(_text(value))


def regex_search(value: Any, regex: str, *args: str, **kwargs: Any) -> Any:
    groups: list[Any] = []
    for arg in args:
        named = re.match(r"\\g<(\S+)>", arg)
        numbered = re.match(r"\\(\d+)", arg)
        if named:
            groups.append(named.group(1))
        elif numbered:
            groups.append(int(numbered.group(1)))
        else:
            raise ExpressionError("regex_search: unknown argument " + repr(arg))
    match = compiled(regex, _flags(kwargs.get("ignorecase"),
                                   kwargs.get("multiline"))).search(_text(value))
    if match is None:
        return None
    return [match.group(g) for g in groups] if groups else match.group()


def regex_escape(value: Any, re_type: str = "python") -> str:
    if re_type == "python":
        return re.escape(_text(value))
    if re_type == "posix_basic":
        return regex_replace(value, r"([].[^$*\\])", r"\\\1")
    raise ExpressionError(f"regex_escape: regex type {re_type!r} is not supported")


FILTERS: dict[str, Callable[..., Any]] = {
    "regex_replace": regex_replace, "regex_escape": regex_escape,
    "regex_search": regex_search, "regex_findall": regex_findall,
}
