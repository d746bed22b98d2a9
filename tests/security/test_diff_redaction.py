"""``unfurl show CHANGEID`` and ``unfurl diff`` print git diffs of the ensemble; a secret
written in the spec must not appear there, in changed lines or in context lines, nor
in a version of the spec that has since changed."""

from __future__ import annotations

import json

from tests.conftest import ensemble_yaml

SPEC = """\
db:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation: Shell
        inputs:
          command: "true"
          password: {{eval: {{sensitive: {secret}}}}}
"""


def _job_ids(invoke) -> list[str]:
    return [j["changeId"] for j in json.loads(invoke("history", "--json").output)]


def test_show_redacts_a_sensitive_value_in_the_diff_context(project, invoke):
    project.write(ensemble_yaml(SPEC.format(secret="hunter2-secret")))
    assert invoke("deploy", "--approve").exit_code == 0
    (job,) = _job_ids(invoke)
    shown = invoke("show", job)
    assert shown.exit_code == 0, shown.output
    assert "password: {eval: {sensitive: <<REDACTED>>}}" in shown.output  # a context line
    assert "+status:" in shown.output
    assert "hunter2-secret" not in shown.output
    as_json = invoke("show", job, "--json").output
    assert "hunter2-secret" not in as_json and "<<REDACTED>>" in as_json


def test_diff_redacts_every_version_of_the_spec_it_shows(project, invoke):
    project.write(ensemble_yaml(SPEC.format(secret="hunter2-secret")))
    assert invoke("deploy", "--approve").exit_code == 0
    text = project.ensemble.read_text().replace("hunter2-secret", "rotated-secret-99")
    project.write(text)
    assert invoke("deploy", "--approve", "--force").exit_code == 0
    first, second = sorted(_job_ids(invoke))
    for args in ((first,), (second,), (first, second), (first, "now")):
        for extra in ((), ("--json",)):
            result = invoke("diff", *args, *extra)
            assert result.exit_code == 0, result.output
            assert "hunter2-secret" not in result.output, args
            assert "rotated-secret-99" not in result.output, args
    between = invoke("diff", first, second).output
    assert "-" in between and "<<REDACTED>>" in between
    for job in (first, second):
        shown = invoke("show", job).output
        assert "hunter2-secret" not in shown and "rotated-secret-99" not in shown


def test_a_sensitive_property_value_is_redacted_in_show(project, invoke):
    spec = ensemble_yaml("""\
    db:
      type: Database
      properties:
        admin_password: p4ssw0rd-in-spec
      interfaces:
        Standard:
          create: "true"
    """).replace("    topology_template:", """    node_types:
      Database:
        derived_from: tosca.nodes.Root
        properties:
          admin_password:
            type: string
            metadata: {sensitive: true}
    topology_template:""")
    project.write(spec)
    assert invoke("deploy", "--approve").exit_code == 0
    (job,) = _job_ids(invoke)
    for args in (("show", job), ("diff", job), ("show", job, "--json")):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        assert "p4ssw0rd-in-spec" not in result.output


def test_the_fallback_of_a_sensitive_inputs_get_env_is_redacted():
    from unfurl_lite.record.history import written_secrets

    text = ensemble_yaml(SPEC.format(secret="x")).replace("    topology_template:\n", """\
    topology_template:
      inputs:
        db_password:
          type: string
          metadata: {sensitive: true}
          default: {eval: {get_env: [DB_PASSWORD, fallback-pw-42]}}
""")
    found = written_secrets(text)
    assert "fallback-pw-42" in found and "DB_PASSWORD" not in found
