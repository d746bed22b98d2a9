"""The one table of what an expression may name: every eval function, Jinja2 filter, test,
global, Ansible lookup plugin and query key Unfurl 1.2.0 (with the Ansible it renders
with) defines is here, either implemented (``impl`` names the code, imported when first
used) or refused (``refused`` says why). Validation reads this table to refuse a name
before any job (:mod:`unfurl_lite.load.expression_checks`), and evaluation reads it to run
one, so a name can never be accepted and then ignored.

To add a function or filter: write it, then point its entry here at it (``impl=
"unfurl_lite.expressions.module:function"``) instead of the refusal. Nothing else needs to
change. Jinja2's own filters and tests are known without an entry.

Calling conventions: a function is ``fn(arg, ctx, depth, **options)`` (``arg`` the
unevaluated argument, ``options`` the other keys of its mapping that ``options`` lists,
unevaluated, as Unfurl's ``ctx.kw``); a filter, test or global is what Jinja2 calls; a
lookup plugin is ``fn(*terms, **options)``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["function", "filter", "test", "global", "lookup", "query_key"]


@dataclass(frozen=True)
class Known:
    """A name an expression may use: implemented by ``impl`` ("module:attribute"), or
    refused with the reason ``refused`` (and what to do instead, ``hint``)."""

    impl: str = ""
    refused: str = ""
    hint: str = ""
    top_level: bool = False  # a function also evaluated as a bare one-key mapping
    options: frozenset[str] = frozenset()  # other keys its mapping may have (Unfurl's kw)


_EXPR = "unfurl_lite.expressions.expr"
_FILTERS = "unfurl_lite.expressions.filters"
_SANDBOX = "unfurl_lite.expressions.sandbox"
_LIMITS = "unfurl_lite.expressions.limits"

_NOT_YET = "is not supported (not implemented in unfurl-lite yet)"
_NO_CONFIG = ("needs Unfurl's project configuration (unfurl.yaml, environments, "
              "repositories), which unfurl-lite does not have")
_RUNS_CODE = "would run code named by the ensemble from an expression"


def _todo(top_level: bool = False, hint: str = "", options: tuple[str, ...] = ()) -> Known:
    return Known(refused=_NOT_YET, hint=hint, top_level=top_level, options=frozenset(options))


def _never(why: str, hint: str = "", top_level: bool = False) -> Known:
    return Known(refused=why, hint=hint, top_level=top_level)


#: eval functions: ``{eval: {NAME: ARG}}``, and ``{NAME: ARG}`` alone for a top-level one
FUNCTIONS: dict[str, Known] = {
    # TOSCA's functions
    "get_input": Known(f"{_EXPR}:get_input", top_level=True),
    "get_property": Known(f"{_EXPR}:get_property", top_level=True),
    "get_attribute": Known(f"{_EXPR}:get_attribute", top_level=True),
    "concat": Known(f"{_EXPR}:concat", top_level=True),
    "join": Known(f"{_EXPR}:join", top_level=True),
    "token": _todo(top_level=True),
    "get_nodes_of_type": _todo(top_level=True),
    "get_operation_output": _todo(top_level=True),
    "get_artifact": _never("needs TOSCA artifacts, which unfurl-lite does not support",
                           top_level=True),
    # Unfurl's
    "get_env": Known(f"{_EXPR}:get_env", top_level=True),
    "has_env": _todo(top_level=True),
    "sensitive": Known(f"{_EXPR}:sensitive"),
    "secret": Known(f"{_EXPR}:secret"),
    "file": Known(f"{_EXPR}:file", options=frozenset({"encoding"})),
    "template": Known(f"{_EXPR}:template"),
    "generate_string": _todo(top_level=True),
    "_generate": _todo(top_level=True),
    "q": _todo(top_level=True),
    "if": _todo(options=("then", "else")),
    "and": _todo(),
    "or": _todo(),
    "not": _todo(),
    "eq": _todo(),
    "foreach": _todo(),
    "is_function_defined": _todo(),
    "validate": _todo(),
    "lookup": _todo(),
    "to_env": _todo(),
    "urljoin": _todo(),
    "to_label": _todo(),
    "to_dns_label": _todo(),
    "to_kubernetes_label": _todo(),
    "to_googlecloud_label": _todo(),
    "abspath": _todo(),
    "get_dir": _todo(),
    "tempfile": _todo(),
    "portspec": _todo(),
    "python": _never(_RUNS_CODE, "use a Python operation (`implementation: "
                     "{className: package.module:function}`)"),
    "computed": _never(_RUNS_CODE + " (Unfurl's Python DSL)"),
    "external": _never(_NO_CONFIG),
    "local": _never(_NO_CONFIG, "use a topology input, e.g. {get_input: NAME}"),
    "get_ensemble_metadata": _never(_NO_CONFIG),
    "container_image": _never("belongs to Unfurl's container types, which unfurl-lite "
                              "does not support"),
    "kubernetes_current_namespace": _never("needs Unfurl's Kubernetes connection, which "
                                           "unfurl-lite does not have"),
    "kubectl": _never("needs Unfurl's Kubernetes configurator, which unfurl-lite does not "
                      "have"),
}

#: keys beside ``eval:`` in an expression (``{eval: ..., vars: {...}}``)
QUERY_KEYS: dict[str, Known] = {
    "vars": _todo(),
    "foreach": _todo(),
    "select": _todo(),
    "trace": _todo(),
    "strict": _todo(),
}

_ANSIBLE_FILTERS = (
    "b64decode", "b64encode", "basename", "bool", "checksum", "combinations", "combine",
    "comment", "commonpath", "dict2items", "difference", "dirname", "expanduser",
    "expandvars", "extract", "fileglob", "flatten", "from_json", "from_yaml",
    "from_yaml_all", "hash", "human_readable", "human_to_bytes", "intersect", "items2dict",
    "log", "mandatory", "md5", "normpath", "password_hash", "path_join", "permutations",
    "pow", "product", "quote", "regex_escape", "regex_findall", "regex_replace",
    "regex_search", "rekey_on_member", "relpath", "root", "sha1", "shuffle", "split",
    "splitext", "strftime", "subelements", "symmetric_difference", "ternary",
    "to_datetime", "to_json", "to_nice_json", "to_nice_yaml", "to_uuid", "to_yaml",
    "type_debug", "union", "urldecode", "urlsplit", "win_basename", "win_dirname",
    "win_splitdrive", "zip", "zip_longest",
)

#: Jinja2 filters beyond Jinja's built-ins: Unfurl's (``filter_plugins/ref.py``), ours, and
#: Ansible's (Unfurl renders templates with Ansible's filters)
FILTERS: dict[str, Known] = {
    "eval": Known(f"{_FILTERS}:eval_filter"),
    "ref": Known(f"{_FILTERS}:eval_filter"),
    "map_value": Known(f"{_FILTERS}:map_value_filter"),
    "mapValue": Known(f"{_FILTERS}:map_value_filter"),
    "sensitive": Known(f"{_FILTERS}:sensitive_filter"),
    "abspath": Known(f"{_FILTERS}:abspath_filter"),
    "file": Known(f"{_SANDBOX}:file_global"),
    "to_label": _todo(),
    "to_dns_label": _todo(),
    "to_kubernetes_label": _todo(),
    "to_googlecloud_label": _todo(),
    "get_dir": _todo(),
    "which": _never("would look for programs on the machine that renders the template",
                    "run `which` in the operation's command"),
    **{name: _todo() for name in _ANSIBLE_FILTERS},
    "vault": _never("needs Ansible Vault's secrets, which unfurl-lite does not read"),
    "unvault": _never("needs Ansible Vault's secrets, which unfurl-lite does not read"),
    "random": Known(refused="gives a different value on every render, so every deploy "
                    "would reconfigure", hint="pass the value as an input"),
}

_ANSIBLE_TESTS = (
    "abs", "all", "any", "change", "changed", "contains", "directory", "exists", "failed",
    "failure", "falsy", "file", "finished", "is_abs", "is_dir", "is_file", "is_link",
    "is_mount", "is_same_file", "isnan", "issubset", "issuperset", "link", "link_exists",
    "match", "mount", "nan", "reachable", "regex", "same_file", "search", "skip",
    "skipped", "started", "subset", "succeeded", "success", "successful", "superset",
    "truthy", "unreachable", "uri", "url", "urn", "vault_encrypted", "version",
    "version_compare",
)

#: Jinja2 tests (``x is NAME``) beyond Jinja's built-ins: Ansible's
TESTS: dict[str, Known] = {name: _todo() for name in _ANSIBLE_TESTS}

#: the names a template may call or read besides its variables
GLOBALS: dict[str, Known] = {
    "range": Known(f"{_LIMITS}:bounded_range"),
    "get_env": Known(f"{_SANDBOX}:get_env_global"),
    "lookup": Known(f"{_SANDBOX}:lookup_global"),
    "query": Known(f"{_SANDBOX}:query_global"),
    "q": Known(f"{_SANDBOX}:query_global"),
    "file": Known(f"{_SANDBOX}:file_global"),
}

#: Ansible's lookup plugins: ``lookup('NAME', ...)``
LOOKUPS: dict[str, Known] = {
    "env": Known(f"{_SANDBOX}:env_lookup"),
    "file": _todo(hint="use file('path')"),
    "fileglob": _todo(),
    "first_found": _todo(),
    "items": _todo(),
    "indexed_items": _todo(),
    "list": _todo(),
    "lines": _never(_RUNS_CODE + " (it runs a command)", "run the command in an operation"),
    "pipe": _never(_RUNS_CODE + " (it runs a command)", "run the command in an operation"),
    "nested": _todo(),
    "together": _todo(),
    "sequence": _todo(),
    "subelements": _todo(),
    "dict": _todo(),
    "vars": _todo(),
    "varnames": _todo(),
    "template": _todo(),
    "random_choice": Known(refused="gives a different value on every render, so every "
                           "deploy would reconfigure", hint="pass the value as an input"),
    "password": _never("writes files outside the project", "pass the password as an input "
                       "marked sensitive"),
    "url": _never("reads from the network while a template renders"),
    "csvfile": _todo(),
    "ini": _todo(),
    "config": _never("reads Ansible's configuration"),
    "unvault": _never("needs Ansible Vault's secrets, which unfurl-lite does not read"),
    "inventory_hostnames": _never("needs an Ansible inventory"),
}

TABLES: dict[Kind, dict[str, Known]] = {
    "function": FUNCTIONS, "filter": FILTERS, "test": TESTS, "global": GLOBALS,
    "lookup": LOOKUPS, "query_key": QUERY_KEYS,
}

_WHAT: dict[Kind, str] = {
    "function": "eval function", "filter": "filter", "test": "test",
    "global": "template global", "lookup": "lookup plugin", "query_key": "expression key",
}


def _canonical(kind: Kind, name: str) -> str:
    """Ansible's fully qualified names (``ansible.builtin.to_json``) name the same thing."""
    if kind in ("filter", "test", "lookup"):
        for prefix in ("ansible.builtin.", "ansible.legacy."):
            if name.startswith(prefix):
                return name[len(prefix):]
    return name


def entry(kind: Kind, name: str) -> Known | None:
    return TABLES[kind].get(_canonical(kind, str(name)))


@functools.cache
def implementation(kind: Kind, name: str) -> Callable[..., Any] | None:
    """The code behind an implemented name; None when it is refused or unknown."""
    found = entry(kind, name)
    if found is None or not found.impl:
        return None
    module, _, attribute = found.impl.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return function


def implemented(kind: Kind) -> dict[str, Callable[..., Any]]:
    """Every implemented name of a kind with its code (what the sandbox installs)."""
    found = {}
    for name in TABLES[kind]:
        function = implementation(kind, name)
        if function is not None:
            found[name] = function
    return found


@functools.cache
def top_level_functions() -> frozenset[str]:
    """Function names a bare one-key mapping evaluates (``{get_input: x}``), implemented
    or refused: Unfurl 1.2.0 evaluates each of these outside ``eval:`` too."""
    return frozenset(name for name, known in FUNCTIONS.items() if known.top_level)


def known(kind: Kind, name: str, builtins: frozenset[str] = frozenset()) -> bool:
    """Whether ``name`` is implemented (here or as one of Jinja's ``builtins``)."""
    return _canonical(kind, name) in builtins or implementation(kind, name) is not None


def refusal(kind: Kind, name: str, builtins: frozenset[str] = frozenset()) -> tuple[str, str]:
    """Why ``name`` cannot be used, and what to do: a refused entry's reason, or for a name
    nobody defines, a did-you-mean among the names that can be used."""
    from unfurl_lite.expressions.names import did_you_mean

    what = _WHAT[kind]
    found = entry(kind, name)
    if found is not None and found.refused:
        reason = found.refused if found.refused.startswith("is ") \
            else f"is not supported: it {found.refused}"
        return (f"{_owner(kind, _canonical(kind, name))} {what} {name!r} {reason}",
                found.hint or _alternatives(kind, builtins))
    hint = did_you_mean(name, sorted(usable(kind, builtins))) or _alternatives(kind, builtins)
    return f"unknown {what} {name!r}", hint


def _owner(kind: Kind, name: str) -> str:
    if kind == "lookup" or (kind == "filter" and name in _ANSIBLE_FILTERS) or kind == "test":
        return "Ansible's"
    if kind == "function" and name in _TOSCA_FUNCTIONS:
        return "TOSCA's"
    return "Unfurl's"


_TOSCA_FUNCTIONS = frozenset({"get_input", "get_property", "get_attribute", "concat", "join",
                              "token", "get_nodes_of_type", "get_operation_output",
                              "get_artifact"})


def usable(kind: Kind, builtins: frozenset[str] = frozenset()) -> frozenset[str]:
    return frozenset(builtins) | frozenset(implemented(kind))


def _alternatives(kind: Kind, builtins: frozenset[str]) -> str:
    names = ", ".join(sorted(implemented(kind)))
    extra = " and Jinja2's built-ins" if builtins else ""
    return f"the {_WHAT[kind]}s here are {names}{extra}"
