"""Nothing a user wrote is silently ignored: an interface the template's type does not
declare (``Standrad:``) is refused with a did-you-mean, as Unfurl 1.2.0 refuses it
("contains unknown field"), and a job outside a git repository says it was not committed."""

from __future__ import annotations

import json

from tests.conftest import ensemble_yaml, run_in_process

MISSPELLED = """\
db:
  type: tosca.nodes.Root
  interfaces:
    Standrad:
      create: touch created
"""


def test_a_misspelled_interface_fails_validate_with_did_you_mean(project, invoke):
    project.write(ensemble_yaml(MISSPELLED))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "interface 'Standrad' is not declared by type 'tosca.nodes.Root'" in result.output
    assert "did you mean 'Standard'?" in result.output
    assert "ensemble.yaml:" in result.output  # file and line


def test_a_misspelled_interface_is_refused_by_deploy_and_nothing_runs(project, invoke):
    project.write(ensemble_yaml(MISSPELLED))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1
    assert "no operation: state only" not in result.output
    assert "Standrad" in result.output
    assert not (project.root / "created").exists()
    assert project.jobs_tsv() == []


def test_a_custom_interface_must_be_declared_by_the_type(project, invoke):
    project.write(ensemble_yaml("""\
    db:
      type: tosca.nodes.Root
      interfaces:
        Maintenance:
          backup: echo backup
    """))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "interface 'Maintenance' is not declared by type 'tosca.nodes.Root'" in result.output
    assert "node_types" in result.output  # the hint says where to declare it


def test_interfaces_the_type_declares_are_accepted(project, invoke):
    text = ensemble_yaml("""\
    db:
      type: example.Database
      interfaces:
        Maintenance:
          backup: echo backup
        Install:
          check: "true"
        tosca.interfaces.node.lifecycle.Standard:
          create: echo create
    """).replace("    topology_template:", """    interface_types:
      example.interfaces.Maintenance:
        derived_from: tosca.interfaces.Root
        operations:
          backup: {}
    node_types:
      example.Base:
        derived_from: tosca.nodes.Root
        interfaces:
          Maintenance:
            type: example.interfaces.Maintenance
      example.Database:
        derived_from: example.Base
    topology_template:""")
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 0, result.output
    assert invoke("deploy", "--approve").exit_code == 0
    ran = invoke("run", "--operation", "Maintenance.backup", "--approve")
    assert ran.exit_code == 0, ran.output
    assert "Maintenance.backup succeeded" in ran.output


def test_an_unknown_key_inside_an_interface_is_refused_with_did_you_mean(project, invoke):
    project.write(ensemble_yaml("""\
    db:
      type: tosca.nodes.Root
      interfaces:
        Standard:
          operation:
            create: echo hi
    """))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "'operation'" in result.output and "did you mean 'operations'?" in result.output


def test_a_job_outside_a_git_repository_says_it_was_not_committed(tmp_path):
    (tmp_path / "ensemble.yaml").write_text(ensemble_yaml(MISSPELLED.replace("Standrad",
                                                                             "Standard")))
    result = run_in_process(tmp_path, "deploy", "--approve")
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert output.count("not committed: not a git repository") == 1
    assert (tmp_path / "jobs.tsv").exists()
    as_json = run_in_process(tmp_path, "deploy", "--approve", "--force", "--json")
    assert json.loads(as_json.stdout)["notCommitted"] == "not a git repository"
    quiet = run_in_process(tmp_path, "deploy", "--approve", "--force", "--no-commit")
    assert "not committed" not in quiet.stdout + quiet.stderr


def test_a_misspelled_relationship_interface_is_refused(project, invoke):
    project.write(ensemble_yaml("""\
    db:
      type: tosca.nodes.Root
    app:
      type: tosca.nodes.Root
      requirements:
        - dependency:
            node: db
            relationship:
              type: tosca.relationships.DependsOn
              interfaces:
                Configur:
                  add_target: echo hi
    """))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "interface 'Configur' is not declared by type 'tosca.relationships.DependsOn'" \
        in result.output
    assert "did you mean 'Configure'?" in result.output


def test_a_misspelled_interface_in_a_node_type_is_refused(project, invoke):
    text = ensemble_yaml("""\
    db:
      type: example.Database
    """).replace("    topology_template:", """    node_types:
      example.Database:
        derived_from: tosca.nodes.Root
        interfaces:
          Standrad:
            create: echo create
    topology_template:""")
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "interface 'Standrad' of node type 'example.Database' has no type" in result.output
    assert "did you mean 'Standard'?" in result.output
