"""Unfurl's deployment blueprints: named sets of node templates kept beside the topology
(``deployment_blueprints:`` in the service template, and in ``spec``, whose entries win
by name), one of which the ensemble's environment may choose
(``environment.deployment_blueprint: NAME``). The chosen blueprint's templates replace
the topology's of the same name whole (nothing of the replaced template is merged in) and
add the others, as Unfurl 1.2.0 loads them; with none chosen the topology is deployed as
written (Unfurl warns "This ensemble contains deployment blueprints but none were
specified for use"). Unfurl also chooses the blueprint whose ``cloud`` is the type of the
environment's ``primary_provider`` connection: an ensemble's connections are refused by
name here, so that road never opens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import mapping, problem_at
from unfurl_lite.model.narrow import YAMLValue, is_map

#: the keys of a blueprint that hold its templates, in the order Unfurl reads them
_TEMPLATE_KEYS = ("resource_templates", "node_templates")
#: the keys Unfurl documents for a blueprint (its templates, and what its UI shows)
_KEYS = frozenset({*_TEMPLATE_KEYS, "cloud", "title", "description"})
#: Unfurl's JSON export form of a blueprint's templates (``resourceTemplates`` names, a
#: ``ResourceTemplate`` table), which unfurl-lite does not read
_EXPORT_KEYS = ("resourceTemplates", "ResourceTemplate")


def declared(data: YAMLValue) -> dict[str, Any]:
    """Every blueprint the ensemble declares, by name: the service template's, then the
    spec's over them (Unfurl's order: the outer one is the one its UI writes)."""
    spec = mapping(mapping(data).get("spec"))
    service = mapping(spec.get("service_template"))
    return {**mapping(service.get("deployment_blueprints")),
            **mapping(spec.get("deployment_blueprints"))}


def chosen(data: YAMLValue) -> str | None:
    """The blueprint the ensemble's environment names, if it names one."""
    name: YAMLValue = mapping(mapping(data).get("environment")).get("deployment_blueprint")
    return name if isinstance(name, str) and name else None


def templates_of(blueprint: YAMLValue) -> dict[str, Any]:
    body = mapping(blueprint)
    for key in _TEMPLATE_KEYS:
        if body.get(key):
            return mapping(body[key])
    return {}


def applied(data: dict[str, Any]) -> dict[str, Any]:
    """The ensemble's data with the chosen blueprint's templates in its topology; the data
    itself when no blueprint is chosen or the chosen one is not declared (validation says
    so). The blueprint's templates come first, then the topology's others: Unfurl merges
    the topology into the blueprint's, so that is its plan order. Copies only the mappings
    on the path to ``node_templates``."""
    name = chosen(data)
    blueprint = declared(data).get(name) if name else None
    replacing = templates_of(blueprint)
    if not replacing:
        return data
    spec = mapping(data.get("spec"))
    service = mapping(spec.get("service_template"))
    topology = mapping(service.get("topology_template"))
    written = mapping(topology.get("node_templates"))
    node_templates = {**replacing, **{k: v for k, v in written.items() if k not in replacing}}
    topology = {**topology, "node_templates": node_templates}
    service = {**service, "topology_template": topology}
    return {**data, "spec": {**spec, "service_template": service}}


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """A chosen blueprint the ensemble does not declare (Unfurl's error, in its words), and
    blueprints whose templates are not a mapping of templates, are written in Unfurl's
    JSON export form, or that have a key Unfurl does not document for them."""
    blueprints = declared(doc)
    name = chosen(doc)
    if name is not None and name not in blueprints:
        yield problem_at(
            doc, ("environment", "deployment_blueprint"), file,
            f"Can not find requested deployment blueprint: '{name}' is missing from the "
            "ensemble.",
            ("declare it under `spec.deployment_blueprints` or the service template's "
             "`deployment_blueprints`" + (f" (declared: {', '.join(sorted(blueprints))})"
                                          if blueprints else "")))
    for blueprint_name, where, body in _locations(doc):
        if not is_map(body):
            yield problem_at(doc, where, file,
                             f"deployment blueprint {blueprint_name!r} must be a mapping",
                             "give it `node_templates:` (and optionally `cloud:`, `title:`)")
            continue
        for key in body:
            if key in _EXPORT_KEYS:
                yield problem_at(
                    doc, (*where, key), file,
                    f"a deployment blueprint's `{key}` (Unfurl's JSON export form) is not "
                    "supported", "list the blueprint's templates under `node_templates:`")
            elif key not in _KEYS:
                yield problem_at(
                    doc, (*where, key), file,
                    f"deployment blueprint {blueprint_name!r}: the key {key!r} is not "
                    "supported", "a blueprint has " + ", ".join(sorted(_KEYS)))
        for key in _TEMPLATE_KEYS:
            templates: YAMLValue = body.get(key)
            if templates is not None and not is_map(templates):
                yield problem_at(doc, (*where, key), file,
                                 f"deployment blueprint {blueprint_name!r}'s `{key}` must "
                                 "be a mapping of node templates by name",
                                 "write `node_templates: {NAME: {type: ...}}`")


def _locations(doc: Any) -> Iterator[tuple[str, tuple[str, ...], YAMLValue]]:
    """Each declared blueprint: its name, its path in the document, its body."""
    spec = mapping(mapping(doc).get("spec"))
    inner = mapping(mapping(spec.get("service_template")).get("deployment_blueprints"))
    for name, body in inner.items():
        yield str(name), ("spec", "service_template", "deployment_blueprints", str(name)), body
    for name, body in mapping(spec.get("deployment_blueprints")).items():
        yield str(name), ("spec", "deployment_blueprints", str(name)), body
