"""``{eval: {concat: [...]}}``: Unfurl's eval knows the TOSCA functions (concat, join,
get_input, get_property...), as in tests/data/unfurl-cases/30-self-properties, where
Unfurl 1.2.0 renders ``hello staging world``."""

from __future__ import annotations

from tests.conftest import ensemble_yaml

SPEC = ensemble_yaml("""\
svc:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation: {className: Shell}
        inputs:
          greeting: {eval: {concat: ["hello ", {eval: {join: [[a, b], "-"]}}]}}
          command: "echo '{{ inputs.greeting }}'"
          resultTemplate:
            attributes:
              out: "{{ stdout | trim }}"
""")


def test_eval_of_a_tosca_function_evaluates_it(project, invoke):
    project.write(SPEC)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["svc"]["attributes"]["out"] == "hello a-b"
