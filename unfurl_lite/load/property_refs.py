"""``get_property`` of a property the named template's type does not declare, refused as
Unfurl 1.2.0 refuses it when it loads the service template (tosca-parser: 'get_property
function referencing property "release" not found in node template "app"'). A property a
template sets that its type does not declare is not one in Unfurl (``SELF.x`` is missing,
``::t::x`` null: :func:`unfurl_lite.model.lineage.undeclared_properties`), so a TOSCA
function naming it cannot be resolved.

Only the two-argument form naming a node template (or ``SELF`` inside one) is judged, and
only when the template's type is one the document declares and every type it derives from
is known here (the document's, TOSCA's normative ones, Unfurl's own): a template typed
directly with a normative type keeps its free-form properties
(docs/differences-from-unfurl.md).
"""

from __future__ import annotations

from collections.abc import Iterator

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import SERVICE, TOPOLOGY, get_section, mapping, problem_at
from unfurl_lite.model.lineage import lineage, undeclared_properties

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HINT = ("declare it in the template's type (`properties: {{{name}: {{type: string}}}}` of a "
         "node type derived from {type}), or give the type `metadata: "
         "{{additionalProperties: true}}`: Unfurl 1.2.0 ignores a property its type does "
         "not declare")


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each ``get_property: [TEMPLATE, name]`` in the topology whose ``name`` the
    template's type does not declare."""
    topology = get_section(doc, TOPOLOGY)
    templates = mapping(topology.get("node_templates"))
    node_types = {**mapping(get_section(doc, SERVICE).get("types")),
                  **mapping(get_section(doc, SERVICE).get("node_types"))}
    for path, owner, args in _references(topology):
        name = args[0] if args[0] not in ("SELF", "self") else owner
        if not isinstance(name, str) or not isinstance(args[1], str):
            continue
        type_name = undeclared_by(templates, node_types, name, args[1])
        if type_name is not None:
            yield problem_at(doc, (*TOPOLOGY, *path), file, message(name, args[1], type_name),
                             HINT.format(name=args[1], type=type_name))


def message(template: str, prop: str, type_name: str) -> str:
    return (f'get_property function referencing property "{prop}" not found in node '
            f'template "{template}": its type {type_name} does not declare it')


def undeclared_by(templates: dict[str, Any], node_types: dict[str, Any], name: str,
                  prop: str) -> str | None:
    """The type of template ``name`` when it is one the document declares and it does not
    declare ``prop`` (nor takes any property); None when the reference is not refused."""
    if name not in templates:
        return None
    template = mapping(templates[name])
    type_name = template.get("type") or "tosca.nodes.Root"
    if not isinstance(type_name, str) or type_name not in node_types:
        return None
    chain = tuple(lineage(type_name, node_types))
    own = {t: mapping(mapping(node_types[t]).get("metadata")) for t in chain
           if t in node_types}
    declared = {k: v for t in chain for k, v in
                mapping(mapping(node_types.get(t)).get("properties")).items()}
    if undeclared_properties(chain, declared, own, (prop,),
                             mapping(template.get("metadata"))):
        return type_name
    return None


def _references(topology: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str | None,
                                                             list[Any]]]:
    """(path, the node template it is inside or None, the arguments) of each two-argument
    ``get_property`` under the topology."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), topology)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            args = value.get("get_property")
            if len(value) == 1 and isinstance(args, list) and len(args) == 2:
                # SELF inside a requirement's relationship is the relationship: not judged
                owner = path[1] if len(path) > 2 and path[0] == "node_templates" and \
                    path[2] != "requirements" else None
                yield path, owner if isinstance(owner, str) else None, args
                continue
            stack.extend(((*path, key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
