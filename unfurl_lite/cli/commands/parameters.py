"""A workflow's parameters on the command line: each declared parameter as its own option
(:func:`click_parameter`, from its declaration), and Cloudify's way of passing them,
``-p NAME=VALUE`` (repeatable, VALUE read as YAML) and ``--parameters FILE`` (YAML or
JSON), with Cloudify's snake_case names.

``-p`` and ``--parameters`` fill the same plan options the dashed options do; a name given
both ways takes the ``-p``/``--parameters`` value (``-p`` wins over the file), as
Cloudify's ``-p`` overrides the workflow's defaults.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from unfurl_lite.errors import PlanError
from unfurl_lite.load import yamlio
from unfurl_lite.model.builtin_workflows import PARAMETERS, BuiltinWorkflow, Parameter
from unfurl_lite.run.options import coerce

#: a value counts as given when it was typed (or set in the environment), not defaulted
GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _json_mapping(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("give a JSON object, e.g. '{\"port\": 8080}'")
    return parsed


def _names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """Repeatable, and each value may be a comma-separated list."""
    return [n.strip() for item in value for n in item.split(",") if n.strip()]


def click_parameter(parameter: Parameter) -> click.Parameter | None:
    """The command line's spelling of one declared parameter (None: ``-p`` or the api
    only), with its help, its type, and the planner's default for --help to show (a
    default is never passed on: :func:`given_parameters` takes what was typed)."""
    if parameter.argument:
        return click.Argument([parameter.name], metavar=parameter.argument, required=False,
                              nargs=-1 if parameter.kind == "argv" else 1)
    flag = parameter.flag
    if flag is None:
        return None
    shown = {"help": parameter.help, "default": parameter.default,
             "show_default": parameter.default not in (None, False)}
    spelled = [flag, *parameter.aliases, parameter.name]
    if parameter.kind == "flag":
        if parameter.default is False:
            return click.Option(spelled, is_flag=True, **shown)
        return click.Option([f"{flag}/--no-{flag[2:]}", parameter.name], **shown)
    if parameter.kind == "names":
        return click.Option(spelled, multiple=True, callback=_names, **shown)
    if parameter.kind == "mapping":
        return click.Option(spelled, callback=_json_mapping, **shown)
    kind: Any = int if parameter.kind == "integer" else str
    if parameter.choices:
        kind = click.Choice(parameter.choices)
    return click.Option(spelled, metavar=parameter.metavar, type=kind, **shown)


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
    document = yamlio.parse(text, where)
    return yamlio.to_plain(document)


def _from_file(path: str) -> dict[str, Any]:
    data = _yaml(yamlio.read_text(Path(path)), path) if path else None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise click.BadParameter(
            f"{path}: expected a mapping of parameter names to values", param_hint="--parameters"
        )
    return {str(k): v for k, v in data.items()}


#: a value of each kind, as ``-p`` reads it (YAML), for an example
_EXAMPLE_VALUES = {"flag": "true", "integer": "2", "names": "[a,b]", "mapping": "'{key: value}'"}


def example(workflow: BuiltinWorkflow) -> str:
    """``-p NAME=VALUE`` spelled with the workflow's own first Cloudify parameter (one
    that is not also its positional argument), so the example is one the command takes."""
    taken = [p for p in workflow.parameters if p.cloudify]
    first = next((p for p in taken if not p.argument), taken[0] if taken else None)
    if first is None:
        return "-p NAME=VALUE"
    text_default = first.default if first.kind == "text" and first.default else None
    value = (first.choices[0] if first.choices else text_default
             or _EXAMPLE_VALUES.get(first.kind, "VALUE"))
    return f"-p {first.name}={value}"


def _from_options(workflow: BuiltinWorkflow, items: tuple[str, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(
                f"{item!r}: give NAME=VALUE, e.g. {example(workflow)}", param_hint="-p"
            )
        found[name.strip()] = _yaml(text, f"-p {name.strip()}") if text.strip() else None
    return found


def workflow_parameters(
    workflow: BuiltinWorkflow, items: tuple[str, ...], path: str | None
) -> dict[str, Any]:
    """The parameters given with --parameters and -p, checked against the workflow's
    Cloudify names and read as their declared types."""
    given = {**_from_file(path or ""), **_from_options(workflow, items)}
    known = workflow.cloudify_names
    for name in given:
        if name in known:
            continue
        if name == "dry_run":  # Cloudify's is an execution flag, not a workflow parameter
            raise click.BadParameter(
                f"dry_run is not a parameter of {_typed(workflow)}: it is an option of "
                "every execution, give --dry-run", param_hint="-p/--parameters")
        import difflib  # start-up: a misspelled parameter only, not every command's imports

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
            param_hint="-p/--parameters")
    try:
        return {name: coerce(name, value, PARAMETERS[name].kind)
                for name, value in given.items()}
    except PlanError as exc:
        raise click.BadParameter(exc.message, param_hint="-p") from None


def _typed(workflow: BuiltinWorkflow) -> str:
    """The workflow by the name the user typed (``uninstall`` runs ``undeploy``)."""
    ctx = click.get_current_context(silent=True)
    return ctx.info_name.replace("-", "_") if ctx and ctx.info_name else workflow.name

