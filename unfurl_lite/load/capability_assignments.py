"""A node template's ``capabilities:`` assignments, judged as tosca-parser judges them when
Unfurl 1.2.0 loads the service template (tests/data/unfurl120/52-capability-assignments):
a capability the template's type does not have ('"capabilities" of template "app" contains
unknown field "nosuch".') and a property its capability type does not declare ('"properties"
of template "app" contains unknown field "nope".') are refused; before, both were accepted
and read nowhere a job looks. A template whose type, or a capability whose type, is not
known here in full (a Cloudify type, say) is not judged; Cloudify's ``scalable`` is read
on any template (docs/differences-from-unfurl.md).
"""

from __future__ import annotations

from collections.abc import Iterator

from unfurl_lite.errors import Problem
from unfurl_lite.load.problems import TOPOLOGY, did_you_mean, get_section, mapping, problem_at
from unfurl_lite.load.type_tables import Types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


#: Cloudify's `scalable` capability, which any of its node templates may assign (the
#: instance count of scale and install): read so on every template here, with the properties
#: of TOSCA's Scalable (a template of a type without it is refused by Unfurl 1.2.0)
CLOUDIFY_SCALABLE = ("scalable", "tosca.capabilities.Scalable")


def problems(doc: Any, file: str) -> Iterator[Problem]:
    """Each capability a template assigns that its type does not have, and each property
    of one that its capability type does not declare, in tosca-parser's words; Cloudify's
    ``scalable`` is every template's."""
    types = Types(doc)
    for name, body in get_section(doc, (*TOPOLOGY, "node_templates")).items():
        assigned = mapping(body).get("capabilities")
        if not isinstance(assigned, dict) or not assigned:
            continue
        chain = types.chain(mapping(body).get("type"))
        if chain is None:
            continue
        declared = {CLOUDIFY_SCALABLE[0]: CLOUDIFY_SCALABLE[1], **types.capabilities(chain)}
        where = (*TOPOLOGY, "node_templates", name, "capabilities")
        for capability, assignment in assigned.items():
            if capability not in declared:
                yield problem_at(
                    doc, (*where, capability), file,
                    f'"capabilities" of template "{name}" contains unknown field '
                    f'"{capability}".',
                    did_you_mean(str(capability), declared) or (
                        f"its type {mapping(body).get('type')!r} has the capabilities "
                        f"{', '.join(sorted(map(str, declared))) or 'none'}; declare this one "
                        "in a node type of your own (`capabilities: {NAME: {type: ...}}`)"))
                continue
            found = types.capability(declared[capability])
            if found is None:
                continue
            properties = found[1]
            for prop in mapping(mapping(assignment).get("properties")):
                if prop in properties:
                    continue
                yield problem_at(
                    doc, (*where, capability, "properties", prop), file,
                    f'"properties" of template "{name}" contains unknown field "{prop}".',
                    did_you_mean(str(prop), properties) or (
                        f"capability {capability!r} ({declared[capability]}) declares "
                        f"{', '.join(sorted(map(str, properties))) or 'no properties'}; "
                        "declare it in a capability type of your own"))
