"""An operation's ``environment``: Unfurl's rules for the variables an operation runs with.

Rules apply in order to the allow-listed environment the job gives every operation:
``NAME: value`` sets a variable, ``+NAME`` copies it from the caller's environment (or
sets the value when the caller has none), ``-NAME`` removes it, ``^NAME: dir`` prepends
``dir`` to a ``PATH``-like variable; names may be patterns (``+LC_*``) and ``!`` negates
one (``-!FOO``). Copying by name is an explicit declaration, so it is the one way past
the allow-list besides ``--env-passthrough``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from typing import Any


def apply_rules(
    rules: Mapping[str, Any], base: Mapping[str, str], caller: Mapping[str, str] | None = None
) -> dict[str, str]:
    caller = os.environ if caller is None else caller
    env = dict(base)
    for raw, value in rules.items():
        name = str(raw)
        op = name[:1] if name[:1] in "+-^" else ""
        pattern = name[1:] if op else name
        negate = pattern.startswith("!") and bool(op)
        if negate:
            pattern = pattern[1:]
        text = None if value is None else str(value)
        if not op:
            if text is None:
                env.pop(name, None)
            else:
                env[name] = text
            continue
        source = env if op == "-" else caller
        matched = [k for k in list(source) if fnmatch.fnmatchcase(k, pattern) != negate]
        if op == "-":
            for key in matched:
                env.pop(key, None)
        elif op == "+":
            for key in matched:
                env[key] = caller[key]
            if not matched and text is not None and not _is_pattern(pattern):
                env[pattern] = text
        elif text is not None:  # ^: prepend to a PATH-like variable
            current = env.get(pattern, caller.get(pattern, ""))
            env[pattern] = f"{text}{os.pathsep}{current}" if current else text
    return env


def _is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")
