"""Rules the sixth sitting's fresh Unfurl 1.2.0 cases exposed (tests/data/unfurl-cases
228-256, each recorded with Unfurl 1.2.0), checked here on documents of their own: a
template that redeclares an operation keeps its type's implementation, an instance of
only custom interfaces is aggregate-only, a default expression a task read is recorded,
a Credential keeps its shape with only its token and keys secret, undeploy stops only what
was started and goes on past a dependent's failure, and a task that waited on a value
another task set renders before it is found unable to run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.expressions.context import CREDENTIAL_SECRETS, secret_form, secret_leaves
from unfurl_lite.security.taint import Sensitive

HEAD = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
"""

TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=12)


def rows(project, start: int = 0) -> list[dict[str, str]]:
    found = []
    for line in project.jobs_tsv()[start:]:
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "target" in fields:
            found.append(fields)
    return found


@given(st.dictionaries(st.sampled_from(["protocol", "token_type", "token", "user", "keys"]),
                       TEXT))
def test_a_credential_keeps_its_shape_with_only_its_token_and_keys_secret(fields):
    value = secret_form(fields, credential=True)
    assert set(value) == set(fields)
    for key, item in value.items():
        assert isinstance(item, Sensitive) == (key in CREDENTIAL_SECRETS)
        assert str(item) == fields[key]
    assert sorted(secret_leaves(value)) == sorted(
        v for k, v in fields.items() if k in CREDENTIAL_SECRETS)


@given(st.recursive(TEXT, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8))
def test_any_other_sensitive_value_keeps_its_shape_with_every_leaf_secret(value):
    def leaves(v):
        if isinstance(v, dict):
            return [x for i in v.values() for x in leaves(i)]
        if isinstance(v, list):
            return [x for i in v for x in leaves(i)]
        return [v]

    made = secret_form(value)
    assert sorted(secret_leaves(made)) == sorted(leaves(value))
    assert type(made) is (Sensitive if isinstance(value, str) else type(value))


CREDENTIAL = HEAD + """\
    node_types:
      Client:
        derived_from: tosca:Root
        properties:
          credential:
            type: tosca.datatypes.Credential
        interfaces:
          Standard:
            configure:
              implementation: echo "{{ SELF.credential.protocol }} as {{ SELF.credential.user }}"
              inputs:
                resultTemplate:
                  attributes:
                    said: "{{ stdout | trim }}"
                    token_copy: "{{ SELF.credential.token }}"
    topology_template:
      node_templates:
        client:
          type: Client
          properties:
            credential: {protocol: https, token: tok-9f8e7d6c, user: admin}
"""


def test_a_credential_field_is_read_as_unfurl_reads_it_and_its_token_stays_secret(
        project, invoke):
    project.write(CREDENTIAL)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    attributes = project.status()["client"]["attributes"]
    assert attributes["said"] == "https as admin"
    assert attributes["token_copy"] == "<<REDACTED>>"
    recorded = project.ensemble.read_text().partition("\nstatus:")[2]
    written = recorded + "\n".join(project.jobs_tsv())
    written += "".join(p.read_text() for p in (project.root / "jobs").glob("*.yaml"))
    assert "tok-9f8e7d6c" not in written + result.output


REDECLARED = HEAD + """\
    node_types:
      Web:
        derived_from: tosca:Root
        properties:
          port: {type: integer}
        interfaces:
          Standard:
            create:
              implementation: echo "listen {{ inputs.port }}"
              inputs:
                port: 80
    topology_template:
      node_templates:
        web:
          type: Web
          properties: {port: 8080}
          interfaces:
            Standard:
              create:
                inputs:
                  port: {get_property: [SELF, port]}
                  resultTemplate:
                    attributes:
                      said: "{{ stdout | trim }}"
"""


def test_a_template_that_gives_an_operation_inputs_keeps_its_types_implementation(
        project, invoke):
    project.write(REDECLARED)
    assert invoke("deploy", "--approve").exit_code == 0
    assert [r["operation"] for r in rows(project)] == ["create"]
    assert project.status()["web"]["attributes"]["said"] == "listen 8080"


CUSTOM_ONLY = HEAD + """\
    interface_types:
      Backup:
        derived_from: tosca.interfaces.Root
        operations:
          run_backup:
    node_types:
      Archive:
        derived_from: tosca:Root
        interfaces:
          Backup:
            type: Backup
            operations:
              run_backup: echo backup
          Install:
            check: echo checked
    topology_template:
      node_templates:
        archive:
          type: Archive
        app:
          type: tosca:Root
          interfaces:
            Standard:
              create: echo app
"""


def test_an_instance_of_only_custom_operations_is_the_sum_of_its_parts(project, invoke):
    project.write(CUSTOM_ONLY)
    assert invoke("deploy", "--approve").exit_code == 0
    archive = project.status()["archive"]["readyState"]
    assert archive == {"local": "pending", "effective": "ok"}


DEFAULT_EXPRESSION = HEAD + """\
    node_types:
      Site:
        derived_from: tosca:Root
        properties:
          domain: {type: string}
        attributes:
          url:
            type: string
            default: {concat: ["https://", {get_property: [SELF, domain]}, "/"]}
          unread:
            type: string
            default: {concat: ["x-", {get_property: [SELF, domain]}]}
        interfaces:
          Standard:
            configure: echo "{{ SELF.url }}"
    topology_template:
      node_templates:
        site:
          type: Site
          properties: {domain: example.org}
"""


def test_a_default_expression_a_task_read_is_recorded_and_one_nobody_read_is_not(
        project, invoke):
    project.write(DEFAULT_EXPRESSION)
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.status()["site"]["attributes"] == {"url": "https://example.org/"}


HOSTED = HEAD + """\
    topology_template:
      node_templates:
        server:
          type: tosca.nodes.Compute
          interfaces:
            Standard:
              create: echo server
              delete: echo "delete server"
        app:
          type: tosca.nodes.SoftwareComponent
          requirements:
            - host: server
          interfaces:
            Standard:
              create: echo app
              stop: echo "stop app"
              delete: exit 4
"""


def test_undeploy_stops_only_what_started_and_deletes_the_host_of_a_failed_delete(
        project, invoke):
    project.write(HOSTED)
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.state("app") == "created"
    start = len(project.jobs_tsv())
    invoke("undeploy", "--approve")
    ran = [(r["target"], r["operation"], r["status"]) for r in rows(project, start)]
    assert ran == [("::app", "delete", "error"), ("::server", "delete", "ok")]
    assert project.local("server") == "absent"
    assert project.state("app") == "deleting"


WAITS = HEAD + """\
    node_types:
      Disk:
        derived_from: tosca:Root
        attributes:
          address:
            type: string
            default: {eval: "::server::public_address"}
        interfaces:
          Standard:
            create: echo "disk at {{ SELF.address }}"
    topology_template:
      node_templates:
        server:
          type: tosca.nodes.Compute
          interfaces:
            Standard:
              create:
                implementation: echo server
                inputs:
                  resultTemplate:
                    readyState: error
                    attributes:
                      public_address: 10.1.2.3
        disk:
          type: Disk
"""


def test_a_task_that_waited_on_a_value_set_by_a_task_that_left_its_instance_in_error(
        project, invoke):
    """Unfurl renders it once the value is set (what it read and its digest recorded, its
    instance ``creating``), then cannot run it: "required dependencies not ready"."""
    project.write(WAITS)
    invoke("deploy", "--approve")
    disk = [r for r in rows(project) if r["target"] == "::disk"]
    assert [(r["operation"], r["status"]) for r in disk] == [("create", "error")]
    assert disk[0]["digestKeys"] == "command,::disk::address,::server::public_address"
    assert project.status()["disk"]["attributes"] == {"address": "10.1.2.3"}
    assert project.status()["disk"]["readyState"] == {"local": "pending", "state": "creating"}


OUTPUT_READS_DEFAULT = HEAD + """\
    node_types:
      App:
        derived_from: tosca:Root
        properties:
          region: {type: string}
        attributes:
          zone:
            type: string
            default: {concat: [{get_property: [SELF, region]}, "-a"]}
          untouched:
            type: string
            default: {concat: [{get_property: [SELF, region]}, "-b"]}
        interfaces:
          Standard:
            configure: echo configured
    topology_template:
      node_templates:
        app:
          type: App
          properties: {region: eu-west-1}
      outputs:
        zone:
          value: {get_attribute: [app, zone]}
"""


def test_an_attribute_default_an_output_read_is_recorded(project, invoke):
    """As Unfurl 1.2.0 (unfurl-cases 201): outputs are evaluated through the attribute
    manager the instances are saved from."""
    project.write(OUTPUT_READS_DEFAULT)
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.status()["app"]["attributes"] == {"zone": "eu-west-1-a"}


WORKFLOW = HEAD + """\
    topology_template:
      node_templates:
        db:
          type: tosca:Root
          interfaces:
            Standard:
              create: echo create
              configure: echo configure
      workflows:
        deploy:
          steps:
            first:
              target: db
              activities:
                - call_operation: Standard.create
              on_success: second
            second:
              target: db
              activities:
                - call_operation: Standard.configure
                - set_state: configured
"""


def test_a_workflow_settles_its_instance_at_its_last_operation(project, invoke):
    """As Unfurl 1.2.0 (unfurl-cases 244, 41): status, ``created`` and the summary's status
    come from the instance's last operation in the workflow, a set_state after it aside."""
    project.write(WORKFLOW)
    assert invoke("deploy", "--approve").exit_code == 0
    found = rows(project)
    assert [r["operation"] for r in found] == ["create", "configure"]
    assert "status pending" in found[0]["summary"] and "status ok" in found[1]["summary"]
    db = project.status()["db"]
    assert db["created"] == project.jobs_tsv()[2].split("\t")[0]
    assert db["readyState"] == {"local": "ok", "state": "configured"}
