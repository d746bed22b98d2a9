"""An operation's ``environment``: Unfurl's rules for the variables an operation runs with.

Rules apply in order to the allow-listed environment the job gives every operation:
``NAME: value`` sets a variable, ``+NAME`` copies it from the caller's environment (or
sets the value when the caller has none), ``-NAME`` removes it, ``^NAME: dir`` prepends
``dir`` to a ``PATH``-like variable; names may be patterns (``+LC_*``) and ``!`` negates
one (``-!FOO``). Copying by name is an explicit declaration, so it is the one way past
the allow-list besides ``--env-passthrough``.

The allow-list is here, not with the operations, because templates obey it too: ``get_env``
reads what an operation would get, plus what the spec declares.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ALLOWED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "TZ",
    "SHELL",
    "TERM",
)

#: the ``UNFURL_*`` variables an operation gets: set by the job for each task, never
#: taken from the caller's environment (where they could hold anything)
PROJECT_VARIABLES = ("UNFURL_JOB", "UNFURL_CHANGEID", "UNFURL_WORKER", "UNFURL_ENSEMBLE")


def base_environment(passthrough: bool = False) -> dict[str, str]:
    """The caller's variables an operation sees: the allow-list (``--env-passthrough``:
    all of them). The job adds :data:`PROJECT_VARIABLES` and the operation's ``env``."""
    if passthrough:
        return dict(os.environ)
    return {k: v for k, v in os.environ.items() if allowed(k)}


def allowed(name: str) -> bool:
    return name in ALLOWED_ENV or name.startswith("LC_")


#: what a rule's value may pass through before it is set (``to_env``'s substitution)
Substitute = Callable[[str, Mapping[str, str]], str]


def apply_rules(
    rules: Mapping[str, Any], base: Mapping[str, str], caller: Mapping[str, str] | None = None,
    substitute: Substitute | None = None,
) -> dict[str, str]:
    """The environment an operation gets: ``base`` with the rules applied in order (set,
    ``+`` copy from the caller, ``-`` remove, ``^`` prepend to a PATH-like variable; names
    may be patterns and ``!`` negates one), as the module's docstring spells them.
    ``substitute`` rewrites a value that is set (not a prepended one), given the variables
    set so far, as Unfurl's ``to_env`` does and an operation's ``environment`` does not."""
    caller = os.environ if caller is None else caller
    env = dict(base)
    for raw, value in rules.items():
        name = str(raw)
        op = name[:1] if name[:1] in "+-^" else ""
        pattern = name[1:] if op else name
        negate = pattern.startswith("!") and bool(op)
        if negate:
            pattern = pattern[1:]
        text = _env_text(value)
        if substitute is not None and text is not None and op != "^":
            text = substitute(text, env)
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


def _env_text(value: Any) -> str | None:
    """A rule's value as the variable's text, as Unfurl writes it: true is "true",
    false is empty (shell tests read it as unset), None sets nothing."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else ""
    return str(value)


_REFERENCE = re.compile(r"(\\+)?\$\{([\w|]+)(:.+?)?\}")


def substitute_references(text: str, lookup: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with each ``${NAME}`` replaced by NAME's value in ``lookup`` (the first
    known of ``${A|B}``; else the default of ``${NAME:default}``, else nothing), as Unfurl's
    ``to_env`` substitutes; a backslash before ``$`` keeps the reference as text, less
    that backslash. Also the names whose values were used."""
    used: list[str] = []

    def replace(match: re.Match[str]) -> str:
        escapes, names, default = match.group(1), match.group(2), match.group(3)
        if escapes:
            return match.group(0)[max(len(escapes) - 1, 1):]
        for name in names.split("|"):
            if name in lookup:
                used.append(name)
                return lookup[name]
        return default[1:] if default else ""

    return _REFERENCE.sub(replace, text), used


def _is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")
