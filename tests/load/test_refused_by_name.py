"""Constructs of Unfurl's that would run as something else here are refused by name at
validate, with their line: found by running Unfurl's own example ensembles side by side
(tests/data/unfurl-cases/), where each had been accepted and run differently."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.load.test_validate import problems_in, templates


@pytest.mark.parametrize("body, named", [
    ("""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           operations:
             create:
           defaults:
             implementation:
               className: unfurl.configurators.ansible.AnsibleConfigurator
     """, "unfurl.configurators.ansible.AnsibleConfigurator"),
    ("""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           defaults:
             implementation: Ansible
           operations:
             create:
     """, "Ansible"),
    ("""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           create: unfurl.configurators.ansible.AnsibleConfigurator
     """, "unfurl.configurators.ansible.AnsibleConfigurator"),
    ("""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           create: spec/configurators.py#LocallyDefinedConfigurator
     """, "spec/configurators.py#LocallyDefinedConfigurator"),
    ("""\
     a:
       type: tosca.nodes.Root
       artifacts:
         build: {type: tosca.artifacts.Root, file: build.sh}
       interfaces:
         Standard:
           configure: build
     """, "the artifact 'build'"),
    ("""\
     a:
       type: tosca.nodes.Root
       properties:
         p:
           eval:
             python: mymodule.compute
     """, "'python'"),
    ("""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           create:
             implementation: Shell
             inputs:
               command: "echo {{ '.template' | eval }}"
     """, "`.template`"),
    # operation keys the schema let through and nothing read (Unfurl 1.2.0 acts on
    # entry_state and invoke, and refuses workflow, pre_conditions and resultTemplate:
    # "unknown field"; a resultTemplate there was accepted and never applied)
    *[(f"""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           operations:
             configure:
               implementation: echo hi
               {key}: {value}
     """, f"`{key}`") for key, value in (("entry_state", "started"),
                                        ("workflow", "deploy"), ("pre_conditions", "[]"),
                                        ("invoke", "Standard.create"),
                                        ("resultTemplate", "{a: x}"))],
    # a requirement's min/max: the schema let them through, nothing read them (Unfurl
    # 1.2.0 refuses both: unknown field)
    ("""\
     other:
       type: tosca.nodes.Root
     a:
       type: tosca.nodes.Root
       requirements:
         - dependency:
             node: other
             max: 2
     """, "`max`"),
])
def test_refused_by_name_with_its_line(tmp_path: Path, body: str, named: str) -> None:
    problems = problems_in(tmp_path, templates(body))
    assert problems, "accepted"
    assert any(named in p.message and "not supported" in p.message and p.line
               for p in problems), [p.message for p in problems]


def test_a_query_piped_to_eval_reads_the_attribute(project, invoke) -> None:
    project.write("""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
        source:
          type: tosca.nodes.Root
          properties:
            greeting: hello
        reader:
          type: tosca.nodes.Root
          requirements:
            - dependency: source
          interfaces:
            Standard:
              create:
                implementation: Shell
                inputs:
                  command: "echo said {{ '::source::greeting' | eval }}"
""")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "said hello" in (project.root / "jobs").glob("job*.yaml").__next__().read_text()


@pytest.mark.parametrize("implementation", [
    "unfurl.configurators.TemplateConfigurator",
    "unfurl.configurators.shell.ShellConfigurator",
    "Template",
])
def test_unfurls_names_of_our_own_configurators_are_accepted(tmp_path: Path,
                                                             implementation: str) -> None:
    body = f"""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           defaults:
             implementation: {implementation}
           operations:
             create:
     """
    assert problems_in(tmp_path, templates(body)) == []


@pytest.mark.parametrize(("host", "refused"), [
    ("ORCHESTRATOR", False), ("localhost", False), ("SELF", True), ("HOST", True)])
def test_operation_host_naming_the_orchestrator_is_read_as_unfurl_reads_it(
        tmp_path: Path, host: str, refused: bool) -> None:
    """Unfurl 1.2.0 runs an operation whose `operation_host` is ORCHESTRATOR or localhost
    exactly as one without it (unfurl-cases 284); any other host is refused by name."""
    body = f"""\
     a:
       type: tosca.nodes.Root
       interfaces:
         Standard:
           configure:
             implementation: {{className: Shell, operation_host: {host}}}
             inputs: {{command: echo hi}}
     """
    found = [p.message for p in problems_in(tmp_path, templates(body))]
    assert bool(found) == refused, found
    assert all("`operation_host`" in m and "not supported" in m for m in found)


@pytest.mark.parametrize(("section", "definition", "named"), [
    ("node_types", "{derived_from: tosca.nodes.Root, directives: [select]}",
     "`directives` on a node type"),
    ("relationship_types", "{derived_from: tosca.relationships.ConnectsTo, default_for: ANY}",
     "`default_for` on a relationship type"),
    ("types", "{derived_from: tosca.nodes.Root, directives: [select]}",
     "`directives` on a node type"),
])
def test_type_keys_unfurl_refuses_and_nothing_read_are_refused(
        tmp_path: Path, section: str, definition: str, named: str) -> None:
    """The schema let them through and nothing read them; Unfurl 1.2.0 refuses both
    ('Nodetype "X" contains unknown field "directives"')."""
    body = (f"spec:\n  service_template:\n    {section}:\n      X: {definition}\n"
            "    topology_template:\n      node_templates:\n        a: {type: tosca.nodes.Root}\n")
    found = [p for p in problems_in(tmp_path, body) if named in p.message]
    assert len(found) == 1 and found[0].line == 6, [p.message for p in found]  # HEAD: 2
