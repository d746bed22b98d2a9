"""Plans with nothing to do, remembered for exactly the text they were decided from.

A deploy run again on an ensemble already deployed has nothing to do, and finding that out
costs the model's build and a plan: over a second at 10,000 instances, all of it to print
"Nothing to do." So a plan that found nothing to do is remembered beside the parse cache,
under a key covering the ensemble's path and text, the workflow, its options and the code
that plans (any edit, option or upgrade misses), and the next command with that key
answers from it before building anything. A job that deploys also plans the next deploy
on the file it just wrote (its templates are built already; only the recorded instances
are read again), so the redeploy after it is answered at once too.

Only a plan decided from the text alone is remembered (:attr:`Plan.text_only`): one that
rendered inputs to detect changes, read the records or git's history can change while the
text does not. Nothing is remembered for merged ensembles (their includes are other
files), for a job's extra inputs, or without the parse cache (a library caller's default).
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.load import parsecache
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.plan.tasks import Note, Plan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

#: the packages whose code decides a plan (with the parse cache's own: load, model...)
PLANNING = ("plan", "run")
#: workflows a job plans again on the file it wrote: the command most often run next
REPEATED = ("deploy",)
#: set while a plan is made only to be remembered (:func:`plan_next`): a planner stops at
#: the first step that makes its plan one that cannot be (rendering inputs for their
#: digests, reading the records), rather than finish a plan nobody reads
ONLY_TO_REMEMBER: ContextVar[bool] = ContextVar("only_to_remember", default=False)


class NotRememberable(Exception):
    """Raised by a planner under :data:`ONLY_TO_REMEMBER`; never leaves :func:`plan_next`."""


def stop_if_only_to_remember() -> None:
    """Called where a plan stops being decided from the text alone."""
    if ONLY_TO_REMEMBER.get():
        raise NotRememberable


def _name(file: Path, text: str, workflow: str, options: Mapping[str, Any]) -> tuple[str, bytes]:
    key = parsecache.key_for(file, text, workflow.encode(),
                             repr(sorted(options.items())).encode(), code=PLANNING)
    return f"plan-{key.hex()}.marshal", key


def recall(file: Path, text: str, workflow: str,
           options: Mapping[str, Any]) -> Plan | None:
    """The plan remembered as having nothing to do for exactly this text at this path,
    ``workflow`` and ``options``, with its notes; None when none is (or can be trusted)."""
    name, key = _name(file, text, workflow, options)
    payload = parsecache.stored(name)
    if payload is None:
        return None
    try:
        entry: YAMLValue = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    notes: YAMLValue = entry.get("notes")
    if not isinstance(notes, list) or not all(
            isinstance(n, tuple) and len(n) == 2 and all(isinstance(p, str) for p in n)
            for n in notes):
        return None
    return Plan(workflow, [], notes=[Note(t, m) for t, m in notes], text_only=True)


def remember(ensemble: Ensemble, workflow: str, options: Mapping[str, Any],
             plan: Plan) -> None:
    """Keep ``plan`` for the next command on this text, when it has nothing to do and was
    decided from the text alone."""
    if plan.tasks or not plan.text_only or ensemble.merged or parsecache.directory() is None:
        return
    name, key = _name(ensemble.path, ensemble.text, workflow, options)
    notes = [(n.target, n.message) for n in plan.notes]
    parsecache.store(name, marshal.dumps({"key": key, "notes": notes}))


def plan_next(ensemble: Ensemble, text: str, data: dict[str, Any] | None, workflow: str,
              options: Mapping[str, Any]) -> None:
    """After a job wrote ``text`` (``data``) over ``ensemble``: plan ``workflow`` on it as
    the next command would, and remember the plan if it has nothing to do. A plan it
    refuses is the next command's to say: the job that asks is done and committed."""
    found = next_plan(ensemble, text, data, workflow, options)
    if found is not None:
        remember(*found)


def next_plan(ensemble: Ensemble, text: str, data: dict[str, Any] | None, workflow: str,
              options: Mapping[str, Any]) -> tuple[Ensemble, str, Mapping[str, Any], Plan] | None:
    """:func:`plan_next`'s plan, not yet remembered (the arguments of :func:`remember`),
    so that a job can plan while git commits and remember once the commit is made; None
    when there is nothing to remember."""
    if data is None or ensemble.merged or parsecache.directory() is None:
        return None
    # start-up: keeps load.builder, plan.registry (12 modules) off `redeploy` until plan_next() runs
    from unfurl_lite.load.builder import with_recorded
    from unfurl_lite.plan.registry import build

    after = with_recorded(ensemble, text, data)
    only = ONLY_TO_REMEMBER.set(True)
    try:
        plan = build(after, workflow, options)
    except (UnfurlLiteError, NotRememberable):
        return None
    finally:
        ONLY_TO_REMEMBER.reset(only)
    return after, workflow, options, plan
