"""What a Jinja2 template names, read from its syntax tree without rendering it: the
filters, tests and lookup plugins it uses, the variables it reads without setting them,
and the constant paths it reads from them (``SELF.workdir``, ``inputs['url']``).

Validation checks these names against what exists (:mod:`.catalog` for filters and the
like; the templates' declarations for the paths), so a misspelt name is reported with its
line before any job runs. Each distinct template text is parsed once per process.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from unfurl_lite.errors import ExpressionError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

#: what a mapping offers besides its keys; reading these is never a missing key
MAPPING_METHODS = frozenset(name for name in dir(dict) if not name.startswith("_"))
#: a read under these is tested, not used: a missing name is fine
_GUARDING_FILTERS = frozenset({"default", "d"})


def is_template(value: object) -> TypeGuard[str]:
    """Unfurl's test: text holding ``{{``, ``}}``, ``{%`` or ``%}`` (here, not in the
    sandbox: a job whose inputs are plain text reads it without importing the sandbox)."""
    return isinstance(value, str) and (
        "{{" in value or "{%" in value or "}}" in value or "%}" in value)


@dataclass(frozen=True)
class Read:
    """A constant path read from a variable: ``SELF.config['port']`` is ("SELF",
    ("config", "port")); ``guarded`` when the template tests it (``is defined``,
    ``| default``) rather than relying on it."""

    root: str
    path: tuple[str, ...]
    guarded: bool = False


@dataclass(frozen=True)
class TemplateNames:
    """What one template uses, read from its syntax tree for validate's scan."""
    filters: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    lookups: tuple[str, ...] = ()  # the plugin named by lookup()/query()/q(); "?" if computed
    free: tuple[str, ...] = ()  # variables read and not set by the template
    reads: tuple[Read, ...] = ()
    assigned: frozenset[str] = frozenset()  # names the template sets (loops, set, macros)
    syntax_error: str | None = None
    #: ``x.name`` reads (not ``x['name']``) from a variable: (the variable, the name, how
    #: deep: ``inputs.validate`` is 1)
    dotted: tuple[tuple[str, str, int], ...] = ()
    #: the keyword arguments each filter is given: (the filter, the keyword)
    filter_keywords: tuple[tuple[str, str], ...] = ()


def could_be_template(text: str) -> bool:
    return "{{" in text or "{%" in text


@functools.lru_cache(maxsize=8192)
def analyse(text: str) -> TemplateNames:
    """The names in a template (empty for plain text; ``syntax_error`` when it does not
    parse: rendering reports that, with its line)."""
    if not could_be_template(text):
        return TemplateNames()
    # start-up: keeps jinja2, markupsafe (31 modules) off `plan`, `validate` until analyse() runs
    from jinja2 import TemplateSyntaxError, meta, nodes

    # start-up: keeps expressions.sandbox (16 modules) off `plan`, `validate` until analyse() runs
    from unfurl_lite.expressions.sandbox import escape_backslashes, with_overrides

    try:
        env, body = with_overrides(text)
        tree = env.parse(escape_backslashes(body, env))
    except (TemplateSyntaxError, ExpressionError) as exc:
        return TemplateNames(syntax_error=str(exc))
    except Exception as exc:  # nested too deep for the parser, and the like
        return TemplateNames(syntax_error=f"{type(exc).__name__}")
    filters = tuple(dict.fromkeys(f.name for f in tree.find_all(nodes.Filter)))
    keywords = tuple(dict.fromkeys((f.name, k.key) for f in tree.find_all(nodes.Filter)
                                   for k in f.kwargs))
    tests = tuple(dict.fromkeys(t.name for t in tree.find_all(nodes.Test)))
    lookups: list[str] = []
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name in ("lookup", "query", "q"):
            first = call.args[0] if call.args else None
            lookups.append(str(first.value) if isinstance(first, nodes.Const) else "?")
    assigned = frozenset(n.name for n in tree.find_all(nodes.Name)
                         if n.ctx in ("store", "param"))
    guarded = _guarded_paths(tree)
    reads: dict[Read, None] = {}
    dotted: dict[tuple[str, str, int], None] = {}
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        found = _path(node)
        if found is None or len(found) < 2:
            continue
        if isinstance(node, nodes.Getattr):
            dotted[(found[0], node.attr, len(found) - 1)] = None
        root, *path = found
        is_guarded = any(tuple(found[:n]) in guarded for n in range(2, len(found) + 1))
        reads[Read(root, tuple(path), is_guarded)] = None
    try:
        free = tuple(sorted(meta.find_undeclared_variables(tree)))
    except Exception:  # it compiles the template: an unknown filter stops it (reported apart)
        free = tuple(sorted({n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
                            - assigned))
    return TemplateNames(filters, tests, tuple(dict.fromkeys(lookups)), free,
                         tuple(reads), assigned, dotted=tuple(dotted),
                         filter_keywords=keywords)


def _path(node: Any) -> tuple[str, ...] | None:
    """``SELF.a['b'].c`` as ("SELF", "a", "b", "c"): the longest constant prefix from a
    variable (None when it does not start at one)."""
    from jinja2 import nodes  # start-up: keeps jinja2, markupsafe (30 modules) off `plan`

    parts: list[str] = []
    while True:
        if isinstance(node, nodes.Getattr):
            parts.append(node.attr)
            node = node.node
        elif isinstance(node, nodes.Getitem):
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                parts.append(node.arg.value)
            else:
                parts.clear()  # a computed key: only what is before it is constant
            node = node.node
        elif isinstance(node, nodes.Name):
            return (node.name, *reversed(parts))
        else:
            return None


def _guarded_paths(tree: Any) -> set[tuple[str, ...]]:
    """Paths a template tests (``X is defined``, ``X | default(...)``)."""
    from jinja2 import nodes  # start-up: keeps jinja2, markupsafe (30 modules) off `plan`

    found: set[tuple[str, ...]] = set()
    subjects = [t.node for t in tree.find_all(nodes.Test)]
    subjects += [f.node for f in tree.find_all(nodes.Filter) if f.name in _GUARDING_FILTERS]
    for subject in subjects:
        path = _path(subject) if subject is not None else None
        if path is not None:
            found.add(path)
    return found
