"""Validation of small bad ensembles written to disk: every problem, located."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import REFERENCE, ensemble_yaml
from unfurl_lite.errors import InputError, Problem
from unfurl_lite.load import merge, validate, yamlio
from unfurl_lite.model.dependencies import find_cycles

HEAD = "apiVersion: unfurl/v1alpha1\nkind: Ensemble\n"


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def problems_in(root: Path, body: str, name: str = "ensemble.yaml") -> list[Problem]:
    """Load, merge and check as the loader does; syntax errors come back as problems too."""
    file = write(root, name, HEAD + textwrap.dedent(body))
    try:
        doc = yamlio.load_file(file)
        merged = merge.expand(doc, file, root)
    except InputError as exc:
        return exc.problems
    return validate.check(merged, str(file))


def templates(body: str) -> str:
    """An ensemble whose node_templates section is ``body`` (indented for you)."""
    return (
        "spec:\n  service_template:\n    topology_template:\n      node_templates:\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
    )


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [p.format() for p in problems]
    return problems[0]


NT = "spec.service_template.topology_template.node_templates"


@pytest.mark.parametrize("name", ["ensemble.before.yaml", "ensemble.after.yaml"])
def test_reference_ensembles_validate_clean(name: str) -> None:
    file = REFERENCE / name
    doc = yamlio.load_file(file)
    assert validate.check(merge.expand(doc, file, REFERENCE), str(file)) == []


def test_reference_status_and_changes_fit_their_sections() -> None:
    spec = yamlio.load_file(REFERENCE / "ensemble.before.yaml")
    status = yamlio.load_file(REFERENCE / "status.after-undeploy.yaml")
    changes = yamlio.load_file(REFERENCE / "changes-job.yaml")
    doc = {**yamlio.to_plain(spec), **yamlio.to_plain(status),
           "changes": yamlio.to_plain(changes)["changes"]}
    # the records fit the schema, and so does an inline changes: log (Unfurl's, kept here)
    problems = validate.check(doc, "combined")
    assert [p.message for p in problems] == []


def test_realistic_unfurl_ensemble_is_accepted(tmp_path: Path) -> None:
    problems = problems_in(tmp_path, """\
        metadata: {uri: "git-local://abc:ensemble/ensemble.yaml"}
        user_notes: [top-level keys are the user's, as in Unfurl]
        environment: {inputs: {domain: example.org}}
        spec:
          inputs: {domain: example.com}
          service_template:
            tosca_definitions_version: tosca_simple_unfurl_1_0_0
            imports:
              - repository: unfurl
                file: tosca_plugins/artifacts.yaml
            # the types it names are defined (Unfurl 1.2.0 refuses them undefined:
            # load/undefined_types.py)
            data_types:
              unfurl.datatypes.Sensitive: {derived_from: string}
              sensitive: {derived_from: string}
            interface_types:
              MyCustomInterface: {derived_from: tosca.interfaces.Root,
                                  operations: {anything_goes: {}}}
            node_types:
              App:
                derived_from: tosca.nodes.SoftwareComponent
                metadata: {title: My app}
                properties:
                  password:
                    type: unfurl.datatypes.Sensitive
                  token:
                    type: string
                    metadata: {sensitive: true}
                  key: {type: sensitive, required: false}
                interfaces:
                  Standard:
                    create: echo create
                    delete:
                      implementation: delete.sh
                  MyCustom:
                    type: MyCustomInterface
                requirements:
                  - host: {node: tosca.nodes.Compute}
            topology_template:
              inputs:
                secret: {type: string, metadata: {sensitive: true}, default: x}
              outputs:
                url: {value: {eval: "::server::url"}}
              node_templates:
                server:
                  type: tosca.nodes.Compute
                  directives: [protected]
                  capabilities:
                    scalable: {properties: {default_instances: 2}}
                app:
                  type: App
                  priority: optional
                  properties: {password: {get_env: PASS}, token: t, anything: [1, {x: 2}]}
                  requirements:
                    - host: server
                    - dependency:
                        node: server
                        relationship: tosca.relationships.DependsOn
                  interfaces:
                    Install:
                      operations:
                        check:
                          implementation: {className: Shell}
                          inputs: {command: "true", timeout: 10}
                    tosca.interfaces.node.lifecycle.Standard:
                      configure: ./configure.sh
                    MyCustom:
                      anything_goes: echo hi
        status:
          instances:
            server:
              template: server
              readyState: {local: ok, state: started, effective: ok}
              created: false
              protected: true
        """)
    assert problems == [], [p.format() for p in problems]


def test_bad_yaml_syntax_has_line(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, "spec:\n  a: [1, 2\n  b: 3\n"))
    assert "YAML syntax error" in problem.message
    assert problem.line == 5


def test_schema_type_error_has_line_and_path(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        db:
          type: tosca.nodes.Root
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
            - just-a-string
        """)))
    assert problem.path == f"{NT}.app.requirements[1]"
    assert problem.line == 13
    assert problem.file and problem.file.endswith("ensemble.yaml")
    assert problem.message == "expected an object, got string 'just-a-string'"


def test_schema_errors_name_the_deepest_place(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Root
          properties: [not, a, map]
        """)))
    assert problem.path == f"{NT}.app.properties"
    assert problem.line == 9
    assert "expected an object or null" in problem.message


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Root
          requirments: []
        """)))
    assert problem.message == "unknown key 'requirments'"
    assert problem.path == f"{NT}.app.requirments"
    assert problem.line == 9
    assert problem.hint == "did you mean 'requirements'?"


def test_unknown_key_in_service_template_is_rejected(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, """\
        spec:
          service_template:
            node_template: {}
        """))
    assert problem.message == "unknown key 'node_template'"
    assert problem.hint == "did you mean 'node_types'?"
    assert problem.line == 5


def test_bad_enum_in_status(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, """\
        spec: {}
        status:
          instances:
            db:
              readyState: {local: okay}
        """))
    assert problem.path == "status.instances.db.readyState.local"
    assert problem.hint == "did you mean 'ok'?"


def test_unknown_requirement_target(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        db:
          type: tosca.nodes.Root
        app:
          type: tosca.nodes.Root
          requirements:
            - host: dbb
        """)))
    assert "unknown node template 'dbb'" in problem.message
    assert problem.path == f"{NT}.app.requirements[0]"
    assert problem.line == 12
    assert problem.hint == "did you mean 'db'?"


def test_unknown_node_type(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Compte
        """)))
    assert "unknown type 'tosca.nodes.Compte'" in problem.message
    assert problem.path == f"{NT}.app.type"
    assert problem.hint == "did you mean 'tosca.nodes.Compute'?"


def test_requirement_cycle_is_printed(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
        db:
          type: tosca.nodes.Root
          requirements:
            - dependency: app
        """)))
    assert problem.message.startswith("requirement cycle: app -> db -> app is not supported")
    assert problem.line == 10


def test_derived_from_cycle(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, """\
        spec:
          service_template:
            node_types:
              A: {derived_from: B}
              B: {derived_from: A}
        """))
    assert problem.message == "derived_from cycle: A -> B -> A"


def test_unknown_operation_on_well_known_interface(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                craete: echo hi
        """)))
    assert problem.message == "unknown operation 'craete' on interface 'Standard'"
    assert problem.path == f"{NT}.app.interfaces.Standard.operations.craete"
    assert problem.hint == "did you mean 'create'?"


def test_every_bad_operation_in_one_interface_is_reported(tmp_path: Path) -> None:
    problems = problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: {implementation: {klass: x}}
              delete: {implementation: 5}
              stop: {implemntation: echo}
        """))
    assert [(p.line, p.path.rsplit(".", 2)[-2:]) for p in problems if p.path] == [
        (11, ["create", "implementation"]),
        (11, ["implementation", "klass"]),  # an unknown field, as Unfurl says
        (12, ["delete", "implementation"]),
        (13, ["stop", "implemntation"]),
    ]
    assert problems[0].hint and "className" in problems[0].hint
    assert problems[3].hint == "did you mean 'implementation'?"


def test_unknown_operation_short_form_and_cloudify_alias(tmp_path: Path) -> None:
    problems = problems_in(tmp_path, templates("""\
        app:
          type: cloudify.nodes.Root
          interfaces:
            cloudify.interfaces.lifecycle:
              precreate: echo ok
              prestart: echo bad
        """))
    assert [p.message for p in only_list(problems)] == [
        "unknown operation 'prestart' on interface 'cloudify.interfaces.lifecycle'"
    ]


def only_list(problems: list[Problem]) -> list[Problem]:
    return problems


def test_duplicate_key_in_a_file(tmp_path: Path) -> None:
    problem = only(problems_in(tmp_path, templates("""\
        app:
          type: tosca.nodes.Root
        app:
          type: tosca.nodes.Root
        """)))
    assert problem.message.startswith("duplicate key")
    assert problem.line == 9
    assert problem.file and problem.file.endswith("ensemble.yaml")


def test_duplicate_template_across_included_files(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", "db:\n  type: tosca.nodes.Root\n")
    write(tmp_path, "two.yaml", "x: 1\ndb:\n  type: tosca.nodes.Root\n")
    problems = problems_in(tmp_path, templates("""\
        +include: [one.yaml, two.yaml]
        """))
    problem = [p for p in problems if "more than once" in p.message]
    assert len(problem) == 1
    assert "one.yaml:1" in problem[0].message and "two.yaml:2" in problem[0].message


def test_override_of_included_template_is_not_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", "db:\n  type: tosca.nodes.Root\n  properties: {a: 1}\n")
    problems = problems_in(tmp_path, templates("""\
        +include: one.yaml
        db:
          properties: {a: 2}
        """))
    assert problems == []


def test_error_inside_included_file_names_that_file(tmp_path: Path) -> None:
    write(tmp_path, "parts/app.yaml",
          "# the app\napp:\n  type: tosca.nodes.Root\n  requirments: []\n")
    problem = only(problems_in(tmp_path, templates("""\
        +include: parts/app.yaml
        """)))
    assert problem.file and problem.file.endswith("parts/app.yaml")
    assert problem.line == 4
    assert problem.path == f"{NT}.app.requirments"


def test_several_errors_are_reported_together_in_file_order(tmp_path: Path) -> None:
    problems = problems_in(tmp_path, templates("""\
        app:
          type: Nope
          requirements:
            - host: missing
          interfaces:
            Standard:
              strat: echo
        db:
          type: tosca.nodes.Root
          properties: 5
        """))
    messages = [p.message for p in problems]
    assert len(problems) == 4, messages
    assert [p.line for p in problems] == sorted(p.line or 0 for p in problems)
    assert any("unknown type 'Nope'" in m for m in messages)
    assert any("unknown node template 'missing'" in m for m in messages)
    assert any("unknown operation 'strat'" in m for m in messages)
    assert any("expected" in m for m in messages)


def test_missing_top_level_keys(tmp_path: Path) -> None:
    file = write(tmp_path, "ensemble.yaml", "spec: {}\n")
    problems = validate.check(yamlio.load_file(file), str(file))
    assert [p.message for p in problems] == ["missing required keys apiVersion, kind"]


def test_check_never_raises_on_garbage() -> None:
    doc = yamlio.parse(HEAD + "spec:\n  service_template:\n    topology_template: 5\n"
                       "    node_types: {A: [1]}\n", "x.yaml")
    problems = validate.check(doc, "x.yaml")
    assert problems and all(p.file == "x.yaml" for p in problems)


def test_find_cycles_reports_each_cycle_once() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["d"]}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["d", "d"]]


@pytest.mark.parametrize(
    ("implementation", "message"),
    [
        ("Ansible", "Unfurl's Ansible configurator is not supported"),
        ("{className: unfurl.configurators.terraform.TerraformConfigurator}",
         "configurator 'unfurl.configurators.terraform.TerraformConfigurator' is not supported"),
        ("{className: 'not a callable'}", "neither a built-in operation"),
    ],
)
def test_operations_only_unfurl_can_run_are_refused_before_the_job(
    project, invoke, implementation, message
):
    project.write(ensemble_yaml(f"""\
web:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation: {implementation}
"""))
    result = invoke("validate")
    assert result.exit_code == 1
    output = result.output.replace("\n", " ")
    assert message in output and "ensemble.yaml:12:" in output
    assert "ansible-playbook" in output  # the hint says what to write instead


# --- what Unfurl 1.2.0 acts on and unfurl-lite does not: refused by name, never ignored


def test_a_type_no_import_defines_is_unknown_naming_the_imports(tmp_path: Path) -> None:
    from unfurl_lite.load import imports

    write(tmp_path, "types.yaml", "node_types: {my.nodes.Db: {derived_from: tosca.nodes.Root}}\n")
    file = write(tmp_path, "ensemble.yaml", HEAD + textwrap.dedent("""\
        spec:
          service_template:
            imports: [types.yaml]
            topology_template:
              node_templates:
                web: {type: my.nodes.Web}
        """))
    merged = imports.apply(merge.expand(yamlio.load_file(file), file, tmp_path), file, tmp_path)
    problem = only(validate.check(merged, str(file)))
    assert "unknown type 'my.nodes.Web'" in problem.message
    assert "defined neither here nor in any imported file" in problem.message


@pytest.mark.parametrize("type_name", ["unfurl.nodes.Installer.Terraform", "unfurl.nodes.DNSZone",
                                       "unfurl.nodes.K8sCluster"])
def test_unfurl_types_with_their_own_operations_are_refused(tmp_path: Path, type_name: str) -> None:
    problem = only(problems_in(tmp_path, templates(f"example: {{type: {type_name}}}\n")))
    assert f"Unfurl's type {type_name!r}" in problem.message
    assert "not supported" in problem.message


@pytest.mark.parametrize(("implementation", "named"), [
    ("{primary: echo hi, operation_host: staging.example.com}", "`operation_host`"),
    ("{primary: echo hi, dependencies: [kubectl]}", "`dependencies`"),
    ("{primary: {type: tosca.artifacts.Implementation.Bash, file: x.sh}}", "inline artifact"),
    ("{primary: Cmd}", "Cmd configurator"),
    ("Cmd", "Cmd configurator"),
])
def test_unfurl_only_implementation_forms_are_refused(
    tmp_path: Path, implementation: str, named: str
) -> None:
    problem = only(problems_in(tmp_path, templates(f"""\
        app:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                configure:
                  implementation: {implementation}
        """)))
    assert named in problem.message and "not supported" in problem.message


@pytest.mark.parametrize(("section", "named"), [
    ("    decorators:\n      web: {properties: {port: 80}}\n", "`decorators:`"),
    ("    topology_template:\n      substitution_mappings: {node_type: tosca.nodes.Root}\n",
     "`substitution_mappings`"),
])
def test_unfurl_sections_that_would_be_ignored_are_refused(
    tmp_path: Path, section: str, named: str
) -> None:
    problem = only(problems_in(tmp_path, "spec:\n  service_template:\n" + section))
    assert named in problem.message and "not supported" in problem.message
