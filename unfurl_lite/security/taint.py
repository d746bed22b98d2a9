"""Secrets as types: a secret stays wrapped (:class:`Sensitive`) through every template
that reads it, and text built from one is :class:`Tainted`, so each write boundary
(:mod:`~unfurl_lite.security.redaction`) can tell what to redact.

While a template renders, its *render scope* notes whether it read a secret and
collects the pieces derived from one (``pw[2:9]``): those pieces are then secrets of the
render too, redacted wherever they turn up.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from unfurl_lite.security import redaction


class Sensitive(str):
    """A secret string: it renders as itself for the operation and as REDACTED in records."""

    def __repr__(self) -> str:
        return redaction.REDACTED

    def __getitem__(self, key: Any) -> Any:
        """A slice (``pw[2:9]``, which jinja does not route through the sandbox) is a
        secret too."""
        return derived(str.__getitem__(self, key))


class Tainted(Sensitive):
    """Text a template built from a secret (``echo {{ password }}``): not itself a secret,
    so records keep its shape with each secret in it replaced."""


_read_secret: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "unfurl_lite_tainted", default=None
)
_scope_secrets: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "unfurl_lite_render_secrets", default=None
)


@contextlib.contextmanager
def render_scope(secrets: set[str]) -> Iterator[list[bool]]:
    """The scope of one render: yields its flag (non-empty once a secret was read);
    pieces derived from a secret are added to ``secrets``."""
    flag: list[bool] = []
    flag_token = _read_secret.set(flag)
    secrets_token = _scope_secrets.set(secrets)
    try:
        yield flag
    finally:
        _scope_secrets.reset(secrets_token)
        _read_secret.reset(flag_token)


def unmarked_render() -> bool:
    """Whether a render is under way that has not read a secret yet (so it is worth
    looking whether a value it reads holds one)."""
    flag = _read_secret.get()
    return flag is not None and not flag


def note_secret_read() -> None:
    """The render under way read a secret: its result and its errors are secret-bearing."""
    if unmarked_render():
        _read_secret.get().append(True)  # type: ignore[union-attr]


def scope_secrets() -> set[str]:
    """The secrets of the render under way (a throwaway set outside any render)."""
    found = _scope_secrets.get()
    return found if found is not None else set()


def mark_secret(value: Any) -> Sensitive:
    """The value as a secret of the render under way: redacted wherever it is written, and
    the render counts as one that read a secret (its errors are withheld)."""
    note_secret_read()
    secret = Sensitive(str(value))
    scope_secrets().add(str(secret))
    return secret


def derives(value: Any) -> bool:
    """Whether a value handed to a filter, method or operator is (or lists) a secret."""
    if isinstance(value, Sensitive):
        return True
    if isinstance(value, list | tuple):
        return any(isinstance(v, Sensitive) for v in value[:1000])
    return False


def derived(value: Any) -> Any:
    """A value computed from a secret: strings in it become Tainted and, when long enough
    to search for, known secrets of the render, so the pieces (``pw[2:9]``, ``pw | list |
    join('-')``) are redacted wherever they turn up: records, command output, errors."""
    if isinstance(value, Sensitive):
        return value
    if isinstance(value, str):
        tainted = Tainted(value)
        note_secret_read()
        if len(value) >= redaction.MIN_SECRET_LENGTH:
            scope_secrets().add(value)
        return tainted
    if isinstance(value, list):
        return [derived(v) for v in value]
    if isinstance(value, tuple):
        return tuple(derived(v) for v in value)
    return value


def tainted_copy(value: Any) -> Any:
    """Every scalar of a value built by a render that read a secret, as Tainted text: the
    simple sound rule (a resultTemplate's parsed attributes cannot say which came from
    the secret)."""
    if isinstance(value, Mapping):
        return {k: tainted_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [tainted_copy(v) for v in value]
    if value is None or isinstance(value, Sensitive):
        return value
    return Tainted(str(value))


def secrets_in(value: Any) -> Iterator[str]:
    """Every secret inside a value (Tainted text is built from secrets, not one itself)."""
    if isinstance(value, Tainted):
        return
    if isinstance(value, Sensitive):
        yield str(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from secrets_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from secrets_in(v)
