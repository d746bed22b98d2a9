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

from unfurl_lite.errors import PlanError
from unfurl_lite.model.builtin_workflows import PARAMETERS, BuiltinWorkflow
from unfurl_lite.run.options import coerce


def parameter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--parameters", "parameters_file", type=click.Path(dir_okay=False), default=None,
        help="A YAML or JSON file of workflow parameters (Cloudify's snake_case names).",
    )(func)  # fmt: skip
    return click.option(
        "-p", "--parameter", "parameters", multiple=True, metavar="NAME=VALUE",
        help="A workflow parameter by Cloudify's name, VALUE read as YAML "
        "(e.g. -p names=[a,b]); repeatable.",
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


def workflow_parameters(
    workflow: BuiltinWorkflow, items: tuple[str, ...], path: str | None
) -> dict[str, Any]:
    """The parameters given with --parameters and -p, checked against the workflow's
    Cloudify names and read as their declared types."""
    given = {**_from_file(path or ""), **_from_options(items)}
    known = workflow.cloudify_names
    for name in given:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1) or difflib.get_close_matches(
            name.replace("-", "_"), known, n=1
        )
        hint = (
            f"did you mean {close[0]!r}?"
            if close
            else ("it takes: " + ", ".join(known) if known else "it takes no parameters")
        )
        raise click.BadParameter(
            f"unknown parameter {name!r} for {workflow.name}: {hint}",
            param_hint="-p/--parameters")
    try:
        return {name: coerce(name, value, PARAMETERS[name].kind)
                for name, value in given.items()}
    except PlanError as exc:
        raise click.BadParameter(exc.message, param_hint="-p") from None

