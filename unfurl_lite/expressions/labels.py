"""Unfurl's pure string functions: ``to_label`` and its DNS, Kubernetes and Google Cloud
flavours, ``urljoin``, ``generate_string``; also Jinja2 filters.

They compute exactly what Unfurl 1.2.0 computes (the same truncation and the same
digests), since a label names a resource that must keep its name across tools.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import secrets
import string
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from unfurl_lite.errors import ExpressionError

if TYPE_CHECKING:
    from unfurl_lite.model.narrow import YAMLValue

LABEL_DEFAULTS: dict[str, Any] = {
    "allowed": r"\w", "max": 63, "case": "any", "replace": "", "start": "a-zA-Z",
    "start_prepend": "x", "sep": "", "digest": None, "digestlen": -1,
}
FLAVOURS: dict[str, dict[str, Any]] = {
    "to_label": {},
    "to_dns_label": {"allowed": "[a-zA-Z0-9-]", "start": "[a-zA-Z]", "replace": "--",
                     "case": "lower", "end": "[a-zA-Z0-9]", "max": 63},
    "to_kubernetes_label": {"allowed": r"\w.-", "case": "any", "replace": "__",
                            "start": "[a-zA-Z0-9]", "end": "[a-zA-Z0-9]", "max": 63},
    "to_googlecloud_label": {"allowed": r"\w-", "case": "lower", "replace": "__",
                             "start": "[a-zA-Z]", "max": 63},
}
LABEL_OPTIONS = frozenset({*LABEL_DEFAULTS, "end"})
#: Unfurl's own parameters of its label functions, which do nothing when a job runs
#: (``eager`` is for its Python DSL; ``_wrapper``, to_label's, names the flavour)
INERT_OPTIONS = {"to_label": frozenset({"eager", "_wrapper"})}
_INERT_FLAVOUR_OPTIONS = frozenset({"eager"})


def inert_options(flavour: str) -> frozenset[str]:
    return INERT_OPTIONS.get(flavour, _INERT_FLAVOUR_OPTIONS)


def label(flavour: str, value: Any, options: Mapping[str, Any]) -> Any:
    """``to_label``-style conversion of a string, a list (joined with ``sep``) or a mapping
    (its keys and values)."""
    inert = inert_options(flavour)
    unknown = set(options) - LABEL_OPTIONS - inert
    if unknown:
        raise ExpressionError(f"{flavour}: unknown option(s) {', '.join(sorted(unknown))}",
                              hint="the options are: " + ", ".join(sorted(LABEL_OPTIONS)))
    chosen = {k: v for k, v in options.items() if k not in inert}
    return _label(value, {**FLAVOURS[flavour], **chosen})


def _digest(text: str, case: str, salt: str | None) -> str:
    sha = hashlib.sha1(text.encode("utf-8"))
    if salt:
        sha.update(salt.encode("utf-8"))
    if case == "any":
        return (base64.urlsafe_b64encode(sha.digest()).decode().strip("=")
                .replace("_", "").replace("-", ""))
    encoded = base64.b32encode(sha.digest()).decode().strip("=")
    return encoded.lower() if case == "lower" else encoded.upper()


def _middle_cut(text: str, replace: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = (limit - len(replace)) / 2
    if half <= 4:
        return text[:limit]
    return text[: math.ceil(half)] + replace + text[-math.floor(half):]


_BRACKETS = re.compile(r"^\[(.*)\]$")


def _char_class(chars: str) -> str:
    """A character class as given (``a-z`` or ``[a-z]``), checked so it stays one (a
    ``[`` inside is one of its characters, a ``]`` would end it)."""
    inner = _BRACKETS.sub(r"\1", chars)
    if re.search(r"(?<!\\)\]", inner):
        raise ExpressionError(f"to_label: {chars!r} is not a character class",
                              hint="give characters and ranges, such as 'a-z0-9' or '[a-z]'")
    return inner


def _label(value: YAMLValue, options: dict[str, Any]) -> Any:
    """Unfurl's ``to_label`` of one value: mappings and lists label each item, text is cut to
    ``max`` with a digest so that distinct long names stay distinct."""
    opts = {**LABEL_DEFAULTS, **options}
    case, salt, replace = opts["case"], opts["digest"], opts["replace"]
    if isinstance(value, Mapping):
        inner = {k: v for k, v in options.items() if k != "digest"}
        return {_label(k, inner): _label(v, {**inner, "digest": salt})
                for k, v in value.items() if v is not None}
    limit = int(opts["max"])
    if limit < 1:
        raise ExpressionError("to_label: max must be at least 1")
    digest_len = opts["digestlen"]
    if not isinstance(digest_len, int):
        raise ExpressionError(f"to_label: digestlen must be a number, not {digest_len!r}")
    if digest_len == -1:
        digest_len = 2 if limit < 32 else 3
    max_digest = min(limit, digest_len) if digest_len else 0
    if isinstance(value, list):
        return _list_label(value, opts, limit, max_digest)
    if not isinstance(value, str):
        return value
    start = _char_class(str(opts["start"]))
    allowed = _char_class(str(opts["allowed"]))
    text = opts["start_prepend"] + value if value and re.match(f"[^{start}]", value[0]) else value
    if len(text) > limit:
        replace = ""
    text = re.sub(f"[^{allowed}]", replace, text)
    if opts.get("end") is not None:
        end = _char_class(str(opts["end"]))
        while text and re.match(f"[^{end}]", text[-1]):
            text = text[:-1]
    if case == "lower":
        text = text.lower()
    elif case == "upper":
        text = text.upper()
    if max_digest and (salt is not None or len(text) > limit):
        limit -= min(limit, max_digest)
        return _middle_cut(text, opts["replace"], limit) + _digest(value, case, salt)[:max_digest]
    return _middle_cut(text, opts["replace"], limit)


def _list_label(items: list[Any], opts: dict[str, Any], limit: int, max_digest: int) -> str:
    if not items:
        return ""
    sep, case, salt = opts["sep"], opts["case"], opts["digest"]
    if not isinstance(sep, str):
        raise ExpressionError(f"to_label: sep must be text, not {sep!r}")
    room = limit - min(len(sep) * (len(items) - 1), limit - 1)
    each = max(room // len(items), 1)
    texts = [str(item) for item in items]
    inner = {k: v for k, v in opts.items() if k not in ("digest", "digestlen", "max")}
    parts = [_label(t, {**inner, "digestlen": 0, "max": 9999}) for t in texts]
    if sum(map(len, parts)) > room or salt is not None:
        spare = sum(max(each - len(p), 0) for p in parts)
        each += spare // len(parts)
        parts = [_middle_cut(p, opts["replace"], each) for p in parts]
        if max_digest:
            limit -= len(sep) + max_digest
            digest = _digest("".join(texts), case, salt)[:max_digest]
            if limit <= 0:
                return digest
            return sep.join(parts)[:limit] + sep + digest
    return sep.join(parts)[:limit]


def urljoin(scheme: Any, host: Any, port: Any = None, path: Any = None, query: Any = None,
            fragment: Any = None) -> str | None:
    """``[scheme, host, port?, path?, query?, fragment?]`` as a URL: default ports left
    out, path, query and fragment escaped; null when everything is empty."""
    if not scheme and not host and not path and not query and not fragment:
        return None
    default = (scheme == "https" and int(port) == 443) or (scheme == "http" and int(port) == 80) \
        if port else False
    netloc = f"{host}:{port}" if port and not default else (host or "")
    path = quote(str(path)) if path else path
    if netloc and path and path[0] != "/":
        path = "/" + path
    query_text = "?" + quote_plus(str(query)) if query else ""
    fragment_text = "#" + quote(str(fragment)) if fragment else ""
    prefix = f"{scheme}:" if scheme else ""
    if netloc:
        prefix += "//"
    return prefix + str(netloc) + (path or "") + query_text + fragment_text


_PUNCTUATION = "%()*+,-./<>?=^_~"


def _random_text(count: int, prefix: str = "uv", extra: str | None = None,
                 valid: str = "", start: str = string.ascii_letters) -> str:
    if count > 4096:
        raise ExpressionError("generate_string: at most 4096 characters")
    valid = valid or string.ascii_letters + string.digits
    source = valid + (_PUNCTUATION if extra is None else extra)
    first = start or valid
    rng = secrets.SystemRandom()
    return prefix + "".join(rng.choice(source if i else first) for i in range(count))


def generate_string(preset: str = "", len: int = 0, ranges: Any = (), **_: Any) -> str:
    """Unfurl's random strings: ``preset: number`` digits, ``password`` letters and digits
    (at least one digit), else letters, digits and some punctuation, or ``ranges``."""
    if preset == "number":
        return _random_text(len or 1, valid=string.digits, start="")
    if preset == "password":
        text = ""
        while not re.search(r"\d", text):
            text = _random_text(len or 15, "", "", start="")
        return text
    extra = None
    valid = ""
    if ranges:
        for low, high in ranges:
            first = ord(low) if isinstance(low, str) else int(low)
            last = ord(high) if isinstance(high, str) else int(high)
            valid += "".join(chr(i) for i in range(first, min(last, first + 1024)))
        extra = ""
    return _random_text(len or 10, "", extra, valid, start="")
