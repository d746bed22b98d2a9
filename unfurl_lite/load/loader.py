"""From ``ensemble.yaml`` on disk to an :class:`Ensemble`: parse, merge, validate, build.

Two roads lead to the same model. The fast one (C parser into plain data, or the parse
cache) serves ensembles without merge directives, which is almost all of them; the round
trip keeps line numbers and applies directives, and is also how every invalid ensemble is
reported, so errors always name their line. The round-trip document a job may need to
write back is parsed only when it is first asked for.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from unfurl_lite.errors import InputError, LimitExceeded, Problem
from unfurl_lite.load import parsecache, yamlio
from unfurl_lite.load.builder import build
from unfurl_lite.load.collector import no_collection
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.narrow import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.documents import EnsembleDoc
    from unfurl_lite.model.narrow import YAMLValue

ENSEMBLE_FILE = "ensemble.yaml"


def resolve_path(path: str | Path | None) -> Path:
    """ENSEMBLE may be a file, a directory holding ensemble.yaml, or omitted (cwd)."""
    candidate = Path(path) if path else Path.cwd()
    if candidate.is_dir():
        candidate = candidate / ENSEMBLE_FILE
    if not candidate.exists():
        raise InputError(
            Problem(
                "ensemble not found",
                file=str(candidate),
                hint="give the path of an ensemble.yaml, or run `unfurl init` to create one",
            )
        )
    return candidate.resolve()


def load_ensemble(path: str | Path | None = None, given: Collection[str] = ()) -> Ensemble:
    """The validated ensemble; ``given``: the topology inputs the job sets itself (``--var
    input_NAME``), which a required input may lack in the file (such a load is not cached:
    the file alone would not validate)."""
    with no_collection():  # see there: parse, checks and build make no reference cycles
        if not given:
            return _load(resolve_path(path))
        from unfurl_lite.load import structure  # start-up: a job with --var input_NAME only

        with structure.inputs_given(given):
            ensemble = _load(resolve_path(path), cache=False)
        ensemble.valid_alone = False
        return ensemble


def _load(file: Path, cache: bool = True) -> Ensemble:
    text = yamlio.read_text(file)
    cached = parsecache.get(file, text) if cache else None
    if cached is not None:
        data, raw = cached["data"], cached["raw"]
    else:
        data, raw = _fast_load(text, str(file)), None
        if data is None:
            return _round_trip_load(file, text, cache)
        if cache:
            parsecache.put(file, text, data)
    ensemble = build(file, text, cast("EnsembleDoc", data))  # parsed: the ensemble's shape
    ensemble.merged = raw is not None
    ensemble.plain = raw if raw is not None else data
    return ensemble


#: a line that may hold a merge directive (``+include:``) or ``imports:``
_DIRECTIVES = re.compile(r"""^[ \t]*["']?(?:\+|imports["']?:)""", re.M)


def _fast_load(text: str, file: str) -> dict[str, Any] | None:
    """Valid plain data through the C parser, or None when only the round trip can apply
    merge directives or say where a problem is. A document too large for the round trip
    has its problems said here, by path (and a syntax error at its line)."""
    # start-up: keeps load.expression_checks (26 modules) off `validate` until _fast_load() runs
    from unfurl_lite.load import expression_checks, guard, imports, structure, validate

    guard.check_text(text, file)  # its refusals are final: no slower parse follows
    large = guard.estimated_values(text) > guard.MAX_ROUND_TRIP_VALUES
    if large and _DIRECTIVES.search(text):
        guard.check_round_trip(text, file)  # refused now, not after a plain parse
    data: YAMLValue
    try:
        guard.check_aliases(text, file)  # before a loader copies merged keys
        data, directives = _parse_guarded(text, file)
    except LimitExceeded:
        raise
    except InputError:
        if large:
            raise
        return None
    except (RecursionError, ValueError, IndexError, OverflowError):
        return None
    except Exception as exc:  # ruamel's own, raised on the composer's road only:
        from ruamel.yaml.error import (  # start-up: block YAML needs no ruamel
            MarkedYAMLError,
            YAMLError,
        )

        if isinstance(exc, MarkedYAMLError) and large:
            raise yamlio.syntax_error(exc, file) from None
        if isinstance(exc, YAMLError):
            return None
        raise
    if not isinstance(data, dict) or directives or imports.has_imports(data):
        return None
    normal: dict[str, Any] = structure.normalised(data)
    with expression_checks.read_from(text):  # this text alone: no include, import or merge
        problems = validate.check(normal, file)
    if problems and large:
        raise InputError(problems, summary=f"{Path(file).name} is not a valid ensemble")
    return None if problems else normal


def _parse_guarded(text: str, file: str) -> tuple[Any, bool]:
    """The plain data, checked by the guard (an InputError if it refuses it), and whether
    any key is a merge directive. The C parser's road answers both while it builds the
    data; what it cannot read goes through ruamel's safe loader and the separate walks."""
    from unfurl_lite.load import guard, plainyaml  # start-up: keeps load.guard off `redeploy`

    try:
        found = plainyaml.load_guarded(text)
        return found.data, found.directives
    except (plainyaml.NeedsFullLoader, ImportError):
        pass
    from unfurl_lite.load import merge  # start-up: the fast road knows without it

    data = yamlio.parse_plain(text)
    guard.check(data, file)
    return data, merge.has_directives(data)


def _round_trip_load(file: Path, text: str, cache: bool = True) -> Ensemble:
    # start-up: keeps ruamel (61 modules) off `plan`, `validate` until _round_trip_load() runs
    from unfurl_lite.load import guard, imports, merge, structure, validate

    with guard.round_trip_budget():  # the ensemble, its includes and imports
        guard.check_round_trip(text, str(file))
        document: YAMLValue = yamlio.parse(text, str(file))
        if not isinstance(document, dict):
            raise InputError(Problem("the ensemble must be a YAML mapping", file=str(file), line=1))
        reads: dict[str, str | None] = {}
        merged = merge.expand(document, file, file.parent, reads=reads)
        merged = structure.normalised(imports.apply(merged, file, file.parent, reads=reads))
        problems = validate.check(merged, str(file))
        if problems:
            raise InputError(problems, summary=f"{file.name} is not a valid ensemble")
        data = yamlio.to_plain(merged)
        ensemble = build(file, text, data)
        ensemble._document = document
        if merge.has_directives(document) or imports.has_imports(document):
            ensemble.merged = True
            ensemble.plain = yamlio.to_plain(document)
            if cache:
                parsecache.put(file, text, data, deps=reads, raw=ensemble.plain)
        return ensemble
