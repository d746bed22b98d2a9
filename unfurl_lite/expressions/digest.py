"""Digests of operation inputs, as Unfurl computes its ``digestKeys``/``digestValue``.

Recording a task and asking "would this operation run differently now?" (reconfigure,
update, drift) must hash the same way, so both use these pure functions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from unfurl_lite.expressions.expr import Sensitive
from unfurl_lite.security.redaction import REDACTED


def _digest_parts(value: Any) -> Iterator[str]:
    if isinstance(value, Sensitive):
        yield REDACTED
    elif isinstance(value, Mapping):
        for key in sorted(value, key=str):
            yield str(key)
            yield from _digest_parts(value[key])
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _digest_parts(item)
    elif isinstance(value, str):
        yield value
    else:
        yield json.dumps(value, sort_keys=True, default=str)


def digest(values: Iterable[Any]) -> str:
    """SHA1 over the values as Unfurl computes its digestValue (strings hash as themselves)."""
    sha = hashlib.sha1()
    for value in values:
        for part in _digest_parts(value):
            sha.update(part.encode("utf-8"))
    return sha.hexdigest()


def input_digest(inputs: Mapping[str, Any]) -> tuple[str, str]:
    """(digestKeys, digestValue) of an operation's inputs; secrets do not take part."""
    keys = [k for k, v in inputs.items() if not isinstance(v, Sensitive)]
    return ",".join(keys), (digest(inputs[k] for k in keys) if keys else "")


def spec_digest(spec: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def digestable(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs a digest covers: those known before the operation runs (not the
    post-run hooks, which are evaluated with its result)."""
    from unfurl_lite.expressions.context import POST_INPUTS  # rendering's: load it when used

    return {k: v for k, v in inputs.items() if k not in POST_INPUTS}
