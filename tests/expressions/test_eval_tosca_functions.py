"""``{eval: {concat: [...]}}``: Unfurl's eval knows the TOSCA functions (concat,
get_input, get_property...), as in tests/data/unfurl-cases/30-self-properties, where
Unfurl 1.2.0 renders ``hello staging world``; ``concat`` takes a ``sep`` inside ``eval``.
TOSCA's ``join`` is not one of Unfurl 1.2.0's functions (it keeps ``{join: ...}`` as a
mapping, and fails on ``{eval: {join: ...}}``): refused by name."""

from __future__ import annotations

from tests.conftest import ensemble_yaml, shell_node

SPEC = ensemble_yaml("""\
svc:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation: {className: Shell}
        inputs:
          greeting: {eval: {concat: ["hello ", {eval: {concat: [a, b], sep: "-"}}]}}
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


def test_toscas_join_is_refused_by_name(project, invoke):
    project.write(SPEC.replace('{eval: {concat: [a, b], sep: "-"}}', '{join: [[a, b], "-"]}'))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "TOSCA's eval function 'join' is not supported: Unfurl 1.2.0 has no such" in \
        result.output
    assert "concat" in result.output  # the hint names what to write instead


def test_get_property_of_host_finds_the_nearest_host_with_that_capability(project, invoke):
    """tosca-parser's HOST (unfurl-cases 273, 278): ``[HOST, cap, prop]`` is the property
    of the nearest host that has it, or whose capability ``cap`` has ``prop`` (the web
    server's ``data_endpoint``, past the compute's properties); the capability's defaults
    count (``protocol: tcp``)."""
    project.write(ensemble_yaml("""\
        vm:
          type: tosca.nodes.Compute
          capabilities: {host: {properties: {num_cpus: 2}}}
        server:
          type: tosca.nodes.WebServer
          requirements: [{host: vm}]
          capabilities: {data_endpoint: {properties: {port: 8080}}}
        app:
          type: tosca.nodes.WebApplication
          requirements: [{host: server}]
          interfaces:
            Standard:
              configure:
                implementation: Template
                inputs:
                  resultTemplate:
                    attributes:
                      port: {get_property: [HOST, data_endpoint, port]}
                      protocol: {get_property: [HOST, data_endpoint, protocol]}
                      cpus: {get_property: [HOST, host, num_cpus]}
        """))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["app"]["attributes"] == {"port": 8080, "protocol": "tcp", "cpus": 2}


def test_trace_break_a_template_builds_fails_its_task_by_name(project, invoke):
    # Unfurl 1.2.0 stops in Python's debugger here; a job never waits for one, so the
    # expression fails with the reason instead of running on as if `trace` were absent
    project.write(ensemble_yaml(shell_node(
        "app", "\"echo {{ '::app::.name' | eval(trace=SELF.mode) }}\"")
        .replace("  interfaces:", "  properties:\n    mode: break\n  interfaces:")))
    assert invoke("validate").exit_code == 0  # (the mode is a value: nothing to see there)
    result = invoke("deploy", "--approve")
    assert result.exit_code != 0
    assert "`trace: break` stops Unfurl in Python's debugger: not supported" in result.output
