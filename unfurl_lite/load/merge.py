"""Unfurl's merge directives: ``+include``, ``+/pointer``, ``+..``, ``+*anchor``, ``+%``.

:func:`expand` builds a new document and never touches the one it is given, because jobs
save the user's round-trip document back with its directives intact. Every container in
the result keeps ruamel line info and remembers which file each key came from
(:func:`source_file`), so an error inside included content names the included file.
How two mappings merge is :mod:`~unfurl_lite.load.merge_maps`; where each part came from,
:mod:`~unfurl_lite.load.origins`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from unfurl_lite.errors import InputError, Problem
from unfurl_lite.load import guard, parsecache, positions, yamlio
from unfurl_lite.load.merge_maps import STRATEGY_KEY, merge_maps
from unfurl_lite.load.origins import (  # noqa: F401 (the merged document's origins, for callers)
    Definition,
    Path_,
    format_path,
    merged_from,
    new_map,
    new_seq,
    put,
    source_file,
)
from unfurl_lite.model.narrow import (
    YAMLMap,
    YAMLValue,
    is_list,
    is_map,
    new_dict,
    new_list,
)
from unfurl_lite.security.paths import PROTECTED_HINT, PROTECTED_WHY, protected_part

ANCHOR_KEY = "+&"
#: the most files deep an ``+include`` may be (each included by the one before): each
#: level is expanded inside the one including it, and Python's recursion limit is about
#: 1,000 calls (a chain of 300 files printed a RecursionError traceback)
MAX_INCLUDE_DEPTH = 50
_DIRECTIVE = re.compile(r"^\+(?P<maybe>\?)?(?:(?P<include>include[\w-]*)|(?P<ref>.*))$")
_FIRST = re.compile(r"^(?:\*(?P<anchor>[^/.]+))?(?P<dots>\.*)$")


def expand(
    doc: Any, file: Path, project_root: Path, reads: dict[str, str | None] | None = None
) -> CommentedMap:
    """Return a new document with every merge directive applied.

    ``reads``, if given, learns every file an include looked at and the SHA-256 of what it
    held (None: it did not exist), so a cache of the result knows when it is stale.
    Raises InputError listing every directive that could not be applied.
    """
    fallback: Any = None
    misses = 0
    parsed: dict[Path, Any] = {}  # shared by the passes: each include is read once per load
    # shared by the passes too, as Unfurl's anchor cache: an include's anchors, met in one
    # pass, serve a `+*name` the pass met before the include
    anchors: dict[str, tuple[Any, str]] = {}
    _collect_anchors(doc, str(file), anchors)
    while True:
        ctx = _Context(root=doc, main_file=str(file), project_root=project_root.resolve(),
                       fallback=fallback, parsed=parsed, anchors=anchors)
        if reads is not None:
            ctx.reads = reads
        ctx.includes = (file.resolve(),)
        result = _expand(doc, (), str(file), ctx)
        if ctx.problems or not ctx.missing or (fallback is not None and len(ctx.missing) >= misses):
            break
        # like Unfurl, look again in what this pass merged: a pointer may lead through
        # another directive or into content an include brought in
        fallback, misses = result, len(ctx.missing)
    ctx.problems.extend(m.problem for m in ctx.missing if not m.maybe)
    if ctx.problems:
        raise InputError(ctx.problems, summary=f"{Path(file).name}: merge directives failed")
    if not isinstance(result, CommentedMap):
        result = new_map(doc if isinstance(doc, CommentedMap) else None, str(file))
    result.pop(STRATEGY_KEY, None)
    for missing in reversed(ctx.missing):
        _delete_path(result, missing.path)
    _delete_stray_markers(result)
    return result


def _delete_path(doc: Any, path: Path_) -> None:
    """Unfurl drops the whole mapping that holds an optional reference that found nothing."""
    if not path:
        return
    parent: YAMLValue = _lookup(doc, path[:-1])
    last = path[-1]
    if isinstance(parent, dict):
        if isinstance(last, str):  # (an index names nothing in a mapping)
            parent.pop(last, None)
    elif is_list(parent) and isinstance(last, int) and last < len(parent):
        del parent[last]


def _delete_stray_markers(node: YAMLMap) -> None:
    """Remove values still marked whiteout/nullout (nothing was under them), as Unfurl does."""
    for key in list(node):
        value = node[key]
        if is_map(value):
            if value.get(STRATEGY_KEY) in ("whiteout", "nullout"):
                del node[key]
            else:
                _delete_stray_markers(value)


def has_directives(doc: Any) -> bool:
    """Whether any mapping key is a merge directive (``+...``), i.e. expand would change it."""
    stack: list[YAMLValue] = [doc]
    child: YAMLValue
    while stack:
        node = stack.pop()
        if is_map(node):
            if any(isinstance(key, str) and key.startswith("+") for key in node):
                return True
            for child in node.values():
                if isinstance(child, dict | list):
                    stack.append(child)
        elif is_list(node):
            for child in node:
                if isinstance(child, dict | list):
                    stack.append(child)
    return False


@dataclass
class _Context:
    """What a merge pass carries along: anchors, the include chain, the root."""
    root: Any
    main_file: str
    project_root: Path
    anchors: dict[str, tuple[Any, str]] = field(default_factory=new_dict)
    includes: tuple[Path, ...] = ()
    reads: dict[str, str | None] = field(default_factory=new_dict)
    resolving: tuple[int, ...] = ()
    problems: list[Problem] = field(default_factory=new_list)
    parsed: dict[Path, Any] = field(default_factory=new_dict)  # each include read once per load
    nodes: int = 0  # nodes produced so far, includes and references expanded
    included_nodes: int = 0  # what the includes met so far add, once expanded
    sizes: dict[Path, int] = field(default_factory=new_dict)  # a file's size, includes expanded
    fallback: Any = None  # the previous pass's result, for pointers into merged content
    missing: list[_Missing] = field(default_factory=new_list)


@dataclass(frozen=True)
class _Missing:
    """A reference that found nothing in this pass; a later pass may find it."""

    path: Path_
    maybe: bool
    problem: Problem


@dataclass(frozen=True)
class _Directive:
    """One merge directive key, parsed once: what it names and how."""
    key: str
    maybe: bool
    include: bool
    anchor: str | None
    up: int  # how many "." were written: 1 is the mapping itself, 2 its parent
    pointer: tuple[str, ...]


def parse_directive(key: Any) -> _Directive | None:
    """Read a ``+...`` key; None when the key is ordinary data that happens to start with +."""
    if not isinstance(key, str) or key in (STRATEGY_KEY, ANCHOR_KEY):
        return None
    match = _DIRECTIVE.match(key)
    if not match:
        return None
    maybe = bool(match["maybe"])
    if match["include"]:
        return _Directive(key, maybe, True, None, 0, ())
    first, *rest = match["ref"].split("/")
    head = _FIRST.match(first)
    if not head or (not first and not rest):
        return None
    pointer = tuple(p.replace("~1", "/").replace("~0", "~") for p in rest)
    return _Directive(key, maybe, False, head["anchor"], len(head["dots"]), pointer)


def _expand(node: Any, path: Path_, file: str, ctx: _Context) -> Any:
    ctx.nodes += 1
    if ctx.nodes > guard.MAX_EXPANDED_NODES:
        raise InputError(Problem(
            f"the document expands to more than {guard.MAX_EXPANDED_NODES} nodes once its "
            "includes and references are expanded (a file included many times over?)",
            file=file, path=format_path(path) if path else None,
            hint="include each file once, or split the ensemble",
        ))
    if is_map(node):
        return _expand_map(node, path, file, ctx)
    if is_list(node):
        return _expand_seq(node, path, file, ctx)
    return node


def _expand_seq(seq: Any, path: Path_, file: str, ctx: _Context) -> CommentedSeq:
    out = new_seq(seq if isinstance(seq, CommentedSeq) else None, file)
    for index, item in enumerate(seq):
        if is_map(item) and item.get(STRATEGY_KEY) == "whiteout":
            continue
        value = _expand(item, (*path, len(out)), file, ctx)
        if is_map(item) and is_list(value) and _has_directive(item):
            for sub_index, sub in enumerate(value):
                put(out, len(out), sub, value, sub_index, file)
        else:
            put(out, len(out), value, seq, index, file)
    return out


def _has_directive(mapping: YAMLMap) -> bool:
    return any(parse_directive(k) for k in mapping)


def _expand_map(mapping: Any, path: Path_, file: str, ctx: _Context) -> Any:
    """A mapping with its merge directives applied: its own keys first, then what each
    directive brings, merged in the order Unfurl merges them."""
    src = mapping if isinstance(mapping, CommentedMap) else None
    own = new_map(src, file)
    bases: list[Any] = []
    for key, value in mapping.items():
        if key == ANCHOR_KEY:
            continue
        directive = parse_directive(key)
        if directive is None:
            put(own, key, _expand(value, (*path, key), file, ctx), mapping, key, file)
            continue
        for result in _apply(directive, value, mapping, path, file, ctx):
            if is_map(result):
                bases.append(result)
            elif len(mapping) > 1 + (ANCHOR_KEY in mapping):
                ctx.problems.append(
                    _problem(
                        f"{key} gives a {type(result).__name__}, which cannot merge with "
                        "the other keys of this mapping",
                        mapping, key, path, file,
                        "a directive that yields a list or a value must be the mapping's only key",
                    )
                )
            else:
                return result
    if not bases:
        return own
    merged = new_map(src, file)
    try:
        for base in [*bases, own]:
            merged = merge_maps(merged, base)
    except InputError as exc:  # `+%: error`: say where the merge was asked for
        key = next(k for k in mapping if parse_directive(k))
        ctx.problems.extend(_problem(p.message, mapping, key, path, file, p.hint or "")
                            for p in exc.problems)
    return merged


def _apply(
    directive: _Directive, value: Any, mapping: Any, path: Path_, file: str, ctx: _Context
) -> Iterator[Any]:
    if directive.include:
        specs = value if is_list(value) else [value]
        for spec in specs:
            included = _include(directive, spec, mapping, path, file, ctx)
            if included is not None:
                yield included
        return
    found = _resolve_reference(directive, mapping, path, file, ctx)
    if found is not None:
        yield found


def _problem(
    message: str, mapping: Any, key: Any, path: Path_, file: str, hint: str
) -> Problem:
    line, column = positions.location(mapping, key)
    return Problem(message, file=file, line=line, column=column,
                   path=format_path((*path, key)), hint=hint)


# --- includes -------------------------------------------------------------------------


def _include_target(spec: Any) -> tuple[str | None, str]:
    """(file name, fragment pointer) from ``file.yaml#/a/b`` or ``{file: ...}``."""
    if is_map(spec):
        spec = spec.get("file")
    if not isinstance(spec, str) or not spec.strip():
        return None, ""
    name, _, fragment = spec.partition("#")
    return name, fragment


def _include(
    directive: _Directive, spec: Any, mapping: Any, path: Path_, file: str, ctx: _Context
) -> Any:
    """Unfurl's ``+include``: the file confined to the project, refused if too large for what
    was read before it, parsed and expanded with its own directives; problems are collected,
    not raised."""
    def fail(message: str, hint: str) -> None:
        ctx.problems.append(_problem(message, mapping, directive.key, path, file, hint))

    name, fragment = _include_target(spec)
    if name is None:
        fail("include needs a file name", "write `+include: other.yaml` or `{file: other.yaml}`")
        return None
    if is_map(spec) and spec.get("repository") not in (None, "self", "spec"):
        fail(f"includes from repository {spec.get('repository')!r} are not supported",
             "copy the file into the project and include it by path")
        return None
    if "\x00" in str(name):
        fail(f"include {name!r} contains a NUL byte", "name a file inside the project")
        return None
    target = (Path(file).parent / name).resolve()
    if not target.is_relative_to(ctx.project_root):
        fail(f"include {name!r} escapes the project directory {ctx.project_root}",
             "includes must name files inside the project (no '..', absolute paths "
             "or symlinks that lead outside it)")
        return None
    store = protected_part(name) or protected_part(target, ctx.project_root)
    if store is not None:
        fail(f"include {name!r} is inside {store}: {PROTECTED_WHY}", PROTECTED_HINT)
        return None
    if target in ctx.includes:
        chain = " -> ".join(p.name for p in (*ctx.includes, target))
        fail(f"include cycle: {chain}", "remove one of the includes in the cycle")
        return None
    if len(ctx.includes) > MAX_INCLUDE_DEPTH:  # the ensemble and the files in between
        files = [p.name for p in ctx.includes]
        fail(f"including {name!r} here makes a chain of more than {MAX_INCLUDE_DEPTH} "
             f"includes, each file included by the one before ({files[0]} -> {files[1]} -> "
             f"... -> {files[-1]} -> {name})",
             "include the files from the ensemble (or a file it includes) directly, "
             "not each from the one before")
        return None
    if not target.is_file():
        ctx.reads[str(target)] = None
        if not directive.maybe:
            fail(f"included file {name!r} not found",
                 f"create {target} or write `+?include:` to make it optional")
        return None
    loaded = _parse_include(target, ctx)
    if loaded is None:
        return None
    ctx.included_nodes += _expanded_size(target, ctx, ())
    if ctx.included_nodes > guard.MAX_EXPANDED_NODES:
        raise InputError(Problem(
            f"the document expands to more than {guard.MAX_EXPANDED_NODES} nodes once its "
            f"includes are expanded (including {name!r} here brings the total over; "
            "files that include each other many times over?)",
            file=file, path=format_path(path) if path else None,
            hint="include each file once, or split the ensemble",
        ))
    if fragment:
        loaded = _lookup(loaded, _split_pointer(fragment))
        if loaded is None:
            fail(f"{fragment!r} not found in {name!r}", "check the path after '#'")
            return None
    outer = ctx.includes
    ctx.includes = (*outer, target)
    try:
        return _expand(loaded, path, str(target), ctx)
    finally:
        ctx.includes = outer


def _parse_include(target: Path, ctx: _Context) -> Any:
    """The parsed include, read and parsed once per load (None: it failed, reported)."""
    if target in ctx.parsed:
        return ctx.parsed[target]
    if target.suffix == ".py":  # Unfurl reads these as its TOSCA Python DSL
        ctx.parsed[target] = None
        ctx.problems.append(Problem(
            f"{target.name}: including Python (Unfurl's TOSCA Python DSL) is not supported",
            file=ctx.main_file, hint="write the definitions in YAML and include that",
        ))
        return None
    try:
        text = yamlio.read_text(target)
        ctx.reads[str(target)] = parsecache.text_digest(text)
        guard.check_round_trip(text, str(target))
        loaded = yamlio.parse(text, str(target))
    except InputError as exc:
        ctx.parsed[target] = None
        ctx.problems.extend(exc.problems)
        return None
    ctx.parsed[target] = loaded
    _collect_anchors(loaded, str(target), ctx.anchors)
    return loaded


def _expanded_size(target: Path, ctx: _Context, visiting: tuple[Path, ...]) -> int:
    """Nodes of an included file with its own includes expanded, computed without
    expanding anything (memoized per file), so an include "diamond" (each file including
    the next ten times) is refused at once instead of after millions of copies."""
    if target in ctx.sizes:
        return ctx.sizes[target]
    loaded = ctx.parsed.get(target) if target in ctx.parsed else _parse_include(target, ctx)
    total = 0
    stack = [loaded]
    while stack and total <= guard.MAX_EXPANDED_NODES:
        node = stack.pop()
        total += 1
        if is_map(node):
            for key, value in node.items():
                directive = parse_directive(key)
                if directive is not None and directive.include:
                    for spec in value if is_list(value) else [value]:
                        name, _ = _include_target(spec)
                        if not name or "\x00" in name:
                            continue
                        child = (target.parent / name).resolve()
                        if (child in visiting or child == target or not child.is_file()
                                or not child.is_relative_to(ctx.project_root)):
                            continue  # a cycle or a bad name: reported when expanded
                        total += _expanded_size(child, ctx, (*visiting, target))
                else:
                    stack.append(value)
        elif is_list(node):
            stack.extend(node)
    ctx.sizes[target] = total
    return total


def _split_pointer(fragment: str) -> tuple[str, ...]:
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in fragment.strip("/").split("/"))


# --- references -----------------------------------------------------------------------


def _collect_anchors(node: Any, file: str, anchors: dict[str, tuple[Any, str]]) -> None:
    """Index YAML anchors (``&name``) and Unfurl's merge anchors (``+&: name``). As in
    Unfurl, a name defined again (in the same file, or in an include read later) names the
    later definition from then on."""
    if is_map(node):
        if isinstance(node.get(ANCHOR_KEY), str):
            anchors[node[ANCHOR_KEY]] = (node, file)
        children = list(node.values())
    elif is_list(node):
        children = list(node)
    else:
        return
    anchor = getattr(node, "yaml_anchor", lambda: None)()
    if anchor is not None and anchor.value:
        anchors[anchor.value] = (node, file)
    for child in children:
        _collect_anchors(child, file, anchors)


def _lookup(node: Any, pointer: tuple[str | int, ...]) -> Any:
    for segment in pointer:
        if is_list(node):
            try:
                node = node[int(segment)]
            except (ValueError, IndexError):
                return None
        elif is_map(node) and segment in node:
            node = node[segment]
        else:
            return None
    return node


def _resolve_reference(
    directive: _Directive, mapping: Any, path: Path_, file: str, ctx: _Context
) -> Any:
    """A ``+&anchor`` or ``+path`` merge: the mapping it names, found now or recorded as
    missing so a later pass (a forward reference) can find it; ``+?`` references may be
    absent."""
    def fail(message: str, hint: str) -> None:
        if not directive.maybe:
            ctx.problems.append(_problem(message, mapping, directive.key, path, file, hint))

    def miss(message: str, hint: str) -> None:
        problem = _problem(message, mapping, directive.key, path, file, hint)
        ctx.missing.append(_Missing(path, directive.maybe, problem))

    if directive.anchor is not None:
        if directive.anchor not in ctx.anchors:
            miss(f"anchor {directive.anchor!r} not found",
                 "define it with `+&: name` in a mapping, or a YAML anchor `&name`")
            return None
        start, start_file = ctx.anchors[directive.anchor]
        target_path: Path_ | None = None
    else:
        start, start_file = ctx.root, ctx.main_file
        target_path = path[: len(path) - directive.up + 1] if directive.up else ()
        if directive.up > len(path) + 1:
            fail(f"{directive.key} goes above the top of the document", "use fewer '.'")
            return None
        start = _lookup(ctx.root, target_path)
    found = _lookup(start, directive.pointer)
    if found is None and target_path is not None and ctx.fallback is not None:
        found = _lookup(ctx.fallback, (*target_path, *directive.pointer))
    if found is None:
        miss(f"{directive.key!r} does not point at anything in the document",
             "check the path: segments are keys separated by '/', list items by index")
        return None
    if target_path is not None:
        target_path = (*target_path, *directive.pointer)
        if path[: len(target_path)] == target_path:
            fail(f"{directive.key} refers to a mapping that contains it",
                 "a directive cannot include its own ancestor")
            return None
    if id(found) in ctx.resolving:
        fail(f"{directive.key} is part of a reference cycle", "break the cycle of references")
        return None
    outer = ctx.resolving
    ctx.resolving = (*outer, id(found))
    try:
        return _expand(found, target_path if target_path is not None else path, start_file, ctx)
    finally:
        ctx.resolving = outer
