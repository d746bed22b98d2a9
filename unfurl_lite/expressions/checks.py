"""What ``validate`` asks of a query and of a function's arguments, beyond the catalog's
names (:mod:`unfurl_lite.load.expression_checks` walks the spec and asks here): a query
must parse and name only keys an instance has; a function's options Unfurl acts on and
that are refused here (writing a file, the whole environment) are named.

Each check gives (where under the value, message, hint).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.query import Segment, parse_query

Found = tuple[tuple[Any, ...], str, str]


def _special_keys(text: str) -> Iterator[str]:
    def walk(segments: tuple[Segment, ...]) -> Iterator[str]:
        for segment in segments:
            if isinstance(segment.key, str) and segment.key.startswith(".") and \
                    segment.key not in (".", ".."):
                yield segment.key[1:]
            for predicate in segment.predicates:
                yield from walk(predicate)

    yield from walk(parse_query(text).segments)


def query_problems(text: str) -> Iterator[Found]:
    """A query that cannot parse, or names a key no instance has."""
    # start-up: keeps expressions.keys (7 modules) off checks's import until query_problems() runs
    from unfurl_lite.expressions.keys import INTERNAL_KEYS, SPECIAL_KEYS

    try:
        keys = list(_special_keys(text))
    except ExpressionError as exc:
        yield (), f"query {text!r}: {exc.message}", exc.hint or ""
        return
    query = parse_query(text)
    if query.absolute and len(query.segments) == 1:
        yield ((), f"query {text!r} names nothing to read (Unfurl fails on it with an "
               "IndexError)", "a query that starts with the index 0 starts at every "
               "instance, as '::' does: write '::name' after it")
    for key in dict.fromkeys(keys):
        if key in SPECIAL_KEYS:
            continue
        if key in INTERNAL_KEYS:
            yield ((), f"query {text!r}: `.{key}` is Unfurl's internal Python object, "
                   "not supported", "use the keys docs/expressions.md lists")
        else:
            yield ((), f"query {text!r}: no instance has the key `.{key}`",
                   "the keys are: " + ", ".join("." + k for k in sorted(SPECIAL_KEYS)))


def function_problems(name: str, body: Mapping[str, Any]) -> Iterator[Found]:
    """Options of an implemented function that stay refused here."""
    # start-up: keeps expressions.files off checks's import until function_problems() runs
    from unfurl_lite.expressions.files import UNSUPPORTED_ENCODINGS

    if name == "file":
        if "contents" in body:
            yield (("contents",), "file: writing a file from an expression is not supported",
                   "write files from an operation")
        if str(body.get("encoding")) in UNSUPPORTED_ENCODINGS:
            yield (("encoding",), f"file: encoding {body['encoding']!r} is not supported",
                   "read text with a text encoding (utf-8, latin-1...)")
    elif name == "get_env" and not body["get_env"]:
        yield (("get_env",), "get_env without a name (the whole environment) is not "
               "supported", "name the variable: {get_env: NAME}")
    elif name == "to_env" and body.get("update_os_environ"):
        yield (("update_os_environ",), "to_env: update_os_environ is not supported",
               "set variables for an operation with its `environment`")
    elif name == "tempfile" and str(body.get("encoding")) in ("vault", "env", "binary"):
        yield (("encoding",), f"tempfile: encoding {body['encoding']!r} is not supported",
               "use yaml, json or a text encoding")
    elif name == "lookup" and isinstance(body["lookup"], Mapping) and body["lookup"]:
        # start-up: keeps expressions.catalog off checks's import until function_problems() runs
        from unfurl_lite.expressions import catalog

        # start-up: keeps expressions.lookups off checks's import until function_problems() runs
        from unfurl_lite.expressions.lookups import eval_form_refusal

        plugin = str(next(iter(body["lookup"])))
        if not catalog.known("lookup", plugin):
            message, hint = catalog.refusal("lookup", plugin)
            yield ("lookup", plugin), message, hint
        elif (refused := eval_form_refusal(plugin)) is not None:
            yield ("lookup", plugin), *refused
