"""``get_attribute``/``get_property`` of ``HOST`` in a node template, judged as tosca-parser
judges them when Unfurl 1.2.0 loads the service template: the host is found by following
the first requirement the template writes whose target is a template (its target's first,
and so on) to the first target whose type declares the attribute or property (or, with a
third argument, has the capability the second names with that attribute, or with a value
for that property); none found, the service template is refused. Requirements a template
leaves to its type are not followed (tosca-parser reads the functions before they are
matched). Used by :mod:`unfurl_lite.load.function_refs` (its ``_Judge``)."""

from __future__ import annotations

from unfurl_lite.load.problems import mapping
from unfurl_lite.model.lineage import NORMATIVE_PROPERTIES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

_UNKNOWN = "?"  # a template or type not known here: not judged
#: a property declared without a default (function_refs' capability tables)
UNSET = object()
#: function_refs._Judge (typed loosely: this module is below it)
_Judge: TypeAlias = "Any"


def host_verdict(judge: _Judge, function: str, args: list[Any], owner: str) -> tuple[
        str, str] | None:
    """What Unfurl says of ``[HOST, ...]`` read in ``owner`` (message, hint), or None."""
    host = _host(judge, function, args, owner, set())
    if host == _UNKNOWN:
        return None
    if host is None:
        if function == "get_attribute":
            message = (f'"get_attribute: [ HOST, ... ]" was used in node template "{owner}" '
                       'but "tosca.relationships.HostedOn" was not found in the relationship '
                       f'chain: no template its requirements lead to declares "{args[1]}"')
        elif len(args) == 2:
            message = (f"Property '{args[1]}' not found on host when referenced from node "
                       f"template '{owner}'")
        else:
            message = (f"Property '{args[2]}' not found in capability/requirement "
                       f"'{args[1]}' referenced from node template '{owner}'")
        return message, ("name the host's template instead of HOST, or give the template the "
                         "requirement on it first (`requirements: [{host: NAME}]`): "
                         "tosca-parser follows the first requirement a template writes")
    if len(args) == 2:
        return None  # found where the type declares it
    if function == "get_attribute":
        return judge._attribute_path(host, args, owner)
    return judge._property_path(host, args, owner)


def _host(judge: _Judge, function: str, args: list[Any], name: str,
          seen: set[str]) -> str | None:
    """tosca-parser's search from ``name``: the host's template, None, or _UNKNOWN. A loop
    from one template's first requirement to its target's: a chain of thousands is no
    deeper for Python than one."""
    current: str | None = name
    while current is not None:
        if current in seen:
            return _UNKNOWN
        seen.add(current)
        current, verdict = _first_target(judge, function, args, current)
        if verdict is not None:
            return verdict
    return None


def _first_target(judge: _Judge, function: str, args: list[Any], name: str
                  ) -> tuple[str | None, str | None]:
    """(the template to search next, None) or (None, the search's verdict: the host's
    template, _UNKNOWN, or None when ``name`` writes no requirement)."""
    requirements = mapping(judge.templates.get(name)).get("requirements")
    for entry in requirements if isinstance(requirements, list) else ():
        for _req, spec in mapping(entry).items():
            target = spec if isinstance(spec, str) else mapping(spec).get("node")
            if not isinstance(target, str):
                return None, _UNKNOWN
            found = judge._template(target)
            facts = judge._facts(found) if found is not None else None
            if found is None or facts is None:
                return None, _UNKNOWN
            if _holds(judge, function, args, found, facts[0]):
                return None, found
            return found, None
    return None, None


def _holds(judge: _Judge, function: str, args: list[Any], template: str,
           chain: tuple[str, ...]) -> bool:
    """Whether ``template``'s type declares what ``args`` read, or (a third argument) it
    has that capability with that attribute, or with a value for that property."""
    if function == "get_attribute":
        if args[1] in judge.types.attributes(chain):
            return True
    elif args[1] in judge.types.properties(chain) or any(
            args[1] in NORMATIVE_PROPERTIES.get(t, (None, ()))[1] for t in chain):
        return True
    if len(args) < 3:
        return False
    capability = judge.types.capabilities(chain).get(args[1])
    cap_type = judge.types.capability(capability) if capability else None
    if cap_type is None:
        return False
    if function == "get_attribute":
        return args[2] in cap_type[0]
    given = mapping(mapping(mapping(mapping(judge.templates.get(template)).get(
        "capabilities")).get(args[1])).get("properties"))
    value = given.get(args[2], cap_type[1].get(args[2]))
    return value is not None and value is not UNSET
