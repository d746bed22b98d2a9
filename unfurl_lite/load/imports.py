"""TOSCA ``imports:`` of local files, merged into the service template as Unfurl 1.2.0
merges them.

An import makes the imported file's *types* available (never its node templates: those
only serve Unfurl's substitution, whose `substitute` directive is refused). What wins on a
clash was measured
(tests/data/unfurl120/15-imports-types): the importing file's own definition beats an
imported one, and of two imports the later one wins. ``namespace_prefix: P`` names each
type of that import (nested imports included) ``P.Type``; references between those types
are renamed with them, as Unfurl's namespaces resolve them.

Imports are relative to the importing file, may nest, may not form a cycle (Unfurl 1.2.0
recurses until Python gives up), and must stay inside the project. Repository imports,
URLs and Python (the TOSCA Python DSL) are refused by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from unfurl_lite.errors import InputError, PathError, Problem
from unfurl_lite.load import origins
from unfurl_lite.load.problems import SERVICE, get_section, mapping, problem_at
from unfurl_lite.model.narrow import is_list, is_map, new_list
from unfurl_lite.security.paths import PROTECTED_HINT, PROTECTED_WHY, confine, protected_part

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from ruamel.yaml.comments import CommentedMap

#: the sections of a TOSCA file an import brings in (``types``: Unfurl's combined section)
TYPE_SECTIONS = ("node_types", "relationship_types", "capability_types", "interface_types",
                 "data_types", "artifact_types", "policy_types", "group_types", "types")
#: keys inside a type definition that name another type
_TYPE_REFERENCES = ("derived_from", "type", "node", "relationship", "capability",
                    "valid_source_types", "valid_target_types", "entry_schema")
_IMPORT_KEYS = ("file", "namespace_prefix", "repository")
#: the most files deep an import may be (each imported by the one before): each level is
#: read inside the one importing it, and Python's recursion limit is about 1,000 calls (a
#: chain of 1,200 files ended in a misleading "nested more than 100 levels deep")
MAX_IMPORT_DEPTH = 100
_URL = re.compile(r"^[A-Za-z][\w+.-]*://")

#: section -> [(name, body, src, src_key)]
Sections: TypeAlias = "dict[str, list[tuple[str, Any, Any, Any]]]"


def has_imports(data: Any) -> bool:
    return bool(get_section(data, SERVICE).get("imports"))


@dataclass
class _Context:
    """What resolving TOSCA imports carries along: files read, the chain, problems."""
    project_root: Path
    reads: dict[str, str | None]
    problems: list[Problem] = field(default_factory=new_list)
    chain: tuple[Path, ...] = ()


def apply(doc: Any, file: Path, project_root: Path,
          reads: dict[str, str | None] | None = None) -> Any:
    """``doc`` with the types of its imports merged into its service template (``doc``
    itself when it imports nothing). Raises InputError naming the import (its file and
    line) of every import that could not be loaded."""
    service = get_section(doc, SERVICE)
    if not service.get("imports"):
        return doc
    ctx = _Context(project_root.resolve(), reads if reads is not None else {},
                   chain=(file.resolve(),))
    owner = Path(origins.source_file(service, "imports") or file)  # an +include's file
    imported = _imports_of(doc, str(owner), owner.parent, ctx)
    if ctx.problems:
        raise InputError(ctx.problems, summary=f"{file.name}: imports failed")
    return _with_service(doc, _merged_service(service, imported, str(file)), str(file))


def _merged_service(service: Any, imported: Sections, file: str) -> CommentedMap:
    """The service template with each type section's imported definitions first, then
    its own (which win); every definition keeps the file and line it was read from."""
    from ruamel.yaml.comments import CommentedMap  # start-up: a cold plan of plain data: no ruamel

    merged = origins.new_map(service if isinstance(service, CommentedMap) else None, file)
    for key in service:
        if key not in TYPE_SECTIONS:
            origins.put(merged, key, service[key], service, key, file)
    for section in TYPE_SECTIONS:
        own = service.get(section)
        entries = imported.get(section, [])
        if not entries:
            if section in service:
                origins.put(merged, section, own, service, section, file)
            continue
        target = origins.new_map(own if isinstance(own, CommentedMap) else None, file)
        for name, body, src, src_key in entries:
            target.pop(name, None)  # a later definition wins, and takes its place in order
            origins.put(target, name, body, src, src_key, origins.source_file(src) or file)
        for name, body in mapping(own).items():
            target.pop(name, None)
            origins.put(target, name, body, own, name, file)
        origins.put(merged, section, target, service, section, file)
    return merged


def _with_service(doc: Any, service: CommentedMap, file: str) -> CommentedMap:
    """A new document: ``doc`` with ``service`` as its spec's service template."""
    from ruamel.yaml.comments import CommentedMap  # start-up: a cold plan of plain data: no ruamel

    result = origins.new_map(doc if isinstance(doc, CommentedMap) else None, file)
    for key in doc:
        if key != "spec":
            origins.put(result, key, doc[key], doc, key, file)
    spec = origins.new_map(doc["spec"] if isinstance(doc["spec"], CommentedMap) else None, file)
    for key in doc["spec"]:
        value = service if key == "service_template" else doc["spec"][key]
        origins.put(spec, key, value, doc["spec"], key, file)
    origins.put(result, "spec", spec, doc, "spec", file)
    return result


def _imports_of(doc: Any, file: str, base: Path, ctx: _Context,
                path: tuple[Any, ...] = SERVICE) -> Sections:
    """The types every import of ``doc`` (a service template at ``path``) brings, in
    import order (later ones win)."""
    found: Sections = {}
    entries = mapping(_at(doc, path)).get("imports")
    for index, entry in enumerate(entries if is_list(entries) else ()):
        where = (*path, "imports", index)
        name, prefix, why = _entry(entry)
        if why is not None:
            ctx.problems.append(problem_at(doc, where, file, why[0], why[1]))
            continue
        assert name is not None
        loaded = _load(doc, where, file, base, name, ctx)
        local = {n for items in loaded.values() for n, *_ in items}
        for section, items in loaded.items():
            if prefix:
                items = _prefixed(items, prefix, local)
            found.setdefault(section, []).extend(items)
    return found


def _entry(entry: Any) -> tuple[str | None, str | None, tuple[str, str] | None]:
    """(file, namespace prefix, problem) of one ``imports:`` item."""
    if is_map(entry) and len(entry) == 1 and "file" not in entry:
        ((_, entry),) = entry.items()  # TOSCA 1.0's named form: {name: file}
    if isinstance(entry, str):
        entry = {"file": entry}
    if not is_map(entry):
        return None, None, ("an import must be a file name or {file: ..., namespace_prefix: ...}",
                            "write `- types.yaml` or `- {file: types.yaml}`")
    if entry.get("repository") is not None:
        return None, None, (
            f"importing from repository {entry['repository']!r} is not supported: "
            "repositories are Unfurl's project machinery, which unfurl-lite does not have",
            "copy the file into the project and import it by its path")
    if "when" in entry:
        return None, None, (
            "a conditional import (`when:`, Unfurl's expression over the topology) is not "
            "supported", "import the file unconditionally, or leave the import out")
    unknown = [str(k) for k in entry if k not in _IMPORT_KEYS]
    if unknown:
        return None, None, (f"import key {unknown[0]!r} is not supported",
                            "an import here takes `file` and `namespace_prefix`")
    name, prefix = entry.get("file"), entry.get("namespace_prefix")
    if not isinstance(name, str) or not name.strip():
        return None, None, ("an import needs a file name", "write `- {file: types.yaml}`")
    if prefix is not None and (not isinstance(prefix, str) or not prefix.strip()):
        return None, None, ("namespace_prefix must be a name", "write `namespace_prefix: X`")
    if _URL.match(name):
        return None, None, (f"importing {name!r} (a URL) is not supported",
                            "download the file into the project and import it by its path")
    if name.partition("#")[0].endswith(".py"):
        return None, None, (
            f"importing {name!r} (Python: Unfurl's TOSCA Python DSL) is not supported",
            "write the types in YAML and import that file")
    return name, prefix, None


def _load(doc: Any, where: tuple[Any, ...], file: str, base: Path, name: str,
          ctx: _Context) -> Sections:
    """One TOSCA import: confined to the project, never a file of git's or a credential store,
    read once, with the sections it brings; a problem instead of an error so validate
    reports them all."""
    def fail(message: str, hint: str) -> Sections:
        ctx.problems.append(problem_at(doc, where, file, message, hint))
        return {}

    relative, _, fragment = name.partition("#")
    try:
        target = confine(base / relative, ctx.project_root, what="import")
    except PathError:
        return fail(f"import {name!r} escapes the project directory {ctx.project_root}",
                    "imports must name files inside the project (no '..', absolute paths "
                    "or symlinks that lead outside it)")
    store = protected_part(relative) or protected_part(target, ctx.project_root)
    if store is not None:
        return fail(f"import {name!r} is inside {store}: {PROTECTED_WHY}", PROTECTED_HINT)
    if target in ctx.chain:
        cycle = " -> ".join(p.name for p in (*ctx.chain, target))
        return fail(f"import cycle: {cycle}", "remove one of the imports in the cycle")
    if len(ctx.chain) > MAX_IMPORT_DEPTH:  # the ensemble and the files in between
        files = [p.name for p in ctx.chain]
        return fail(f"importing {name!r} here makes a chain of more than {MAX_IMPORT_DEPTH} "
                    f"imports, each file imported by the one before ({files[0]} -> "
                    f"{files[1]} -> ... -> {files[-1]} -> {name})",
                    "import the files from the ensemble (or a file it imports) directly, "
                    "not each from the one before")
    if not target.is_file():
        ctx.reads[str(target)] = None
        return fail(f"imported file {name!r} not found", f"create {target}, or remove the import")
    try:
        parsed = _parse(target, ctx)
    except InputError as exc:
        ctx.problems.extend(exc.problems)
        return {}
    if fragment:
        from unfurl_lite.load import merge  # start-up: keeps ruamel (49 modules) off `plan`

        parsed = merge._lookup(parsed, merge._split_pointer(fragment))
        if parsed is None:
            return fail(f"{fragment!r} not found in {relative!r}", "check the path after '#'")
    if not is_map(parsed):
        return fail(f"imported file {name!r} is not a mapping of TOSCA definitions",
                    "an imported file holds node_types, relationship_types, ...")
    outer = ctx.chain
    ctx.chain = (*outer, target)
    try:
        return _definitions(parsed, str(target), target.parent, ctx)
    finally:
        ctx.chain = outer


def _parse(target: Path, ctx: _Context) -> Any:
    """An imported file as read, its merge directives applied (merge is imported here:
    an ensemble without imports never needs it)."""
    # start-up: keeps ruamel (49 modules) off `plan` until _parse() runs
    from unfurl_lite.load import guard, merge, parsecache, yamlio

    text = yamlio.read_text(target)
    ctx.reads[str(target)] = parsecache.text_digest(text)
    guard.check_round_trip(text, str(target))
    document = yamlio.parse(text, str(target))
    if not is_map(document):
        return document
    return merge.expand(document, target, ctx.project_root, reads=ctx.reads)


def _definitions(parsed: Any, file: str, base: Path, ctx: _Context) -> Sections:
    """An imported file's types: its own imports' first, its own definitions over them."""
    # an imported topology's `substitution_mappings` (or `root`) only serves a template
    # with the `substitute` directive, which is refused by name (load/unsupported.py):
    # without one, Unfurl 1.2.0 ignores it, as here (tests/data/unfurl120/51-substitution)
    if parsed.get("decorators"):
        ctx.problems.append(problem_at(
            parsed, ("decorators",), file,
            "Unfurl's `decorators:` in an imported file is not supported",
            "an import here brings in types only; remove it from the imported file"))
    found = _imports_of(parsed, file, base, ctx, path=())
    for section in TYPE_SECTIONS:
        types = parsed.get(section)
        if is_map(types):
            found.setdefault(section, []).extend(
                (str(name), body, types, name) for name, body in types.items())
    return found


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    return get_section(doc, path) if path else doc


def _prefixed(items: list[tuple[str, Any, Any, Any]], prefix: str, local: set[str]
              ) -> list[tuple[str, Any, Any, Any]]:
    for _, body, *_ in items:
        _rename(body, local, prefix)
    return [(f"{prefix}.{name}", body, src, key) for name, body, src, key in items]


def _rename(node: Any, local: set[str], prefix: str) -> None:
    """References to types of the same import take its prefix (in place: the imported
    document was built for this load)."""
    if is_map(node):
        for key, value in node.items():
            if key in _TYPE_REFERENCES and isinstance(value, str) and value in local:
                node[key] = f"{prefix}.{value}"
            elif key in _TYPE_REFERENCES and is_list(value):
                for i, item in enumerate(value):
                    if isinstance(item, str) and item in local:
                        value[i] = f"{prefix}.{item}"
                    else:
                        _rename(item, local, prefix)
            else:
                _rename(value, local, prefix)
    elif is_list(node):
        for item in node:
            _rename(item, local, prefix)
