"""Which filters and lookup plugins a template names, and which the sandbox has: what
``validate`` reads to refuse, by name, a template that would fail its task at run time.

It parses templates with the sandbox's own environment, so what it calls known is exactly
what a render can use (Jinja2's built-ins and Unfurl's filters, :mod:`.filters`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from unfurl_lite.expressions.sandbox import environment


@functools.lru_cache(maxsize=4096)
def _filters_in(text: str) -> tuple[str, ...]:
    from jinja2 import nodes


    try:
        tree = environment().parse(text)
    except Exception:  # a syntax error is reported when the template renders
        return ()
    return tuple(node.name for node in tree.find_all(nodes.Filter))


@functools.lru_cache(maxsize=4096)
def _lookups_in(text: str) -> tuple[str, ...]:
    from jinja2 import nodes


    try:
        tree = environment().parse(text)
    except Exception:
        return ()
    found = []
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name in ("lookup", "query"):
            first = call.args[0] if call.args else None
            found.append(str(first.value) if isinstance(first, nodes.Const) else "?")
    return tuple(found)


def unsupported_lookups(text: str) -> Iterator[str]:
    """Ansible lookup plugins a template calls that are not here (all but ``env``)."""
    if "lookup" not in text and "query" not in text:
        return
    for plugin in _lookups_in(text):
        if plugin != "env":
            yield plugin


def unknown_filters(text: str) -> Iterator[str]:
    """The filters a template uses that this tool does not have."""
    if "|" not in text or ("{{" not in text and "{%" not in text):
        return
    known = known_filters()
    for name in _filters_in(text):
        if name not in known:
            yield name


@functools.lru_cache(maxsize=1)
def known_filters() -> frozenset[str]:

    return frozenset(environment().filters)
