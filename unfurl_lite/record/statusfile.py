"""Writing a job's status into ensemble.yaml, whatever layout the user wrote it in.

A job that ran operations must be able to record them: a status that cannot be written
means the next deploy runs ``create`` again. So every document the loader accepts gets
written, by the first of three writers that keeps the user's part (everything but
``status``, ``lastJob``, ``jobsLog`` and an inline ``changes:`` log) reading back the same:

1. **sections**: only the status sections' lines are replaced; every other byte stays as
   typed (needs a plain top-level layout, see :mod:`sections`);
2. **round trip**: ruamel's round-trip writer re-emits the whole file, keeping comments,
   anchors and key order (what Unfurl always does); the layout may change, which is said
   once, the first time it does;
3. **plain**: the document's data written afresh (comments and anchors are lost), for the
   rare layout ruamel's round trip cannot write back exactly.

Which writer applies depends only on the layout, never on the status values, so
:func:`preflight` decides it before the first operation runs; a document none of them can
write (none is known) is refused then, with nothing run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from unfurl_lite.errors import JobError
from unfurl_lite.load import yamlio
from unfurl_lite.record import sections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.load.loader import Ensemble

log = logging.getLogger(__name__)

#: what a job rewrites in ensemble.yaml; everything else is the user's
STATUS_SECTIONS = ("status", "lastJob", "jobsLog")
#: and the inline job log, in an ensemble that keeps one
LOG_SECTION = "changes"


@dataclass(frozen=True)
class Written:
    """The new text of ensemble.yaml and how it was made."""

    text: str
    writer: str  # "sections", "round trip" or "plain"
    note: str | None = None  # said once: the layout of the user's part changed
    plain: dict[str, Any] | None = None  # the new file's data, for the parse cache


def section_names(ensemble: Ensemble) -> tuple[str, ...]:
    return (*STATUS_SECTIONS, LOG_SECTION) if ensemble.inline_log else STATUS_SECTIONS


def save_status(ensemble: Ensemble, update: Callable[[Any], None],
                writes: yamlio.Writes | None = None, cache: bool = True) -> Written:
    """Apply ``update`` (see :func:`records.update_status`) and write ensemble.yaml once
    (with ``writes``, when they are committed: see yamlio.Writes); what was written and
    by which writer. Status and lastJob were redacted as they went in; the spec is the
    user's own text whichever writer ran. ``cache=False``: the caller keeps the new text
    in the parse cache itself (:func:`remember`), e.g. while git commits it."""
    written = render(ensemble, update)
    if writes is None:
        yamlio.atomic_write(ensemble.path, written.text)
    else:
        writes.replace(ensemble.path, written.text)
    if written.note:
        log.warning("warning: %s", written.note)
    if cache:
        remember(ensemble, written)
    return written


def remember(ensemble: Ensemble, written: Written) -> None:
    """ensemble.yaml's new text and its data kept in the parse cache: the next command
    starts warm (N=10,000: 31 ms of CPU, marshalling the data)."""
    # start-up: keeps load.parsecache (6 modules) off statusfile's import until remember() runs
    from unfurl_lite.load import parsecache

    if written.plain is not None and not ensemble.merged and ensemble.valid_alone:
        parsecache.put(ensemble.path, written.text, written.plain)


def preflight(ensemble: Ensemble) -> str:
    """Before the first operation runs: which writer will record the job, refusing a
    document none can write (an ``UnfurlLiteError``, nothing run). Only an unusual
    layout costs a trial round trip; the plain one is decided by a scan of its lines."""
    if _sections_replaceable(ensemble.text, list(_own_plain(ensemble)), section_names(ensemble)):
        return "sections"
    return render(ensemble, lambda document: None, try_sections=False).writer


def render(ensemble: Ensemble, update: Callable[[Any], None],
           try_sections: bool = True) -> Written:
    """The new text of ensemble.yaml, by the first writer that keeps the user's part."""
    names = section_names(ensemble)
    if try_sections:
        plain = _own_plain(ensemble)
        keys = list(plain)
        update(plain)
        text = sections_text(ensemble.text, keys, plain, names)
        if text is not None:
            return Written(text, "sections", plain=plain)
    document = ensemble.document
    before = yamlio.dump(document)  # the layout ruamel gives the file as it stands
    update(document)
    expected = users_part(ensemble.text, names)
    text = yamlio.dump(document)
    if users_part(text, names) == expected:
        note = None if before == ensemble.text else (
            f"{ensemble.path.name}: its layout does not allow rewriting only its status "
            "sections, so the whole file was rewritten by ruamel's round trip (as Unfurl "
            "writes it): comments, anchors and key order are kept; indentation, quoting "
            "and line breaks may have changed")
        return Written(text, "round trip", note)
    text = yamlio.dump(yamlio.to_plain(document))
    if users_part(text, names) == expected:
        return Written(text, "plain", (
            f"{ensemble.path.name}: ruamel's round trip cannot write this layout back "
            "exactly, so the file was rewritten from its data: every value is kept, "
            "comments and anchors are not"))
    raise JobError(
        f"writing the job's status would change the user's part of {ensemble.path}, "
        "so it was not written",
        hint="simplify the YAML outside status (anchors, aliases, tags) and run "
        "unfurl resume to record the job",
    )


def _own_plain(ensemble: Ensemble) -> dict[str, Any]:
    """The file's own data (directives unapplied); from the round-trip document when the
    C parser could not read the file (e.g. YAML 1.2's ``{type: tosca:Root}``)."""
    plain = ensemble.plain
    if plain is None:
        plain = ensemble.plain = yamlio.to_plain(ensemble.document)
    return plain


def _sections_replaceable(text: str, keys: list[str], names: Iterable[str]) -> bool:
    """Would :func:`sections.replace` accept replacing ``names`` in ``text``?"""
    trial = {key: f"{key}: x\n" for key in names}
    return sections.replace(text, keys, trial) is not None


def sections_text(
    text: str, keys: list[str], plain: dict[str, Any], names: Iterable[str] = STATUS_SECTIONS
) -> str | None:
    """``text`` (whose top-level keys were ``keys``) with its status sections (``names``)
    rewritten from ``plain``, or None when the layout does not allow it."""
    dumped = {key: yamlio.dump({key: plain[key]}) for key in names if key in plain}
    return sections.replace(text, keys, dumped)


def users_part(text: str, names: Iterable[str]) -> str:
    """Everything but the status sections, as canonical JSON (NaN equals NaN), read by the
    parser that reads ``text`` at all."""
    data = _parse_any(text)
    if isinstance(data, dict):
        skipped = set(names)
        data = {k: v for k, v in data.items() if k not in skipped}
    return json.dumps(data, sort_keys=True, default=repr)


def _parse_any(text: str) -> Any:
    """The C parser's data, else that of the round trip the loader reads the file with
    (YAML 1.2 plain scalars such as ``tosca:Root`` or ``::root::inputs::cpus`` in flow
    style, ``\\uD800`` escapes: libyaml, and ruamel's pure safe parser, refuse them)."""
    try:
        return yamlio.parse_plain(text)
    except Exception:  # any refusal: the round trip decides
        pass
    try:
        return yamlio.to_plain(yamlio.round_trip().load(text))
    except Exception as exc:  # unreadable: the texts differ
        return f"unreadable: {type(exc).__name__}"
