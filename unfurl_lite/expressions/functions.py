"""Unfurl 1.2.0's expression functions, by name: the table ``eval:`` looks a function up
in, and the names validation refuses.

Each function takes its argument as written and the scope (whose ``kw`` is the whole
mapping, for ``then``, ``else``, ``sep``, ``select``...), and evaluates its argument as
Unfurl does: ``if``/``and``/``or``/``not`` read theirs as expressions (a string is a
query), the others map it (a string stays a string).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions import catalog, files, labels
from unfurl_lite.expressions.entities import NodeEntity
from unfurl_lite.expressions.lookups import eval_form_refusal, run_lookup
from unfurl_lite.expressions.query import parse_query
from unfurl_lite.expressions.quoting import quote_all
from unfurl_lite.expressions.resolve import (
    Scope,
    eval_for_function,
    eval_ref,
    for_each_function,
    map_value,
    resolve,
)
from unfurl_lite.model.narrow import is_list, is_mapping
from unfurl_lite.security import taint
from unfurl_lite.security.environment import apply_rules, substitute_references

if TYPE_CHECKING:
    from unfurl_lite.security.environment import Substitute

Function = Callable[[Any, Scope], Any]


def _list(value: Any, name: str) -> list[Any]:
    if not is_list(value):
        raise ExpressionError(f"{name}: expected a list, got {_shape(value)}")
    return value


def _shape(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _truth(arg: Any, scope: Scope) -> bool:
    if scope.kw.get("map_value"):
        return bool(map_value(arg, scope))
    found = eval_ref(arg, scope)
    return bool(found[0]) if found else False


def if_(arg: Any, scope: Scope) -> Any:
    kw = scope.kw
    result = _truth(arg, scope)
    branch = "then" if result else "else"
    if branch in kw:
        return eval_for_function(kw[branch], scope)
    return result


def or_(arg: Any, scope: Scope) -> Any:
    for item in _list(eval_for_function(arg, scope), "or"):
        value = eval_for_function(item, scope)
        if value:
            return value
    return False


def and_(arg: Any, scope: Scope) -> Any:
    value: Any = False
    for item in _list(eval_for_function(arg, scope), "and"):
        value = eval_for_function(item, scope)
        if not value:
            return value
    return value


def eq(arg: Any, scope: Scope) -> bool:
    args = map_value(arg, scope)
    if not is_list(args) or len(args) != 2:
        raise ExpressionError(f"eq: expected a list of two values, got {args!r}")
    return bool(args[0] == args[1])


def validate(arg: Any, scope: Scope) -> bool:
    import jsonschema  # start-up: keeps jsonschema, attr, attrs (66 modules) off functions's import

    args = map_value(arg, scope)
    if not is_list(args) or len(args) != 2 or not is_mapping(args[1]):
        raise ExpressionError("validate: expected [value, JSON schema]")
    try:
        jsonschema.validate(args[0], dict(args[1]))
    except jsonschema.ValidationError:
        return False
    except jsonschema.SchemaError as exc:
        raise ExpressionError(f"validate: the schema is invalid: {exc.message}") from None
    return True


def template(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.sandbox (8 modules) off functions's import until template() runs
    from unfurl_lite.expressions.sandbox import render_native

    args = map_value(arg, scope) if not isinstance(arg, str) else arg
    if is_mapping(args) and "path" in args:
        path = files.confined(str(args["path"]), files.project_dir(scope.ctx), scope.ctx,
                              "template: path")
        args = files.read_text(scope.ctx, path, str(args["path"]))
    if not isinstance(args, str):
        raise ExpressionError(f"template: expected the template's text, got {_shape(args)}")
    if not args:
        return ""  # Unfurl's value for an empty template (native rendering would give None)
    return render_native(args, scope.render_context())


def get_input(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.expr (6 modules) off functions's import until get_input() runs
    from unfurl_lite.expressions.expr import read_input

    if is_list(arg):
        name, default, has_default = arg[0], arg[1] if len(arg) > 1 else None, True
    else:
        name, default, has_default = arg, None, False
    ctx = scope.ctx
    if name in ctx.inputs:
        return read_input(name, ctx)
    if has_default:
        return map_value(default, scope)
    raise ExpressionError(f"get_input: no input named {name!r}",
                          hint="declare it under topology_template.inputs")


def concat(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.expr (6 modules) off functions's import until concat() runs
    from unfurl_lite.expressions.expr import built_text

    parts = map_value(arg, scope)
    if not is_list(parts):
        return parts
    sep = scope.kw.get("sep", "")
    if not isinstance(sep, str):
        raise ExpressionError(f"concat: sep must be text, got {_shape(sep)}")
    return built_text(sep.join(str(p) for p in parts), parts, scope.ctx)


def token(arg: Any, scope: Scope) -> Any:
    args = map_value(arg, scope)
    if not is_list(args) or len(args) < 3:  # (further items are ignored, as in Unfurl)
        raise ExpressionError("token: expected [text, separator, index]")
    text, separator, index = args[:3]
    if not isinstance(text, str) or not isinstance(separator, str | None) or \
            not isinstance(index, int):
        raise ExpressionError("token: expected [text, separator, index]: text, the separator"
                              " (null: any whitespace) and a whole number",
                              hint=f"given {[type(a).__name__ for a in args[:3]]}")
    try:
        value = text.split(separator)[index]
    except (IndexError, ValueError):
        raise ExpressionError(f"token: no item {index} in {text!r}") from None
    return taint.derived(value, taint.sources(text)) if taint.derives(text) else value


def has_env(arg: Any, scope: Scope) -> bool:
    if isinstance(arg, list | dict):  # (Unfurl 1.2.0: "unhashable type")
        raise ExpressionError(f"has_env: expected a variable's name, not {arg!r}")
    return str(arg) in os.environ


def get_env(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.expr (6 modules) off functions's import until get_env() runs
    from unfurl_lite.expressions.expr import environment_value

    if not arg:
        raise ExpressionError(
            "get_env without a name (the whole environment) is not supported",
            hint="name the variable: {get_env: NAME} or {get_env: [NAME, default]}")
    if is_list(arg):
        name, default = arg[0], arg[1] if len(arg) > 1 else None
    else:
        name, default = arg, None
    name = str(map_value(name, scope))
    value = environment_value(name, scope.ctx)
    if value is None:
        return map_value(default, scope)
    return value


def lookup(arg: Any, scope: Scope) -> Any:
    args = map_value(arg, scope)
    if not is_mapping(args) or not args:
        raise ExpressionError("lookup: expected {plugin: terms, option: value...}")
    (plugin, terms), *options = list(args.items())
    refused = eval_form_refusal(str(plugin))
    if refused is not None:
        raise ExpressionError(refused[0], hint=refused[1])
    found = run_lookup(str(plugin), terms if is_list(terms) else [terms],
                       dict(options), scope)
    if not found:
        return None
    return found[0] if len(found) == 1 else found


def sensitive(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.expr (6 modules) off functions's import until sensitive() runs
    from unfurl_lite.expressions.expr import mark

    value = map_value(arg, scope)
    return None if value is None else mark(value, scope.ctx)


def secret(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.expr (6 modules) off functions's import until secret() runs
    from unfurl_lite.expressions.expr import mark

    name = map_value(arg, scope)
    if name not in scope.ctx.inputs:
        raise ExpressionError(f"secret: no input named {name!r}",
                              hint="a secret here is a topology input (docs/security.md)")
    return mark(map_value(scope.ctx.inputs[name], scope), scope.ctx)


def _label_function(flavour: str) -> Function:
    def convert(arg: Any, scope: Scope) -> Any:
        options = {k: map_value(v, scope) for k, v in scope.kw.items() if k != flavour}
        return labels.label(flavour, map_value(arg, scope), options)
    return convert


def urljoin(arg: Any, scope: Scope) -> Any:
    args = map_value(arg, scope)
    if isinstance(args, str):  # its characters, as Unfurl 1.2.0 reads a text (a sequence)
        args = list(args)
    if not is_list(args) or not 2 <= len(args) <= 6:
        raise ExpressionError("urljoin: expected [scheme, host, port?, path?, query?, fragment?]")
    try:
        return labels.urljoin(*args)
    except ValueError:
        raise ExpressionError(f"urljoin: the port {args[2]!r} is not a number") from None


def generate_string(arg: Any, scope: Scope) -> str:
    options = map_value(arg, scope)
    if not is_mapping(options):
        raise ExpressionError("generate_string: expected {preset:, len:, ranges:}")
    return labels.generate_string(**{str(k): v for k, v in options.items()})


def to_env(arg: Any, scope: Scope) -> dict[str, str]:
    # start-up: keeps expressions.expr (6 modules) off functions's import until to_env() runs
    from unfurl_lite.expressions.expr import declared_environment

    if scope.kw.get("update_os_environ"):
        raise ExpressionError("to_env: update_os_environ is not supported",
                              hint="set variables for an operation with its `environment`")
    rules = map_value(arg or {}, scope)
    if not is_mapping(rules):
        raise ExpressionError("to_env: expected a mapping of environment rules")
    caller = declared_environment(scope.ctx)
    result = apply_rules(rules, {}, caller, substitute=_env_substitution(caller, rules))
    return {k: taint.env_secret(v, k) if k not in rules else v for k, v in result.items()}


def _env_substitution(caller: Mapping[str, str], rules: Mapping[str, Any]) -> Substitute:
    """Unfurl's ``${NAME}`` in a ``to_env`` value: the variables set so far, then the
    caller's; text built from the caller's variables (secrets here, as ``get_env``'s,
    also once ``+NAME`` copied them) or from a secret is a secret too."""
    def substitute(text: str, so_far: Mapping[str, str]) -> str:
        lookup = {**caller, **so_far}
        result, used = substitute_references(text, lookup)
        secret = [name for name in used if name not in so_far or name not in rules
                  or isinstance(so_far[name], taint.Sensitive)]
        if not secret:
            return result
        variables = [v for name in secret
                     for v in (taint.env_variables(lookup[name]) or (name,))]
        return taint.env_tainted(result, variables)

    return substitute


def get_ensemble_metadata(arg: Any, scope: Scope) -> Any:
    metadata = dict(scope.ctx.metadata)
    if not metadata:
        return {}
    if arg:
        return metadata.get(str(map_value(arg, scope)), "")
    return metadata


def file(arg: Any, scope: Scope) -> Any:
    kw = scope.kw
    if "contents" in kw:
        raise ExpressionError("file: writing a file (`contents`) is not supported",
                              hint="write files from an operation")
    encoding = files.check_encoding(map_value(kw.get("encoding"), scope))
    directory = map_value(kw.get("dir"), scope)
    return files.ProjectFile(scope.ctx, str(map_value(arg, scope)),
                             None if directory is None else str(directory), encoding)


def tempfile(arg: Any, scope: Scope) -> str:
    contents = map_value(map_value(arg, scope), scope)
    return files.temp_file(contents, scope.kw.get("suffix"), scope.kw.get("encoding"))


def _path_args(arg: Any, scope: Scope) -> list[Any]:
    args = map_value(arg, scope)
    return args if is_list(args) else [args]


def abspath(arg: Any, scope: Scope) -> str:
    return files.absolute_path(scope.ctx, *_path_args(arg, scope)[:3])


def get_dir(arg: Any, scope: Scope) -> str:
    args = _path_args(arg, scope)
    return files.absolute_path(scope.ctx, "", args[0] if args else None,
                               args[1] if len(args) > 1 else False)


def get_nodes_of_type(arg: Any, scope: Scope) -> list[Any]:

    type_name = str(map_value(arg, scope))
    world = scope.ctx.world()
    found: list[Any] = []
    for name in world.graph.order:
        node = world.node(name)
        if isinstance(node, NodeEntity) and type_name in _lineage(node, scope):
            found.append(node)
    return found


def _lineage(node: Any, scope: Scope) -> tuple[str, ...]:
    template = scope.ctx.topology_templates().get(node.template)
    return template.type_lineage if template is not None else ()


def get_attribute(arg: Any, scope: Scope) -> Any:

    args = list(map_value(arg, scope))
    if len(args) < 2:
        raise ExpressionError("get_attribute: expected [entity, attribute, ...]")
    entity, candidate, *rest = args
    start = _TOSCA_KEYWORDS.get(str(entity), f"::{entity}")
    if rest:
        attribute, *path = rest
        text = f"{start}::.names[{candidate}]?::{candidate}::{attribute}?"
        if path:
            text += "::" + "::".join(_key_text(p) for p in path)
    else:
        text = f"{start}::{candidate}"
    parse_query(text)
    return resolve(text, scope.copy(current=scope.last))


def _key_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ExpressionError(
            f"get_attribute: a path key must be text (as in Unfurl), got {value!r}",
            hint="use {eval: '::node::attribute::0'} to index a list")
    return value


#: TOSCA's entity keywords as Unfurl's queries start them
_TOSCA_KEYWORDS = {"SELF": ".", "SOURCE": ".source", "TARGET": ".target",
                   "HOST": ".parents", "ORCHESTRATOR": "::localhost"}


def get_property(arg: Any, scope: Scope) -> Any:
    # start-up: keeps expressions.expr (6 modules) off functions's import until get_property() runs
    from unfurl_lite.expressions.expr import get_property as read

    return read(map_value(arg, scope), scope.ctx)


def is_function_defined(arg: Any, scope: Scope) -> bool:
    """Whether the function runs here (Unfurl's that are refused here are not defined)."""
    name = map_value(arg, scope)
    if isinstance(name, list | dict):  # (Unfurl 1.2.0: "unhashable type")
        raise ExpressionError(f"is_function_defined: expected a function's name, not {name!r}")
    return catalog.implementation("function", str(name)) is not None


def quote(arg: Any, scope: Scope) -> Any:
    """``q``: the argument as written, unevaluated (marked quoted: see quoting.py)."""
    return quote_all(arg)


def not_(arg: Any, scope: Scope) -> bool:
    return not _truth(arg, scope)


def foreach(arg: Any, scope: Scope) -> list[Any]:
    return for_each_function(arg, scope)


to_label = _label_function("to_label")
to_dns_label = _label_function("to_dns_label")
to_kubernetes_label = _label_function("to_kubernetes_label")
to_googlecloud_label = _label_function("to_googlecloud_label")
