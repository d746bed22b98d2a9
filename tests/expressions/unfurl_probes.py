"""Evaluating the probes of tests/data/unfurl120/queries/<case> here, the way probe.py
evaluated them with Unfurl 1.2.0, and writing our values in the same plain form."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from unfurl_lite.expressions.context import make_context, relationship_view
from unfurl_lite.expressions.entities import (
    CapabilityEntity,
    NodeEntity,
    RelationshipEntity,
    RootEntity,
    UnfurlEnum,
)
from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.resolve import Scope, map_value, resolve
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.security.taint import Sensitive

CASES = Path(__file__).parent.parent / "data" / "unfurl120" / "queries"
PROBE_ENV = {"PROBE_SECRET": "s3cr3t-value", "PROBE_PLAIN": "plain-value"}


def case_names() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if (p / "results.json").exists())


def recorded(case: str) -> list[dict[str, Any]]:
    return json.loads((CASES / case / "results.json").read_text())["results"]


def copy_case(case: str, into: Path) -> Path:
    """The case's files with Unfurl's recorded ensemble as ensemble.yaml."""
    source = CASES / case
    for item in source.iterdir():
        if item.name in ("results.json", "probes.yaml", "ensemble.yaml", "ensemble.after.yaml"):
            continue
        if item.is_dir():
            shutil.copytree(item, into / item.name)
        else:
            shutil.copy(item, into / item.name)
    shutil.copy(source / "ensemble.after.yaml", into / "ensemble.yaml")
    return into / "ensemble.yaml"


def plain(value: Any, root: Path, depth: int = 0) -> Any:
    if depth > 20:
        return "<deep>"
    if isinstance(value, RootEntity):
        return {"instance": "root"}
    if isinstance(value, NodeEntity):
        return {"instance": value.name}
    if isinstance(value, CapabilityEntity):
        return {"capability": [value.shape.owner, value.name]}
    if isinstance(value, RelationshipEntity):
        return {"relationship": [value.shape.source, value.name]}
    if isinstance(value, UnfurlEnum):
        return {"enum": value.kind, "name": value.name}
    if isinstance(value, str):
        # the repository as probe.py wrote it; its folder as Unfurl's was (a mkdtemp)
        text = str(value).replace(str(root), "<repo>").replace(str(root.parent), "/tmp")
        return {"sensitive": text} if isinstance(value, Sensitive) else text
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v, root, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, root, depth + 1) for v in value]
    return {"object": type(value).__name__, "repr": repr(value)}


class Probes:
    """The probes' ensemble, loaded once; each probe evaluated in a fresh context."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = path.parent.resolve()
        self.ensemble = load_ensemble(path)

    def context_at(self, at: str | None) -> tuple[EvalContext, Any]:
        """Where probe.py evaluated: the root, an instance, or a relationship ("SOURCE~
        REQUIREMENT"), where SELF is the relationship, SOURCE and TARGET its ends and HOST
        its target's host, as in a relationship operation."""
        instances = self.ensemble.instances
        node, _, requirement = (at or "").partition("~")
        ctx = make_context(self.ensemble.topology, instances, node or next(iter(instances)))
        ctx.project_root = self.root
        if not at:
            ctx.self_view = {}
            ctx.host = None
        if not requirement:
            return ctx, None
        found = ctx.world().node(node)
        start = next(r for r in found.requirements if r.name == requirement)
        peer = start.shape.target
        if peer is not None:
            ctx = make_context(self.ensemble.topology, instances, peer, node, peer)
            ctx.project_root = self.root
            link = instances[node].relationships.get(start.shape.requirement)
            view = relationship_view(ctx, node, start.shape.requirement,
                                     link.attributes if link is not None else {})
            if view is not None:
                ctx.self_view = view
            start = next(r for r in ctx.world().node(node).requirements
                         if r.name == requirement)
        return ctx, start

    def evaluate(self, probe: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        saved = {k: os.environ.get(k) for k in PROBE_ENV}
        os.environ.update(PROBE_ENV)
        try:
            if "q" in probe:
                for key in ("one", "list"):
                    out[key] = self._run(probe, lambda scope, k=key: resolve(probe["q"], scope, k))
            if "v" in probe:
                out["value"] = self._run(probe, lambda scope: map_value(probe["v"], scope))
        finally:
            for key, old in saved.items():
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old
        return out

    def _run(self, probe: Mapping[str, Any], evaluate: Any) -> Any:
        try:
            ctx, start = self.context_at(probe.get("at"))
            return plain(evaluate(Scope(ctx, start, dict(probe.get("vars") or {}))), self.root)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}


def evaluate_probe(path: Path, probe: Mapping[str, Any]) -> dict[str, Any]:
    return Probes(path).evaluate(probe)
