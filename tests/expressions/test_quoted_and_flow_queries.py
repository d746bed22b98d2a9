"""Two things Unfurl 1.2.0's corpus showed (tests/data/unfurl-cases/74-docs-q-quote,
92-docs-keys-hosting): an output quoted with ``q`` keeps its expression unevaluated in the
job, and the status Unfurl saves evaluates it once read (``{q: {eval: "not a path"}}`` is
saved as null); and a query written unquoted in a flow mapping (``{eval: ::a::b}``), which
strict YAML parsers refuse, is read as ruamel's round trip (and Unfurl) read it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ensemble_yaml, examples, safe_load
from unfurl_lite.load import yamlio

ANCHOR = """\
app:
  type: tosca.nodes.Root
  properties:
    port: 8080
  interfaces:
    Standard:
      configure: echo anchored
"""


def with_outputs(outputs: str) -> str:
    head, _, nodes = ensemble_yaml(ANCHOR).partition("      node_templates:\n")
    return head + "      outputs:\n" + outputs + "      node_templates:\n" + nodes


def test_an_output_quoted_with_q_is_saved_as_unfurl_saves_it(project, invoke):
    project.write(with_outputs(
        "        quoted:\n          value: {q: {eval: this will not be evaluated}}\n"
        "        port: {value: {eval: '::app::port'}}\n"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    outputs = safe_load(project.ensemble.read_text())["status"]["outputs"]
    assert outputs == {"quoted": None, "port": 8080}


def test_an_unquoted_query_in_a_flow_mapping_is_evaluated(project, invoke):
    project.write(with_outputs("        port: {value: {eval: ::app::port}}\n"))
    assert invoke("validate").exit_code == 0
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    saved = yamlio.parse_plain(project.ensemble.read_text())  # strict YAML refuses the spec
    assert saved["status"]["outputs"] == {"port": 8080}


segment = st.text(alphabet="abcxyz_-.", min_size=1, max_size=6)


@settings(max_examples=examples(60))
@given(st.lists(segment, min_size=1, max_size=4), st.sampled_from(["eval", "q", "x"]))
def test_flow_mappings_holding_colons_read_as_the_round_trip_reads_them(parts, key):
    text = f"a: {{{key}: ::{'::'.join(parts)}}}\nb: [1, {{c: d}}]\n"
    assert yamlio.parse_plain(text) == yamlio.to_plain(yamlio.parse(text, "t.yaml"))
    assert yamlio.parse_plain(text)["a"] == {key: "::" + "::".join(parts)}
