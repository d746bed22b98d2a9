"""The callables a template may use besides filters, as Unfurl 1.2.0's templates have them:
Ansible's ``now`` and ``undef``, and Jinja2's own ``dict``, ``namespace``, ``cycler`` and
``joiner`` (the sandbox starts with no globals, so each is listed in the catalog)."""

from __future__ import annotations

import datetime
from typing import Any


def now(utc: bool = False, fmt: str | None = None) -> Any:
    """Ansible's ``now()``: the current time, as text when ``fmt`` (strftime) is given.
    A value built from it changes on every render, so an input holding it reconfigures
    on every deploy, as in Unfurl."""
    moment = (datetime.datetime.now(datetime.UTC).replace(tzinfo=None) if utc
              else datetime.datetime.now())
    return moment.strftime(str(fmt)) if fmt else moment


def undef(hint: Any = None) -> Any:
    """Ansible's ``undef(hint)``: an undefined value that fails with ``hint`` when used
    (``| default`` and ``is defined`` see it as undefined), for a variable that must be
    overridden."""
    from jinja2.runtime import Undefined  # start-up: keeps jinja2 off template_globals's import

    from unfurl_lite.expressions.names import strict_undefined  # start-up: it imports jinja2

    if hint is None or isinstance(hint, Undefined) or hint == "":
        hint = "Mandatory variable has not been overridden"
    return strict_undefined()(hint=str(hint))


def _jinja(name: str) -> Any:
    """One of Jinja2's default globals, by name."""
    # start-up: jinja2 only when a template uses one of its globals
    from jinja2.defaults import DEFAULT_NAMESPACE

    return DEFAULT_NAMESPACE[name]


def dict_global(*args: Any, **kwargs: Any) -> dict[Any, Any]:
    return dict(*args, **kwargs)


def namespace(*args: Any, **kwargs: Any) -> Any:
    return _jinja("namespace")(*args, **kwargs)


def cycler(*items: Any) -> Any:
    return _jinja("cycler")(*items)


def joiner(sep: str = ", ") -> Any:
    return _jinja("joiner")(sep)
