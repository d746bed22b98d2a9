"""The topology's ``outputs`` and ``inputs``, evaluated when a job is recorded, as Unfurl
writes them into ``status.outputs`` and ``status.inputs``: each output's ``value`` with the
instances as the job left them, in native types (``{eval: {template: "{{ 40 + 2 }}"}}`` is
42), and each declared input's value. A value that cannot be evaluated (an attribute not
set yet) is null, as in Unfurl; a secret is redacted (Unfurl writes it as is).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.expressions.reads import Reads, watch_reads
from unfurl_lite.model.entities import Instance, Topology
from unfurl_lite.security.taint import REDACTED, Sensitive, Tainted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue


def _plain(value: YAMLValue, secrets: set[str]) -> Any:
    # start-up: keeps security.redaction (2 modules) off outputs's import until _plain() runs
    from unfurl_lite.security.redaction import redact

    if isinstance(value, Tainted):
        return redact(str(value), secrets)
    if isinstance(value, Sensitive):
        return REDACTED
    if isinstance(value, Mapping):
        return {str(k): _plain(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, secrets) for v in value]
    return value


def topology_outputs(
    topology: Topology, instances: Mapping[str, Instance], secrets: set[str],
    project_root: Any = None, metadata: Mapping[str, Any] | None = None,
    keep: Callable[[Reads], None] | None = None,
) -> dict[str, Any]:
    """Each output's value now (in the order the topology declares them); ``abspath`` and
    file paths resolve in ``project_root``; ``metadata`` is what ``get_ensemble_metadata``
    gives (the job's, as in Unfurl). ``keep`` is given what they read: Unfurl evaluates
    them through the attribute manager its instances are saved from, so an attribute
    default an output read is recorded (unfurl-cases 201)."""
    if not topology.outputs:
        return {}
    ctx = _root_context(topology, instances, project_root)
    ctx.metadata = metadata or {}
    watch = watch_reads(ctx) if keep is not None else None
    values: dict[str, Any] = {}
    definition: YAMLValue
    for name, definition in topology.outputs.items():
        expression = definition.get("value") if isinstance(definition, Mapping) else definition
        values[str(name)] = _evaluated(expression, ctx, secrets)
    if keep is not None and watch is not None:
        keep(Reads((), tuple((f"::{name}::{key}", value) for name, read in watch.values.items()
                             for key, value in read.items())))
    return values


def evaluate_query(
    topology: Topology, instances: Mapping[str, Instance], expression: str, secrets: set[str],
    project_root: Any = None,
) -> Any:
    """Unfurl's ``--query``: an expression (``::app::port``, ``{{ ... }}``) evaluated over the
    instances as a job left them, from the root; None when it finds nothing."""
    ctx = _root_context(topology, instances, project_root)
    query: Any = expression if "{{" in expression else {"eval": expression}
    return _evaluated(query, ctx, secrets)


def _root_context(
    topology: Topology, instances: Mapping[str, Instance], project_root: Any
) -> Any:
    """What outputs and queries are evaluated in: the topology's root, no SELF."""
    # start-up: keeps expressions.context off outputs's import until _root_context() runs
    from unfurl_lite.expressions.context import declared_env, make_context, wrapped_inputs
    from unfurl_lite.expressions.expr import EvalContext

    if instances:
        first = next(iter(instances))
        ctx = dataclasses.replace(make_context(topology, instances, first), self_view={},
                                  host=None)
    else:
        ctx = EvalContext(self_view={}, inputs=wrapped_inputs(topology),
                          declared_env=declared_env(topology))
    ctx.project_root = project_root
    return ctx


def topology_inputs(
    topology: Topology, declared: Iterable[str], secrets: set[str]
) -> dict[str, Any]:
    """Each declared topology input's value (the spec's, else its default), evaluated."""
    # start-up: keeps expressions.context off outputs's import until topology_inputs() runs
    from unfurl_lite.expressions.context import declared_env, wrapped_inputs
    from unfurl_lite.expressions.expr import EvalContext

    inputs = wrapped_inputs(topology)
    ctx = EvalContext(self_view={}, inputs=inputs, declared_env=declared_env(topology))
    return {str(name): _evaluated(inputs.get(name), ctx, secrets) for name in declared}


def _evaluated(expression: Any, ctx: Any, secrets: set[str]) -> Any:
    # start-up: keeps expressions.expr (6 modules) off outputs's import until _evaluated() runs
    from unfurl_lite.expressions.expr import evaluate

    if expression is None:
        return None
    try:
        value = evaluate(expression, ctx)
        if isinstance(value, dict) and ("eval" in value or "ref" in value):
            value = evaluate(value, ctx)  # (Unfurl's outputs evaluate what `q` kept, once read)
    except (UnfurlLiteError, RecursionError, ValueError, TypeError, KeyError):
        return None
    return _plain(value, secrets | ctx.secrets)
