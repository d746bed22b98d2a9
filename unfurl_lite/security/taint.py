"""Secrets as types: a secret stays wrapped (:class:`Sensitive`) through every template
that reads it, and text built from one is :class:`Tainted`, so each write boundary
(:mod:`~unfurl_lite.security.redaction`) can tell what to redact. The marker a
secret becomes, :data:`REDACTED`, is defined here, below redaction, which imports it.

While a template renders, its *render scope* notes whether it read a secret and
collects the pieces derived from one (``pw[2:9]``): those pieces are then secrets of the
render too, redacted wherever they turn up.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: what stands in for a secret wherever one would be written (records, status, output)
REDACTED = "<<REDACTED>>"
MIN_SECRET_LENGTH = 3  # shorter values would redact ordinary words; documented


class Sensitive(str):
    """A secret string: it renders as itself for the operation and as REDACTED in records."""

    def __repr__(self) -> str:
        return REDACTED

    def __getitem__(self, key: Any) -> Any:
        """A slice (``pw[2:9]``, which jinja does not route through the sandbox) is a
        secret too."""
        return derived(str.__getitem__(self, key))


class Tainted(Sensitive):
    """Text a template built from a secret (``echo {{ password }}``): not itself a secret,
    so records keep its shape with each secret in it replaced."""


class EnvSecret(Sensitive):
    """A value read from the environment (``get_env``): a secret here, as any, but a plain
    value in Unfurl, where a changed variable reconfigures; so it takes part in change
    detection through a keyed digest (:mod:`unfurl_lite.expressions.digest`)."""

    variable: str = ""


class EnvTainted(Tainted):
    """Text a template built from environment values only (no other secret)."""

    variables: tuple[str, ...] = ()


def from_environment(value: Any) -> bool:
    """Whether a secret value comes from the environment only (see :class:`EnvSecret`)."""
    return isinstance(value, EnvSecret | EnvTainted)


def env_variables(value: Any) -> tuple[str, ...]:
    """The environment variables a value was read from, as far as it tells."""
    if isinstance(value, EnvSecret):
        return (value.variable,) if value.variable else ()
    if isinstance(value, EnvTainted):
        return value.variables
    return ()


def env_secret(value: Any, variable: str) -> EnvSecret:
    secret = EnvSecret(str(value))
    secret.variable = variable
    return secret


def env_tainted(value: str, variables: Iterable[str]) -> EnvTainted:
    text = EnvTainted(value)
    text.variables = tuple(dict.fromkeys(v for v in variables if v))
    return text


_read_secret: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "unfurl_lite_tainted", default=None
)
_scope_secrets: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "unfurl_lite_render_secrets", default=None
)


@contextlib.contextmanager
def render_scope(secrets: set[str]) -> Iterator[list[Any]]:
    """The scope of one render: yields its flag (non-empty once a secret was read);
    pieces derived from a secret are added to ``secrets``."""
    flag: list[Any] = []
    flag_token = _read_secret.set(flag)
    secrets_token = _scope_secrets.set(secrets)
    try:
        yield flag
    finally:
        _scope_secrets.reset(secrets_token)
        _read_secret.reset(flag_token)


def unmarked_render() -> bool:
    """Whether a render is under way that has not read a secret yet (so it is worth
    looking whether a value it reads holds one). Environment values read so far do not
    count: a secret read later still has to be noticed."""
    flag = _read_secret.get()
    return flag is not None and True not in flag


def note_secret_read(variables: Iterable[str] | None = None) -> None:
    """The render under way read a secret (or, with ``variables``, environment values
    only): its result and its errors are secret-bearing."""
    flag = _read_secret.get()
    if flag is None:
        return
    if variables is None:
        if True not in flag:
            flag.append(True)
        return
    for name in variables or ("",):
        if name not in flag:
            flag.append(name)


def env_only(flag: list[Any]) -> tuple[str, ...] | None:
    """The variables a render read when environment values were its only secrets."""
    if not flag or True in flag:
        return None
    return tuple(v for v in flag if isinstance(v, str) and v)


def scope_secrets() -> set[str]:
    """The secrets of the render under way (a throwaway set outside any render)."""
    found = _scope_secrets.get()
    return found if found is not None else set()


def mark_secret(value: Any, variable: str | None = None) -> Sensitive:
    """The value as a secret of the render under way: redacted wherever it is written, and
    the render counts as one that read a secret (its errors are withheld). With
    ``variable``, the value was read from that environment variable."""
    if variable is not None:
        note_secret_read([variable])
        secret: Sensitive = env_secret(value, variable)
    else:
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


def derived(value: Any, variables: Iterable[str] | None = None) -> Any:
    """A value computed from a secret: strings in it become Tainted and, when long enough
    to search for, known secrets of the render, so the pieces (``pw[2:9]``, ``pw | list |
    join('-')``) are redacted wherever they turn up: records, command output, errors."""
    if isinstance(value, Sensitive):
        return value
    if isinstance(value, str):
        tainted = Tainted(value) if variables is None else env_tainted(value, variables)
        note_secret_read(variables)
        if len(value) >= MIN_SECRET_LENGTH:
            scope_secrets().add(value)
        return tainted
    if isinstance(value, list):
        return [derived(v, variables) for v in value]
    if isinstance(value, tuple):
        return tuple(derived(v, variables) for v in value)
    return value


def sources(*values: Any) -> tuple[str, ...] | None:
    """For a value computed from ``values``: the environment variables it derives from when
    environment values are the only secrets among them, else None (a secret, or none)."""
    found: list[str] = []
    for value in values:
        items = value[:1000] if isinstance(value, list | tuple) else (value,)
        for item in items:
            if isinstance(item, Sensitive):
                if not from_environment(item):
                    return None
                found.extend(env_variables(item) or ("",))
    return tuple(found) if found else None


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


_PLAIN_LEAVES = frozenset({str, int, float, bool, type(None)})


def secrets_in(value: Any) -> Iterator[str]:
    """Every secret inside a value (Tainted text is built from secrets, not one itself)."""
    if type(value) in _PLAIN_LEAVES:  # the common case, told by its exact type: no secret
        return
    if isinstance(value, dict):  # (a dict's plain values asked here, not in a generator each)
        for v in value.values():
            if type(v) not in _PLAIN_LEAVES:
                yield from secrets_in(v)
        return
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
