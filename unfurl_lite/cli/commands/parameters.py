"""Cloudify's way of passing workflow parameters: ``-p NAME=VALUE`` (repeatable, VALUE read
as YAML) and ``--parameters FILE`` (YAML or JSON), with Cloudify's snake_case names.

They fill the same plan options the dashed options do; a name given both ways takes the
``-p``/``--parameters`` value (``-p`` wins over the file), as Cloudify's ``-p`` overrides
the workflow's defaults.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

LIST = ("type_names", "node_ids", "node_instance_ids", "include_instances", "exclude_instances")
MAPPING = ("operation_kwargs", "operation_parms", "stop_parms", "start_parms")
INTEGER = ("delta",)
TEXT = ("operation", "node_instance_id", "diagnose_value", "scalable_entity_name", "workflow_id",
        "install_agent_timeout")
FILTERS = ("type_names", "node_ids", "node_instance_ids")

# workflow -> Cloudify's parameter names (the seeds' lists)
NAMES: dict[str, tuple[str, ...]] = {
    "execute_operation": (
        "operation", "operation_kwargs", "allow_kwargs_override", "run_by_dependency_order",
        *FILTERS,
    ),
    "start": ("operation_parms", "run_by_dependency_order", *FILTERS),
    "stop": ("operation_parms", "run_by_dependency_order", *FILTERS),
    "restart": ("stop_parms", "start_parms", "run_by_dependency_order", *FILTERS),
    "heal": (
        "node_instance_id", "diagnose_value", "ignore_failure", "check_status",
        "allow_reinstall", "force_reinstall",
    ),
    "scale": (
        "scalable_entity_name", "delta", "scale_compute", "include_instances",
        "exclude_instances", "rollback_if_failed",
    ),
    "update": (
        "preview", "workflow_id", "skip_install", "skip_uninstall", "skip_drift_check",
        "force_reinstall", "skip_heal", "skip_reinstall",
    ),
    "install_new_agents": ("install_agent_timeout", "node_ids", "node_instance_ids"),
    "deploy": (),
    "undeploy": ("ignore_failure",),
}  # fmt: skip


def parameter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--parameters", "parameters_file", type=click.Path(dir_okay=False), default=None,
        help="A YAML or JSON file of workflow parameters (Cloudify's snake_case names).",
    )(func)  # fmt: skip
    return click.option(
        "-p", "--parameter", "parameters", multiple=True, metavar="NAME=VALUE",
        help="A workflow parameter by Cloudify's name, VALUE read as YAML "
        "(e.g. -p node_ids=[a,b]); repeatable.",
    )(func)  # fmt: skip


def _yaml(text: str, where: str) -> Any:
    from unfurl_lite.load import yamlio

    document = yamlio.parse(text, where)
    return yamlio.to_plain(document)


def _from_file(path: str) -> dict[str, Any]:
    from unfurl_lite.load import yamlio

    data = _yaml(yamlio.read_text(Path(path)), path) if path else None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise click.BadParameter(
            f"{path}: expected a mapping of parameter names to values", param_hint="--parameters"
        )
    return {str(k): v for k, v in data.items()}


def _from_options(items: tuple[str, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(
                f"{item!r}: give NAME=VALUE, e.g. -p delta=2", param_hint="-p"
            )
        found[name.strip()] = _yaml(text, f"-p {name.strip()}") if text.strip() else None
    return found


def _coerce(name: str, value: Any) -> Any:
    def wrong(kind: str) -> click.BadParameter:
        return click.BadParameter(f"{name}: expected {kind}, got {value!r}", param_hint="-p")

    if name in LIST:
        if value is None:
            return []
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        raise wrong("a list of names")
    if name in MAPPING:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise wrong('a mapping, e.g. {"port": 8080}')
        return dict(value)
    if name in INTEGER:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        return value
    if name in TEXT:
        if isinstance(value, (Mapping, list)):
            raise wrong("a string")
        return None if value is None else str(value)
    if not isinstance(value, bool):  # every other parameter is a flag
        raise wrong("true or false")
    return value


def workflow_parameters(
    workflow: str, items: tuple[str, ...], path: str | None
) -> dict[str, Any]:
    """The parameters given with --parameters and -p, checked against the workflow's names."""
    given = {**_from_file(path or ""), **_from_options(items)}
    known = NAMES[workflow]
    for name in given:
        if name in known:
            continue
        if name == "dry_run":  # Cloudify's is an execution flag, not a workflow parameter
            raise click.BadParameter(
                f"dry_run is not a parameter of {_typed(workflow)}: it is an option of "
                "every execution, give --dry-run", param_hint="-p/--parameters")
        close = difflib.get_close_matches(name, known, n=1) or difflib.get_close_matches(
            name.replace("-", "_"), known, n=1
        )
        hint = (
            f"did you mean {close[0]!r}?"
            if close
            else ("it takes: " + ", ".join(known) if known else "it takes no parameters")
        )
        raise click.BadParameter(
            f"unknown parameter {name!r} for {_typed(workflow)}: {hint}",
            param_hint="-p/--parameters",
        )
    return {name: _coerce(name, value) for name, value in given.items()}


def _typed(workflow: str) -> str:
    """The workflow by the name the user typed (``uninstall`` runs ``undeploy``)."""
    ctx = click.get_current_context(silent=True)
    return ctx.info_name.replace("-", "_") if ctx and ctx.info_name else workflow


def merge(
    workflow: str, plan_options: dict[str, Any], opts: dict[str, Any]
) -> dict[str, Any]:
    """``plan_options`` with the -p/--parameters values put over the dashed options'."""
    given = workflow_parameters(
        workflow, tuple(opts.get("parameters") or ()), opts.get("parameters_file")
    )
    return {**plan_options, **given}
