"""Digests of operation inputs, as Unfurl computes its ``digestKeys``/``digestValue``.

Recording a task and asking "would this operation run differently now?" (reconfigure,
update, drift) must hash the same way, so both use these pure functions.

Secrets take no part (Unfurl's rule), except values read from the environment: Unfurl
treats those as plain values, so a changed variable reconfigures; here they are secrets,
so they take part through an HMAC keyed with the clone's own key (never committed, see
:mod:`unfurl_lite.load.digestkey`): a committed digest cannot be brute-forced to the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

from unfurl_lite.expressions.expr import Sensitive
from unfurl_lite.model.narrow import cast
from unfurl_lite.security.taint import REDACTED, from_environment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

try:  # CPython's own SHA-1: importing hashlib starts OpenSSL, milliseconds of every job
    from _sha1 import sha1
except ImportError:  # another interpreter
    from hashlib import sha1

#: what gives the digest key (bytes), asked only when an environment value is digested;
#: None, or a provider giving None, leaves such values out
KeyProvider = Callable[[], bytes | None]


class Key:
    """The key, asked for once and only when needed."""

    def __init__(self, provider: KeyProvider | None) -> None:
        self._provider = provider
        self._key: bytes | None = None
        self._asked = provider is None

    def get(self) -> bytes | None:
        if not self._asked:
            self._asked = True
            assert self._provider is not None
            self._key = self._provider()
        return self._key


def _digest_parts(value: YAMLValue, key: Key | None = None) -> Iterator[str]:
    form = getattr(value, "digest_form", None)
    if callable(form):  # a value digested as what it stands for (a temporary file: its text)
        yield from _digest_parts(cast("YAMLValue", form()), key)
        return
    if isinstance(value, Sensitive):
        secret = key.get() if key is not None and from_environment(value) else None
        if secret is None:
            yield REDACTED
        else:
            import hmac  # start-up: OpenSSL's start, for a value read from the environment only

            yield "hmac:" + hmac.new(secret, _utf8(str(value)), "sha256").hexdigest()
    elif isinstance(value, Mapping):
        for name in sorted(value, key=str):
            yield str(name)
            yield from _digest_parts(value[name], key)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _digest_parts(item, key)
    elif isinstance(value, str):
        yield value
    elif value is None:  # Unfurl writes null as an empty file: nothing
        return
    else:
        yield json.dumps(value, sort_keys=True, default=str)


def digest(values: Iterable[Any], key: KeyProvider | None = None) -> str:
    """SHA1 over the values as Unfurl computes its digestValue (strings hash as themselves;
    environment values as their keyed HMAC when ``key`` gives a key)."""
    sha = sha1()
    keyed = Key(key)
    for value in values:
        for part in _digest_parts(value, keyed):
            sha.update(_utf8(part))
    return sha.hexdigest()


def _utf8(text: str) -> bytes:
    """UTF-8, with a lone surrogate (a value that is not valid text, such as a Python
    operation's ``"\\ud800"``) kept as its own bytes rather than failing the job."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


#: the inputs each built-in configurator resolves while it runs, as Unfurl's do (its
#: ShellConfigurator and TemplateConfigurator: a Template reads ``dryrun`` only in a dry
#: run, which is never recorded); a Python callable may read any, so all count
CONFIGURATOR_INPUTS: dict[str, tuple[str, ...]] = {
    "Shell": ("command", "cwd", "dryrun", "shell", "keeplines", "echo", "done",
              "resultTemplate"),
    "Template": ("run", "done", "resultTemplate"),
}
#: resolved but never digested (Unfurl's ``exclude_from_digest``)
EXCLUDED: dict[str, frozenset[str]] = {
    "Shell": frozenset({"resultTemplate", "done", "cwd", "echo"}),
    "Template": frozenset({"resultTemplate", "done"}),
}
_REFERENCE = re.compile(r"\binputs\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*['\"]([^'\"]+)['\"]\s*\])")


def input_references(value: YAMLValue) -> Iterator[str]:
    """Operation inputs a value's templates read (``inputs.x``, ``inputs['x']``)."""
    if isinstance(value, str):
        if "{{" in value or "{%" in value:
            for match in _REFERENCE.finditer(value):
                yield match.group(1) or match.group(2)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from input_references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from input_references(item)


def takes_part(value: Any, key: Key) -> bool:
    """Whether a value goes into a digest: not a secret, unless one read from the
    environment and there is a key to digest it with."""
    if not isinstance(value, Sensitive):
        return True
    return from_environment(value) and key.get() is not None


def input_digest(inputs: Mapping[str, Any], key: KeyProvider | None = None) -> tuple[str, str]:
    """(digestKeys, digestValue) of all of an operation's inputs (when what it read is not
    known: see :mod:`unfurl_lite.expressions.reads`); secrets do not take part, values read
    from the environment do, keyed (when ``key`` gives a key)."""
    keyed = Key(key)
    keys = [k for k, v in inputs.items() if takes_part(v, keyed)]
    return ",".join(keys), (digest((inputs[k] for k in keys), keyed.get) if keys else "")


def spec_digest(spec: Mapping[str, Any]) -> str:
    return sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def digestable(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs a digest covers: those known before the operation runs (not the
    post-run hooks, which are evaluated with its result)."""
    if not _POST_INPUTS:  # asked for each task: the import is looked up once
        from unfurl_lite.expressions.context import (
            POST_INPUTS,  # start-up: rendering's: load it when used
        )

        _POST_INPUTS.extend(POST_INPUTS)
    return {k: v for k, v in inputs.items() if k not in _POST_INPUTS}


_POST_INPUTS: list[str] = []  # context.POST_INPUTS, once digestable has been asked
