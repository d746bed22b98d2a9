"""A node template missing a property its type requires is refused at validate, as
Unfurl 1.2.0 (tosca-parser's MissingRequiredFieldError) refuses the service template:
unfurl-cases 274 (normative types), and the document's own types; a default or
``required: false`` makes it optional."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse


def _problems(types: str, templates: str) -> list[str]:
    text = textwrap.dedent("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            node_types:
        {types}
            topology_template:
              node_templates:
        {templates}
        """).format(types=textwrap.indent(textwrap.dedent(types), " " * 6),
                    templates=textwrap.indent(textwrap.dedent(templates), " " * 8))
    return [p.message for p in semantic_problems(parse(text, "ensemble.yaml"), "ensemble.yaml")
            if "missing required field" in p.message]


TYPES = """\
    Db:
      derived_from: tosca.nodes.Root
      properties:
        must: {type: string}
        optional: {type: string, required: false}
        defaulted: {type: string, default: x}
    Child:
      derived_from: Db
      properties:
        also: {type: integer}
    """


def test_a_required_property_left_out_is_refused_with_unfurls_words() -> None:
    assert _problems(TYPES, "db: {type: Db}\nchild: {type: Child, properties: {must: m}}") == [
        '"properties" of template "db" is missing required field "[\'must\']"',
        '"properties" of template "child" is missing required field "[\'also\']"']


def test_normative_types_require_what_tosca_13_requires() -> None:
    assert _problems("X: {derived_from: tosca.nodes.Root}", """\
        vol: {type: tosca.nodes.Storage.BlockStorage}
        named: {type: tosca.nodes.Storage.BlockStorage, properties: {name: v}}
        store: {type: tosca.nodes.Storage.ObjectStorage, properties: {name: s}}
        """) == ['"properties" of template "vol" is missing required field "[\'name\']"',
                 '"properties" of template "store" is missing required field "[\'maxsize\']"']


@given(st.sets(st.sampled_from(["must", "optional", "defaulted"])))
def test_only_the_required_ones_without_a_default_must_be_given(given_names: set[str]) -> None:
    properties = ", ".join(f"{n}: v" for n in sorted(given_names))
    found = _problems(TYPES, f"db: {{type: Db, properties: {{{properties}}}}}")
    assert bool(found) == ("must" not in given_names)


def test_a_type_not_known_here_is_not_judged() -> None:
    assert _problems("Mine: {derived_from: some.unknown.Type, properties: {p: {type: string}}}",
                     "x: {type: Mine}") == []
