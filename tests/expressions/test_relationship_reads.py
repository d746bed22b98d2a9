"""What a relationship operation and a task's after-run hooks read, digested as Unfurl
1.2.0 digests it (recorded with it: tests/data/unfurl-cases/198-test-plan-volume-attach-ok
and 206, 224): a relationship's own values are keyed by its source's ``.requirements``, the
task knows HOST, SELF, SOURCE and TARGET in that order whatever it reads first, an
attribute read and set to the value it had is no ``digestPut``, and an input is digested
when the resultTemplate reaches it, with what its expression reads."""

from __future__ import annotations

from tests.conftest import safe_load

ATTACH = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    relationship_types:
      Attach:
        derived_from: tosca.relationships.AttachesTo
        properties:
          location: {default: /mnt}
        interfaces:
          Configure:
            operations:
              post_configure_target: >-
                echo {{TARGET.vol}} {{SOURCE.public_address}} {{SELF.location}}
    node_types:
      Disk:
        derived_from: tosca.nodes.Storage.BlockStorage
        attributes:
          vol: {type: string, default: v0}
          kept: {type: string, default: same}
          src: {type: string, default: {eval: .sources::storage::public_address}}
    topology_template:
      node_templates:
        server:
          type: tosca.nodes.Compute
          properties: {name: server}
          requirements:
            - storage: {node: disk, relationship: {type: Attach}}
          interfaces:
            Standard:
              create:
                implementation: echo server
                inputs:
                  resultTemplate:
                    readyState: ok
                    attributes: {public_address: 10.0.0.1}
        disk:
          type: Disk
          properties: {name: disk, size: 1 GB}
          interfaces:
            Standard:
              create:
                implementation: echo {{ SELF.kept }} {{ SELF.src }}
                inputs:
                  resultTemplate:
                    readyState: ok
                    attributes: {kept: same, vol: v1, fresh: new}
"""


def rows(project) -> dict[str, dict[str, str]]:
    found = {}
    for line in project.jobs_tsv()[1:]:
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        found[f"{fields['target']}/{fields['operation']}"] = fields
    return found


def test_a_relationship_operation_keys_its_reads_as_unfurl(project, invoke):
    project.write(ATTACH)
    assert invoke("deploy", "--approve").exit_code == 0
    attach = rows(project)["::server::.requirements::[.name=storage]/post_configure_target"]
    # read TARGET, SOURCE, SELF; keyed SELF (the relationship), SOURCE, TARGET
    assert attach["digestKeys"].split(",") == [
        "command", "::server::.requirements::[.name=storage]::location",
        "::server::public_address", "::disk::vol"]


def test_an_attribute_read_then_set_to_its_value_is_no_digest_put(project, invoke):
    project.write(ATTACH)
    assert invoke("deploy", "--approve").exit_code == 0
    create = rows(project)["::disk/create"]
    assert create["digestKeys"] == "command,::disk::kept,::disk::src,::server::public_address"
    # kept: read and set to the same value (no change); vol: changed; fresh: never read
    assert set(create["digestPut"].split(",")) == {"::disk::vol", "::disk::fresh"}


AFTER_RUN = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Worded:
        derived_from: tosca.nodes.Root
        properties:
          word: {type: string, default: hello}
    topology_template:
      node_templates:
        t:
          type: Worded
          interfaces:
            Standard:
              create:
                implementation: Template
                inputs:
                  first: null
                  listed: {eval: .::word}
                  never: "{{ SELF.word }}"
                  resultTemplate:
                    attributes:
                      seen: "{{ inputs.listed }}"
                      bad: "{{ inputs.first[0] }}"
                      unreached: "{{ inputs.never }}"
"""


def test_an_input_is_digested_when_the_result_template_reaches_it(project, invoke):
    project.write(AFTER_RUN)
    assert invoke("deploy", "--approve").exit_code == 64
    create = rows(project)["::t/create"]
    # the inputs the run resolved (here: the resultTemplate), in declared order, then the
    # property `listed`'s query read; `first` fails the resultTemplate: `never` is not
    # reached, so not resolved, so not digested
    assert create["digestKeys"] == "first,listed,::t::word"
    assert create["status"] == "error"


RELATIVE = ATTACH.replace(
    "echo {{TARGET.vol}} {{SOURCE.public_address}} {{SELF.location}}",
    "echo {{ '.type' | eval }} {{ '.source::.name' | eval }} {{ '.target::.name' | eval }}"
    " {{ 'location' | eval }}")


def test_a_relationship_operations_relative_queries_start_at_its_relationship(
        project, invoke):
    """As Unfurl 1.2.0's task context (its relationship instance; probed with Unfurl:
    test_expressions_against_unfurl.test_relationship_contexts_give_unfurls_values)."""
    project.write(RELATIVE)
    assert invoke("deploy", "--approve").exit_code == 0
    (job_file,) = (project.root / "jobs").glob("job*.yaml")
    (attach,) = [c for c in safe_load(job_file.read_text())["changes"]
                 if (c.get("implementation") or {}).get("operation") == "post_configure_target"]
    assert attach["inputs"]["command"] == "echo Attach server disk /mnt"


def test_a_relationship_types_attribute_defaults_are_read_in_its_operations(project, invoke):
    # as Unfurl 1.2.0 reads them (tests/data/unfurl120/queries/relationships: `x`, `n` of
    # Mount): by get_attribute and a template on SELF, not by get_property (get_attribute
    # of SELF as an input's whole value is refused at load, as tosca-parser refuses it)
    project.write(ATTACH.replace("""        properties:
          location: {default: /mnt}
""", """        properties:
          location: {default: /mnt}
        attributes:
          x: {type: string, default: d}
""").replace(
        "              post_configure_target: >-\n"
        "                echo {{TARGET.vol}} {{SOURCE.public_address}} {{SELF.location}}",
        "              post_configure_target:\n"
        "                implementation: echo {{ SELF.x }}-{{ inputs.got }} > attached.txt\n"
        "                inputs: {got: {eval: {get_attribute: [SELF, x]}}}"))
    checked = invoke("validate")
    assert checked.exit_code == 0, checked.output
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert (project.root / "attached.txt").read_text() == "d-d\n"
