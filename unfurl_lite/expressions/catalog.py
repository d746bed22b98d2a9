"""The one table of what an expression may name: every eval function, Jinja2 filter, test,
global, Ansible lookup plugin and query key Unfurl 1.2.0 (with the Ansible it renders
with) defines is here, either implemented (``impl`` names the code, imported when first
used) or refused (``refused`` says why). Validation reads this table to refuse a name
before any job (:mod:`unfurl_lite.load.expression_checks`), and evaluation reads it to run
one, so a name can never be accepted and then ignored.

To add a function or filter: write it, then point its entry here at it (``impl=
"unfurl_lite.expressions.module:function"``) instead of the refusal. Nothing else needs to
change. Jinja2's own filters and tests are known without an entry.

Calling conventions: a function is ``fn(arg, scope)`` (``arg`` the unevaluated argument;
``scope.kw`` its whole mapping, as Unfurl's ``ctx.kw``, whose other keys ``options``
lists; ``scope.ctx`` the evaluation context); a filter, test or global is what Jinja2
calls; a lookup plugin is ``fn(*terms, **options)``. ``impl`` is ``module:attribute``, or
``module:TABLE[name]`` for an item of a table.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

Kind: TypeAlias = 'Literal["function", "filter", "test", "global", "lookup", "query_key"]'


@dataclass(frozen=True)
class Known:
    """A name an expression may use: implemented by ``impl`` ("module:attribute"), or
    refused with the reason ``refused`` (and what to do instead, ``hint``)."""

    impl: str = ""
    refused: str = ""
    hint: str = ""
    top_level: bool = False  # a function also evaluated as a bare one-key mapping
    options: frozenset[str] = frozenset()  # other keys its mapping may have (Unfurl's kw)


_FUNCTIONS = "unfurl_lite.expressions.functions"
_FILTERS = "unfurl_lite.expressions.filters"
_ANSIBLE = "unfurl_lite.expressions.ansible_filters"
_REGEX = "unfurl_lite.expressions.regex_filters"
_TESTS = "unfurl_lite.expressions.ansible_tests"
_LOOKUPS = "unfurl_lite.expressions.lookups"
_SANDBOX = "unfurl_lite.expressions.sandbox"
_LIMITS = "unfurl_lite.expressions.limits"
_GLOBALS = "unfurl_lite.expressions.template_globals"

_NO_CONFIG = ("needs Unfurl's project configuration (unfurl.yaml, environments, "
              "repositories), which unfurl-lite does not have")
_RUNS_CODE = "would run code named by the ensemble from an expression"
_NOT_IN_UNFURL = ("is not supported: Unfurl 1.2.0 has no such function and keeps such a "
                  "mapping as it is")
_CHANGES = "gives a different value on every render, so every deploy would reconfigure"
_LABEL_OPTIONS = ("allowed", "replace", "start", "start_prepend", "end", "max", "case", "sep",
                  "digest", "digestlen", "eager")


def _never(why: str, hint: str = "", top_level: bool = False) -> Known:
    return Known(refused=why, hint=hint, top_level=top_level)


def _function(name: str, top_level: bool = False, options: tuple[str, ...] = ()) -> Known:
    return Known(f"{_FUNCTIONS}:{name}", top_level=top_level, options=frozenset(options))


#: eval functions: ``{eval: {NAME: ARG}}``, and ``{NAME: ARG}`` alone for a top-level one
FUNCTIONS: dict[str, Known] = {
    # TOSCA's functions, as Unfurl 1.2.0 evaluates them
    "get_input": _function("get_input", top_level=True),
    "get_property": _function("get_property", top_level=True),
    "get_attribute": _function("get_attribute", top_level=True),
    "concat": _function("concat", top_level=True, options=("sep",)),
    "token": _function("token", top_level=True),
    "get_nodes_of_type": _function("get_nodes_of_type", top_level=True),
    "join": _never(_NOT_IN_UNFURL, "use {eval: {concat: [a, b], sep: ','}}", top_level=True),
    "get_operation_output": _never(_NOT_IN_UNFURL, top_level=True),
    "get_artifact": _never("needs TOSCA artifacts, which unfurl-lite does not support",
                           top_level=True),
    # Unfurl's
    "get_env": _function("get_env", top_level=True),
    "has_env": _function("has_env", top_level=True),
    "generate_string": _function("generate_string", top_level=True),
    "_generate": _function("generate_string", top_level=True),
    "q": _function("quote", top_level=True),
    "sensitive": _function("sensitive"),
    "secret": _function("secret"),
    "file": _function("file", options=("encoding", "dir", "contents")),
    "tempfile": _function("tempfile", options=("encoding", "suffix")),
    "template": _function("template", options=("overrides",)),
    "if": _function("if_", options=("then", "else", "map_value")),
    "and": _function("and_", options=("map_value",)),
    "or": _function("or_", options=("map_value",)),
    "not": _function("not_", options=("map_value",)),
    "eq": _function("eq"),
    "foreach": _function("foreach"),
    "is_function_defined": _function("is_function_defined"),
    "validate": _function("validate"),
    "lookup": _function("lookup"),
    "to_env": _function("to_env", options=("update_os_environ",)),
    "urljoin": _function("urljoin"),
    "to_label": _function("to_label", options=(*_LABEL_OPTIONS, "_wrapper")),
    "to_dns_label": _function("to_dns_label", options=_LABEL_OPTIONS),
    "to_kubernetes_label": _function("to_kubernetes_label", options=_LABEL_OPTIONS),
    "to_googlecloud_label": _function("to_googlecloud_label", options=_LABEL_OPTIONS),
    "abspath": _function("abspath"),
    "get_dir": _function("get_dir"),
    "get_ensemble_metadata": _function("get_ensemble_metadata"),
    "portspec": _never("belongs to Unfurl's container types, which unfurl-lite does not "
                       "support"),
    "python": _never(_RUNS_CODE, "use a Python operation (`implementation: "
                     "{className: package.module:function}`)"),
    "computed": _never(_RUNS_CODE + " (Unfurl's Python DSL)"),
    "external": _never(_NO_CONFIG),
    "local": _never(_NO_CONFIG, "use a topology input, e.g. {get_input: NAME}"),
    "container_image": _never("belongs to Unfurl's container types, which unfurl-lite "
                              "does not support"),
    "kubernetes_current_namespace": _never("needs Unfurl's Kubernetes connection, which "
                                           "unfurl-lite does not have"),
    "kubectl": _never("needs Unfurl's Kubernetes configurator, which unfurl-lite does not "
                      "have"),
}

#: keys beside ``eval:`` in an expression (``{eval: ..., vars: {...}}``)
QUERY_KEYS: dict[str, Known] = {
    key: Known("unfurl_lite.expressions.resolve:REF_KEYS")
    for key in ("vars", "foreach", "select", "trace", "strict")
}

#: query keys (``.name``) and Unfurl's internal objects a query may not reach
QUERY_KEY_NAMES = "unfurl_lite.expressions.keys:SPECIAL_KEYS"

_ANSIBLE_FILTERS = (
    "b64decode", "b64encode", "basename", "bool", "checksum", "combinations", "combine",
    "comment", "commonpath", "dict2items", "difference", "dirname", "extract", "flatten",
    "from_json", "from_yaml", "from_yaml_all", "hash", "human_readable", "human_to_bytes",
    "intersect", "items2dict", "log", "mandatory", "md5", "normpath", "path_join",
    "permutations", "pow", "product", "quote", "rekey_on_member", "relpath", "root", "sha1",
    "split",
    "splitext", "strftime", "subelements", "symmetric_difference", "ternary", "to_datetime",
    "to_json", "to_nice_json", "to_nice_yaml", "to_uuid", "to_yaml", "type_debug", "union",
    "unique", "urldecode", "urlsplit", "win_basename", "win_dirname", "win_splitdrive", "zip",
    "zip_longest",
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
    "get_dir": Known(f"{_FILTERS}:get_dir_filter"),
    "which": Known(f"{_FILTERS}:which_filter"),
    "file": Known(f"{_SANDBOX}:file_global"),
    "to_label": Known(f"{_FILTERS}:to_label"),
    "to_dns_label": Known(f"{_FILTERS}:to_dns_label"),
    "to_kubernetes_label": Known(f"{_FILTERS}:to_kubernetes_label"),
    "to_googlecloud_label": Known(f"{_FILTERS}:to_googlecloud_label"),
    **{name: Known(f"{_ANSIBLE}:FILTERS[{name}]") for name in _ANSIBLE_FILTERS},
    **{name: Known(f"{_REGEX}:FILTERS[{name}]") for name in (
        "regex_escape", "regex_findall", "regex_replace", "regex_search")},
    "expanduser": _never("reads the user's home directory"),
    "expandvars": _never("reads the environment", "use get_env('NAME')"),
    "realpath": _never("reads the file system"),
    "fileglob": _never("lists files on the machine that renders the template"),
    "password_hash": _never("needs a crypt library", "hash the password in an operation"),
    "vault": _never("needs Ansible Vault's secrets, which unfurl-lite does not read"),
    "unvault": _never("needs Ansible Vault's secrets, which unfurl-lite does not read"),
    "random": Known(f"{_ANSIBLE}:FILTERS[random]"),  # (Ansible's: `seed=` makes it stable)
    "shuffle": Known(f"{_ANSIBLE}:FILTERS[shuffle]"),
}

_ANSIBLE_TESTS = (
    "abs", "all", "any", "change", "changed", "contains", "failed", "failure", "falsy",
    "finished", "is_abs", "isnan", "issubset", "issuperset", "match", "nan", "reachable",
    "regex", "search", "skip", "skipped", "started", "subset", "succeeded", "success",
    "successful", "superset", "truthy", "unreachable", "uri", "url", "urn",
    "vault_encrypted", "version", "version_compare",
)
_FILE_TESTS = ("directory", "exists", "file", "is_dir", "is_file", "is_link", "is_mount",
               "is_same_file", "link", "link_exists", "mount", "same_file")

#: Jinja2 tests (``x is NAME``) beyond Jinja's built-ins: Ansible's
TESTS: dict[str, Known] = {
    **{name: Known(f"{_TESTS}:TESTS[{name}]") for name in _ANSIBLE_TESTS},
    **{name: _never("reads the file system of the machine that renders the template")
       for name in _FILE_TESTS},
}

#: the names a template may call or read besides its variables
GLOBALS: dict[str, Known] = {
    "range": Known(f"{_LIMITS}:bounded_range"),
    "get_env": Known(f"{_SANDBOX}:get_env_global"),
    "lookup": Known(f"{_SANDBOX}:lookup_global"),
    "query": Known(f"{_SANDBOX}:query_global"),
    "q": Known(f"{_SANDBOX}:query_global"),
    "file": Known(f"{_SANDBOX}:file_global"),
    "now": Known(f"{_GLOBALS}:now"),
    "undef": Known(f"{_GLOBALS}:undef"),
    "dict": Known(f"{_GLOBALS}:dict_global"),
    "namespace": Known(f"{_GLOBALS}:namespace"),
    "cycler": Known(f"{_GLOBALS}:cycler"),
    "joiner": Known(f"{_GLOBALS}:joiner"),
    "lipsum": _never(_CHANGES, "write the text in the template"),
}

_FILES = "reads files the sandbox's rules do not cover"

#: Ansible's lookup plugins: ``lookup('NAME', ...)``
LOOKUPS: dict[str, Known] = {
    "env": Known(f"{_SANDBOX}:env_lookup"),
    "file": Known(f"{_LOOKUPS}:file_lookup"),
    "unfurl": Known(f"{_LOOKUPS}:unfurl_lookup"),
    **{name: Known(f"{_LOOKUPS}:PURE[{name}]")
       for name in ("items", "indexed_items", "list", "nested", "together", "sequence",
                    "subelements", "dict")},
    "fileglob": _never(_FILES, "read a file with file('path')"),
    "first_found": _never(_FILES, "read a file with file('path')"),
    "template": _never(_FILES, "use {eval: {template: {path: PATH}}}"),
    "csvfile": _never(_FILES),
    "ini": _never(_FILES),
    "vars": _never("reads Ansible's variables", "read the value from SELF or inputs"),
    "varnames": _never("reads Ansible's variables"),
    "lines": _never(_RUNS_CODE + " (it runs a command)", "run the command in an operation"),
    "pipe": _never(_RUNS_CODE + " (it runs a command)", "run the command in an operation"),
    "random_choice": Known(refused=_CHANGES, hint="pass the value as an input"),
    "password": _never("writes files outside the project", "pass the password as an input "
                       "marked sensitive"),
    "url": _never("reads from the network while a template renders"),
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
    attribute, _, key = attribute.partition("[")  # "module:TABLE[name]": an item of a table
    function: Any = getattr(importlib.import_module(module), attribute)
    if key:
        function = function[key.rstrip("]")]
    return function


def implemented(kind: Kind) -> dict[str, Callable[..., Any]]:
    """Every implemented name of a kind with its code (what the sandbox installs)."""
    found: dict[str, Callable[..., Any]] = {}
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


@functools.cache
def option_owners() -> dict[str, tuple[str, ...]]:
    """Each option an implemented eval function takes (``then``) with the functions that
    take it (``if``): a key that is one is a function's sibling, not a function."""
    owners: dict[str, list[str]] = {}
    for name, found in FUNCTIONS.items():
        if found.impl:
            for option in sorted(found.options):
                owners.setdefault(option, []).append(name)
    return {option: tuple(names) for option, names in owners.items()}


def known(kind: Kind, name: str, builtins: frozenset[str] = frozenset()) -> bool:
    """Whether ``name`` is implemented (here or as one of Jinja's ``builtins``)."""
    return _canonical(kind, name) in builtins or implementation(kind, name) is not None


def refusal(kind: Kind, name: str, builtins: frozenset[str] = frozenset()) -> tuple[str, str]:
    """Why ``name`` cannot be used, and what to do: a refused entry's reason, or for a name
    nobody defines, a did-you-mean among the names that can be used."""
    # start-up: keeps expressions.names (4 modules) off catalog's import until refusal() runs
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
    if kind == "lookup" or kind == "test" or (kind == "filter" and (
            name in _ANSIBLE_FILTERS or name in _ANSIBLE_REFUSED)):
        return "Ansible's"
    if kind == "function" and name in _TOSCA_FUNCTIONS:
        return "TOSCA's"
    if kind == "global":
        return "Jinja2's" if name in _JINJA_GLOBALS else "Ansible's"
    return "Unfurl's"


_JINJA_GLOBALS = frozenset({"range", "dict", "namespace", "cycler", "joiner", "lipsum"})
_ANSIBLE_REFUSED = frozenset({"expanduser", "expandvars", "realpath", "fileglob",
                              "password_hash", "vault", "unvault", "random", "shuffle"})
#: (random and shuffle are Ansible's too: the owner of their name in messages)
_TOSCA_FUNCTIONS = frozenset({"get_input", "get_property", "get_attribute", "concat", "join",
                              "token", "get_nodes_of_type", "get_operation_output",
                              "get_artifact"})


def usable(kind: Kind, builtins: frozenset[str] = frozenset()) -> frozenset[str]:
    return frozenset(builtins) | frozenset(implemented(kind))


def _alternatives(kind: Kind, builtins: frozenset[str]) -> str:
    names = ", ".join(sorted(implemented(kind)))
    extra = " and Jinja2's built-ins" if builtins else ""
    return f"the {_WHAT[kind]}s here are {names}{extra}"
