"""Redaction at every write boundary: records, status, console, JSON.

A secret can reach output wrapped (:class:`~unfurl_lite.security.taint.Sensitive`), or as plain
text: a command's stderr, an error message quoting a value, an attribute parsed from a
``resultTemplate``, or a jinja filter's output (``{{ secret | upper }}``). So besides
replacing wrapped values, every string written is scanned for each known secret and the
common transforms of it that templates and shells produce.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from urllib.parse import quote, quote_plus

from unfurl_lite.security.taint import MIN_SECRET_LENGTH, REDACTED, Sensitive, Tainted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LEAK_WINDOW = 4  # a tainted value keeping this many characters of a secret is dropped whole


#: base64's two URL-safe characters in place of its standard ones (base64.urlsafe_b64encode)
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _b64encode(raw: bytes, urlsafe: bool) -> str:
    """base64.b64encode (or urlsafe_b64encode) as text, through binascii: base64 itself
    (with struct) is 40 functions a job would load for these two calls."""
    encoded = binascii.b2a_base64(raw, newline=False)
    return (encoded.translate(_URLSAFE) if urlsafe else encoded).decode()


def _b64(data: str, urlsafe: bool) -> list[str]:
    raw = data.encode("utf-8")
    encoded = _b64encode(raw, urlsafe)
    return [encoded, encoded.rstrip("="), *_b64_aligned(raw, urlsafe)]


#: a piece of base64 shorter than this is not looked for (it would match ordinary words)
B64_PIECE = 6


def _b64_aligned(raw: bytes, urlsafe: bool) -> list[str]:
    """What base64 of a longer text holding the secret always contains, wherever the
    secret starts in it (``base64("user:" + password)``, a prefix whose length is not a
    multiple of 3): for each of the 3 alignments, the characters that depend on the
    secret's bytes only (every group but those it shares with what comes before and
    after)."""
    pieces: list[str] = []
    for offset in range(3):
        encoded = _b64encode(b"\0" * offset + raw, urlsafe)
        whole_groups = (offset + len(raw)) // 3 * 4  # groups without a byte that follows
        piece = encoded[4 if offset else 0: whole_groups]
        if len(piece) >= B64_PIECE:
            pieces.append(piece)
    return pieces


@lru_cache(maxsize=1024)
def variants(secret: str) -> tuple[str, ...]:
    """The secret and what jinja filters, shells and encoders commonly turn it into."""
    # start-up: keeps html, shlex (2 modules) off `deploy`, `check`, `status` until variants() runs
    import html  # start-up: html.entities' table and shlex: for a job that knows a secret only
    import shlex

    forms = {
        secret,
        secret.upper(),
        secret.lower(),
        secret.title(),
        secret.capitalize(),
        secret.swapcase(),
        secret[::-1],
        secret.strip(),
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        html.escape(secret),
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        shlex.quote(secret),
        secret.encode("utf-8").hex(),
        *_b64(secret, urlsafe=False),
        *_b64(secret, urlsafe=True),
    }
    return tuple(sorted((f for f in forms if len(f) >= MIN_SECRET_LENGTH), key=len, reverse=True))


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """Every form of every secret long enough to look for, longest first."""
    return _all_forms(secrets)


def _all_forms(secrets: Iterable[str]) -> list[str]:
    forms = {f for s in secrets if len(s) >= MIN_SECRET_LENGTH for f in variants(s)}
    return sorted(forms, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every known secret, and every transform of one, replaced (also those
    a resumed job knows only by their digests, see security/digested.py)."""
    for form in _all_forms(secrets):
        if form in text:
            text = text.replace(form, REDACTED)
    hashed = getattr(secrets, "hashed", None)
    return _digested(text, hashed) if hashed else text


def _digested(text: str, hashed: Any) -> str:
    """``text`` with the forms known only by digests (security/digested.py) replaced."""
    spans = hashed.spans(text)
    if not spans:
        return text
    out: list[str] = []
    position = 0
    for start, length in spans:
        out += [text[position:start], REDACTED]
        position = start + length
    return "".join(out) + text[position:]


def _leaks(text: str, secret: str) -> bool:
    window = min(len(secret), LEAK_WINDOW)
    if window < MIN_SECRET_LENGTH:
        return False
    return any(secret[i : i + window] in text for i in range(len(secret) - window + 1))


def redact_tainted(text: str, secrets: Iterable[str]) -> str:
    """A value derived from a secret: keep its shape (``echo <<REDACTED>>``) when every
    secret in it is recognised, otherwise drop it whole."""
    known = [s for s in secrets if len(s) >= MIN_SECRET_LENGTH]
    cleaned = redact_text(text, known)
    if cleaned == text or any(_leaks(cleaned, s) for s in known):
        return REDACTED
    return cleaned


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``value`` safe to write anywhere."""
    known = secrets if isinstance(secrets, set | frozenset | list | tuple) else list(secrets)
    forms = _all_forms(known) if known else []  # once per value, not once per string in it
    hashed = getattr(known, "hashed", None) or None
    if not forms and not hashed:
        return _unmarked(value, known)
    return _redacted(value, known, forms, hashed)


_SCALARS = frozenset({int, float, bool, type(None)})


def _unmarked(value: Any, known: Iterable[str]) -> Any:
    """``redact`` when the job knows no secret: plain text is safe as it is, so only marked
    values (Sensitive, Tainted) and objects with a record form need a look. The common
    plain types are told apart by their exact type, without the general walk's checks."""
    kind = type(value)
    if kind is str or kind in _SCALARS:
        return value
    if kind is dict:
        return {k: _unmarked(v, known) for k, v in value.items()}
    if kind is list:
        return [_unmarked(v, known) for v in value]
    return _redacted(value, known, [], None)


def _redacted(value: Any, known: Iterable[str], forms: list[str], hashed: Any) -> Any:
    """The general walk: every string looked at for each form of each secret."""

    def text(item: str) -> str:
        for form in forms:
            if form in item:
                item = item.replace(form, REDACTED)
        return _digested(item, hashed) if hashed else item

    def walk(item: Any) -> Any:
        if isinstance(item, Tainted):
            return redact_tainted(str(item), known)
        if isinstance(item, Sensitive):
            return REDACTED
        if isinstance(item, str):
            item = str(item)  # (a subclass, such as a temporary file's path, as plain text)
            return text(item) if forms or hashed else item
        if isinstance(item, Mapping):
            return {(text(k) if isinstance(k, str) else k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        form = getattr(item, "record_form", None)
        if callable(form):  # an instance a query gave, written as Unfurl writes it
            return walk(form())
        return item

    return walk(value)
