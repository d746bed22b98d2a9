"""Ansible's core Jinja2 tests (``x is match('a')``, ``v is version('2', '<')``,
``result is failed``), as ansible-core 2.15 gives them; the ones that read the file system
are refused by name (:data:`REFUSED_TESTS`)."""

from __future__ import annotations

import math
import operator
import os
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.ansible_filters import _path, _text
from unfurl_lite.expressions.regex_filters import _flags, compiled
from unfurl_lite.model.narrow import is_list


def _result(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ExpressionError(f"the '{name}' test expects a dictionary")
    found: Mapping[str, Any] = value
    return found


def _changed(result: Any) -> bool:
    result = _result(result, "changed")
    if "changed" in result:
        return bool(result.get("changed"))
    items: object = result.get("results")
    return is_list(items) and any(_changed_item(r) for r in items)


def _changed_item(result: Any) -> bool:
    return isinstance(result, Mapping) and bool(_result(result, "changed").get("changed"))


#: the methods of a compiled pattern Ansible's ``regex`` test may call by ``match_type``
_MATCH_TYPES = ("search", "match", "fullmatch", "findall", "split", "finditer")


def _regex_test(kind: str) -> Callable[..., bool]:
    def test(value: Any = "", pattern: str = "", ignorecase: bool = False,
             multiline: bool = False, match_type: str = kind) -> bool:
        found = compiled(pattern, _flags(ignorecase, multiline))
        if match_type not in _MATCH_TYPES:
            raise ExpressionError(f"regex: match_type {match_type!r} is not a way to match",
                                  hint="one of " + ", ".join(_MATCH_TYPES))
        return bool(getattr(found, match_type)(_text(value)))
    return test


def _loose(version: str) -> list[Any]:
    parts = [p for p in re.split(r"(\d+|[a-z]+|\.)", version.lower()) if p and p != "."]
    return [int(p) if p.isdigit() else p for p in parts]


def _semantic(version: str) -> tuple[Any, ...]:
    found = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?",
                         version.strip())
    if not found:
        raise ExpressionError(f"invalid semantic version {version!r}")
    major, minor, patch, pre = found.groups()
    release = (int(major), int(minor), int(patch))
    if pre is None:
        return (*release, (1,))
    return (*release, (0, *[(0, int(p)) if p.isdigit() else (1, p) for p in pre.split(".")]))


def version_compare(value: Any, version: Any, operator_name: str = "eq", strict: Any = None,
                    version_type: Any = None) -> bool:
    names = {"==": "eq", "=": "eq", "eq": "eq", "<": "lt", "lt": "lt", "<=": "le",
             "le": "le", ">": "gt", "gt": "gt", ">=": "ge", "ge": "ge", "!=": "ne",
             "<>": "ne", "ne": "ne"}
    if not value or not version:
        raise ExpressionError("version: the versions to compare cannot be empty")
    if operator_name not in names:
        raise ExpressionError(f"version: invalid operator {operator_name!r}")
    kind = "strict" if strict else (version_type or "loose")
    if kind in ("semver", "semantic"):
        left, right = _semantic(_text(value)), _semantic(_text(version))
    elif kind in ("loose", "strict"):
        if kind == "strict" and not all(re.fullmatch(r"\d+\.\d+(\.\d+)?([ab]\d+)?", _text(v))
                                        for v in (value, version)):
            raise ExpressionError("version: not a strict version")
        left, right = _loose(_text(value)), _loose(_text(version))  # type: ignore[assignment]
    else:
        raise ExpressionError(f"version: version_type {kind!r} is not supported",
                              hint="use loose, strict, semver or semantic")
    try:
        return bool(getattr(operator, names[operator_name])(left, right))
    except TypeError:
        raise ExpressionError(f"version comparison of {value!r} and {version!r} failed") from None


def _truthy(value: Any, convert_bool: bool = False) -> bool:
    if convert_bool and isinstance(value, str | int | bool):
        text = str(value).lower()
        if text in ("yes", "on", "1", "true", "y", "t"):
            return True
        if text in ("no", "off", "0", "false", "n", "f", ""):
            return False
    return bool(value)


def _is_nan(x: Any) -> bool:
    try:
        return math.isnan(x)
    except TypeError:
        return False


#: the tests of one value, a result or a path (typed: each lambda's argument is any value)
_OF_ONE: dict[str, Callable[[Any], bool]] = {
    "failed": lambda r: bool(_result(r, "failed").get("failed", False)),
    "failure": lambda r: bool(_result(r, "failed").get("failed", False)),
    "succeeded": lambda r: not _result(r, "succeeded").get("failed", False),
    "success": lambda r: not _result(r, "success").get("failed", False),
    "successful": lambda r: not _result(r, "successful").get("failed", False),
    "reachable": lambda r: not _result(r, "reachable").get("unreachable", False),
    "unreachable": lambda r: bool(_result(r, "unreachable").get("unreachable", False)),
    "skipped": lambda r: bool(_result(r, "skipped").get("skipped", False)),
    "skip": lambda r: bool(_result(r, "skip").get("skipped", False)),
    "finished": lambda r: _result(r, "finished").get("finished", 1) == 1,
    "started": lambda r: _result(r, "started").get("started", 1) == 1,
    "abs": lambda p: os.path.isabs(_path(p)), "is_abs": lambda p: os.path.isabs(_path(p)),
    "urn": lambda v: _uri(v, ["urn"]),
    "vault_encrypted": lambda v: False,
}
#: the tests of a value and an argument (some optional)
_OF_TWO: dict[str, Callable[[Any, Any], bool]] = {
    "subset": lambda a, b: set(a) <= set(b), "issubset": lambda a, b: set(a) <= set(b),
    "superset": lambda a, b: set(a) >= set(b), "issuperset": lambda a, b: set(a) >= set(b),
    "contains": lambda seq, value: value in seq,
}


def _falsy(value: Any, convert_bool: bool = False) -> bool:
    return not _truthy(value, convert_bool)


def _parsed(value: Any) -> Any:
    try:
        return urlparse(value)
    except Exception:  # (Ansible's rule: what cannot be parsed is no URI)
        return None


def _uri(value: Any, schemes: Any = None) -> bool:
    """Ansible's ``uri``: anything ``urlparse`` takes (even text without a scheme), of one
    of ``schemes`` when they are given."""
    found = _parsed(value)
    return found is not None and (not schemes or found.scheme in schemes)


def _url(value: Any, schemes: Any = None) -> bool:
    found = _parsed(value) if _uri(value, schemes) else None
    return found is not None and bool(found.netloc or found.scheme in ("file", b"file"))


TESTS: dict[str, Callable[..., bool]] = {
    **_OF_ONE, **_OF_TWO,
    "changed": _changed, "change": _changed,
    "match": _regex_test("match"), "search": _regex_test("search"),
    "regex": _regex_test("search"),
    "version": version_compare, "version_compare": version_compare,
    "any": any, "all": all,
    "truthy": _truthy, "falsy": _falsy, "uri": _uri, "url": _url,
    "nan": _is_nan, "isnan": _is_nan,
}

#: Ansible's tests that read the file system, refused by name
REFUSED_TESTS = frozenset({"directory", "is_dir", "file", "is_file", "link", "is_link",
                           "exists", "link_exists", "same_file", "is_same_file", "mount",
                           "is_mount"})
