"""Every name an expression in the spec uses is either evaluated or refused here, before any
job: eval functions (``{eval: {has_env: HOME}}``, or Unfurl's bare ``{has_env: HOME}``),
the keys beside ``eval`` (``vars``, ``foreach``...), query expressions, and the filters,
tests and lookup plugins of Jinja2 templates. What exists is one table,
:mod:`unfurl_lite.expressions.catalog`; this module only walks the spec and asks it.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Iterator

from unfurl_lite.errors import Problem
from unfurl_lite.expressions import catalog
from unfurl_lite.expressions.analysis import TemplateNames, analyse, could_be_template
from unfurl_lite.expressions.names import OPERATION_VARIABLES, did_you_mean
from unfurl_lite.load import blockyaml
from unfurl_lite.load.problems import TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.load.structure import job_inputs
from unfurl_lite.model.narrow import YAMLContainer, YAMLValue, is_map

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

#: parts of a spec that are never evaluated
_NOT_EVALUATED = frozenset({"metadata", "description"})
#: mappings of names to values: a key in one is a name (a property called ``token``), never
#: a function; the values are what may be expressions
_NAMED = frozenset({"properties", "attributes", "inputs", "outputs", "node_templates",
                    "relationship_templates", "node_types", "relationship_types", "types",
                    "data_types", "capability_types", "interface_types", "interfaces",
                    "operations", "capabilities", "artifacts", "workflows", "steps",
                    "instances", "groups", "policies", "repositories", "env", "environment"})
#: a quoted query piped to eval or ref in a template: ``'::node::attr' | eval``
#: ``eval(trace='break')`` or ``{'eval': ..., 'trace': 'break'}`` written in a template
_TRACE_BREAK = re.compile(r"""\btrace['"]?\s*[:=]\s*['"]break['"]""")
_QUERY_FILTERED = re.compile(r"""['"]([^'"{}]*)['"]\s*\|\s*(?:eval|ref)\b""")

Found: TypeAlias = "tuple[tuple[Any, ...], str, str | None]"  # (path, message, hint)


def problems(doc: Any, file: str) -> Iterator[Problem]:
    spec = mapping(doc).get("spec")
    for path, message, hint in _required_inputs(doc):
        yield problem_at(doc, path, file, message, hint)
    if not isinstance(spec, dict | list) or _none_in_text() or not _any_expression(spec):
        return
    inputs = frozenset(_declared_inputs(doc)) | frozenset(mapping(mapping(spec).get("inputs")))
    for path, message, hint in sorted(_walk(spec, inputs), key=lambda f: _order(f[0])):
        yield problem_at(doc, path, file, message, hint)


def _declared_inputs(doc: Any) -> dict[Any, Any]:
    return mapping(get_section(doc, TOPOLOGY).get("inputs"))


def _required_inputs(doc: Any) -> Iterator[Found]:
    """A topology input declared without a default and given no value (in the spec, or by
    the job's ``--var input_NAME``): Unfurl refuses the ensemble (MissingRequiredInputError),
    and so does validation here."""
    given = mapping(mapping(mapping(doc).get("spec")).get("inputs"))
    on_command_line = job_inputs()
    for name, definition in _declared_inputs(doc).items():
        if not is_map(definition) or definition.get("required", True) is False \
                or name in on_command_line:
            continue
        if given.get(name, definition.get("default")) is None:
            yield ((*TOPOLOGY, "inputs", name),
                   f"topology input {name!r} is required: it has no default and no value",
                   f"give it a value under spec.inputs ({name}: VALUE), a default, or "
                   "`required: false`")


def _order(path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(str(p) for p in path)


#: the text the document being checked on this thread was read from, when it was read
#: from that text alone (see :func:`read_from`)
_source = threading.local()


@contextlib.contextmanager
def read_from(text: str) -> Iterator[None]:
    """The document checked in this block was read from ``text`` alone (no include, import
    or merge added to it): the quick pass can then ask the text first. Most large specs
    hold no expression at all, and one search of the text finds that where a walk of every
    value took a fifth of the semantic checks (N=10,000)."""
    _source.text = text
    try:
        yield
    finally:
        _source.text = None


def _none_in_text() -> bool:
    """Whether the text the document came from cannot hold an expression: no template
    marker and no key spelled as a function's name. Anything that could hide one from a
    search (an escape, an anchor or alias, a merge) leaves it to the walk."""
    text = getattr(_source, "text", None)
    if text is None:
        return False
    searched = _searched(text)
    # a mark's first character searched first: one character's search is a hundredth of two's
    if any(mark[0] in searched and mark in searched
           for mark in ("{{", "{%", "\\", "&", "*", "<<")):
        return False
    return not has_function_key(searched)


def _searched(text: str) -> str:
    """What to search ``text`` in: the distinct lines of a text the line reader read (each
    key is on one line there with its colon, and a word without a line break is in a line
    of the text exactly when it is in one of its distinct lines), else the text."""
    lines = blockyaml.distinct_lines(text)
    return text if lines is None else lines


def text_lacks(*words: str) -> bool:
    """Whether the document being checked was read from a text known here that spells none
    of ``words`` (and holds no escape that could spell one): a check of what only those
    keys start can then be skipped."""
    text = getattr(_source, "text", None)
    if text is None:
        return False
    searched = _searched(text)
    return "\\" not in searched and not any(w in searched for w in words)


def has_function_key(text: str) -> bool:
    """Whether a name an expression mapping starts with appears as a key (quoted or not,
    the colon on the next line after ``?``): a match anywhere sends the document to the
    walk. Searched in the reversed text, where the pattern starts with the colon: the
    search jumps from colon to colon instead of trying the names at every position (a
    third of the time on a 5 MB ensemble)."""
    return _function_keys_reversed().search(text[::-1]) is not None


@functools.cache
def _function_keys_reversed() -> re.Pattern[str]:
    """``(?:NAME|...)["']?\\s*:`` read backwards (a text matches it where its reverse
    matches this)."""
    names = sorted({"eval", "ref", *catalog.top_level_functions()}, key=len, reverse=True)
    return re.compile(r""":\s*["']?(?:""" + "|".join(re.escape(n[::-1]) for n in names) + ")")


def _any_expression(value: Any) -> bool:
    """The quick pass: whether any string could be a template or any mapping an
    expression (most specs have few; a large spec is mostly plain strings)."""
    functions = catalog.top_level_functions()
    stack: list[tuple[Any, YAMLContainer]] = [(None, value)]
    child: YAMLValue
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict) and (("eval" in item or "ref" in item) or (
                len(item) == 1 and next(iter(item)) in functions and key not in _NAMED)):
            return True
        for key, child in (item.items() if isinstance(item, dict) else enumerate(item)):
            if isinstance(child, str):
                if "{{" in child or "{%" in child:
                    return True
            elif isinstance(child, dict | list):
                stack.append((key, child))
    return False


def _walk(spec: Any, inputs: frozenset[str]) -> Iterator[Found]:
    stack: list[tuple[tuple[Any, ...], YAMLContainer]] = [(("spec",), spec)]
    item: YAMLValue
    while stack:  # only containers are pushed
        path, value = stack.pop()
        if isinstance(value, dict) and path[-1] not in _NAMED:
            yield from _mapping(path, value, inputs)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, str):
                yield from _template((*path, key), item)
            elif isinstance(item, dict | list) and key not in _NOT_EVALUATED:
                stack.append(((*path, key), item))


def _mapping(path: tuple[Any, ...], value: dict[Any, Any],
             inputs: frozenset[str]) -> Iterator[Found]:
    """An expression mapping: ``{eval: ...}`` with its keys, or a bare function."""
    # start-up: keeps expressions.checks (1 module) off `plan` until _mapping() runs
    from unfurl_lite.expressions.checks import query_problems

    if "eval" in value or "ref" in value:
        head = "eval" if "eval" in value else "ref"
        for key in value:
            if key not in ("eval", "ref") and not catalog.known("query_key", key):
                # (Unfurl keeps such a mapping as data, unevaluated: said here instead)
                yield ((*path, key), *catalog.refusal("query_key", key))
        if value.get("trace") == "break":
            yield ((*path, "trace"), "`trace: break` stops Unfurl in Python's debugger: not "
                   "supported", "remove it, or give a trace level (trace: 1)")
        body = value[head]
        if isinstance(body, str) and not could_be_template(body):
            yield from (((*path, head, *where), message, hint)
                        for where, message, hint in query_problems(body))
        elif is_map(body) and body:
            yield from _function((*path, head), body)
            yield from _input_named((*path, head), body, inputs)
    elif len(value) == 1 and path[-1] not in ("eval", "ref"):  # an eval's body: said above
        (key,) = value
        if key in catalog.top_level_functions() and not catalog.known("function", key):
            yield ((*path, key), *catalog.refusal("function", key))
        yield from _input_named(path, value, inputs)


def _input_named(path: tuple[Any, ...], body: dict[Any, Any],
                 inputs: frozenset[str]) -> Iterator[Found]:
    """``get_input`` (or ``secret``) of an input the topology does not declare."""
    for function in ("get_input", "secret"):
        name = body.get(function)
        if isinstance(name, str) and name not in inputs and not could_be_template(name):
            close = did_you_mean(name, sorted(inputs))
            yield ((*path, function),
                   f"{function}: no topology input named {name!r}" + (f"; {close}" if close
                                                                       else ""),
                   None if close else "declare it under topology_template.inputs")


def _function(path: tuple[Any, ...], body: dict[Any, Any]) -> Iterator[Found]:
    """The mapping under ``eval:`` names one function; its other keys are its options."""
    for key in body:
        known = catalog.entry("function", str(key))
        if known is None:
            continue
        if not catalog.known("function", str(key)):
            yield ((*path, key), *catalog.refusal("function", str(key)))
            return
        # start-up: keeps expressions.checks (1 module) off `plan` until _function() runs
        from unfurl_lite.expressions.checks import function_problems

        yield from (((*path, *where), message, hint)
                    for where, message, hint in function_problems(str(key), body))
        for option in body:
            if option != key and option not in known.options:
                yield ((*path, option),
                       f"{option!r} is not an option of the eval function {key!r}",
                       f"{key!r} takes " + (", ".join(sorted(known.options)) or "no options"))
        return
    yield from _no_function(path, body)


def _no_function(path: tuple[Any, ...], body: dict[Any, Any]) -> Iterator[Found]:
    """A mapping under ``eval:`` that names no function. A key that is another function's
    option (``then`` of ``if``) is a sibling whose function is missing, never itself an
    unknown function; the first key that is nobody's option is the misspelt function."""
    owners = catalog.option_owners()
    for key in body:
        if str(key) not in owners:
            yield ((*path, key), *catalog.refusal("function", str(key)))
            return
    first = str(next(iter(body)))
    functions = owners[first]
    yield ((*path, first),
           f"no eval function here: {first!r} is an option of the eval function "
           f"{functions[0]!r}, which is missing beside it: not supported (Unfurl 1.2.0 fails "
           "on an eval mapping that names no function: 'Function missing')",
           f"name the function: {{eval: {{{functions[0]}: ..., {first}: ...}}}}, or remove "
           "`eval:` to keep the mapping as data")


#: filters that take the options of the eval function of their name (Unfurl ignores a
#: misspelt one; here it is named)
_LABEL_FILTERS = frozenset({"to_label", "to_dns_label", "to_kubernetes_label",
                            "to_googlecloud_label"})


def _template(path: tuple[Any, ...], text: str) -> Iterator[Found]:
    if not could_be_template(text):
        return
    names = analyse(text)
    builtin_filters, builtin_tests = _builtins()
    for name in names.filters:
        if not catalog.known("filter", name, builtin_filters):
            yield (path, *catalog.refusal("filter", name, builtin_filters))
    for name in names.tests:
        if not catalog.known("test", name, builtin_tests):
            yield (path, *catalog.refusal("test", name, builtin_tests))
    for name in names.lookups:
        if name != "?" and not catalog.known("lookup", name):
            yield (path, *catalog.refusal("lookup", name))
    for name in names.free:
        found = catalog.entry("global", name)
        if found is not None and found.refused:
            yield (path, *catalog.refusal("global", name))
    yield from ((path, message, hint) for message, hint in _unfurl_machinery(names.dotted))
    yield from ((path, message, hint) for message, hint in _filter_options(names))
    if "eval" in names.filters or "ref" in names.filters:
        # start-up: keeps expressions.checks (1 module) off `plan` until _template() runs
        from unfurl_lite.expressions.checks import query_problems

        if _TRACE_BREAK.search(text):
            yield (path, "`trace: break` stops Unfurl in Python's debugger: not supported",
                   "remove it, or give a trace level (trace: 1)")
        for query in _QUERY_FILTERED.findall(text):
            if query and not query.startswith("$"):
                yield from ((path, message, hint) for _, message, hint in query_problems(query))


def _filter_options(names: TemplateNames) -> Iterator[tuple[str, str]]:
    for name, keyword in names.filter_keywords:
        known = catalog.entry("function", name) if name in _LABEL_FILTERS else None
        if known is not None and keyword not in known.options:
            yield (f"{keyword!r} is not an option of the filter {name!r}",
                   f"{name!r} takes " + ", ".join(sorted(known.options)))


def _unfurl_machinery(dotted: tuple[tuple[str, str, int], ...]) -> Iterator[tuple[str, str]]:
    """``SELF.context``: on the mappings templates see, Unfurl 1.2.0 gives its own object
    for these names, never the key (:mod:`unfurl_lite.expressions.attributes`)."""
    # start-up: keeps expressions.attributes off a `plan` whose document has no Jinja template
    from unfurl_lite.expressions.attributes import UNFURL_INTERNALS

    for root, name, depth in dotted:
        if root not in OPERATION_VARIABLES or name not in UNFURL_INTERNALS:
            continue
        if root == "inputs" and depth == 1 and name in ("validate", "applyTemplates"):
            continue  # Unfurl's value (False, True): given here too
        written = f"{root}.{name}" if depth == 1 else f"{root}. ... .{name}"
        yield (f"`{written}`: `.{name}` of a mapping is Unfurl's internal {name!r}, "
               f"not the key {name!r}: not supported", f"read the key with ['{name}']")


def _builtins() -> tuple[frozenset[str], frozenset[str]]:
    """Jinja2's own filters and tests (those of the sandbox, less what the catalog adds)."""
    # start-up: keeps expressions.sandbox (13 modules) off `plan` until _builtins() runs
    from unfurl_lite.expressions.sandbox import environment

    env = environment()
    return frozenset(env.filters), frozenset(env.tests)
