"""``get_ensemble_metadata`` as Unfurl 1.2.0 gives it (its docs' example, recorded in
tests/data/unfurl-cases/80-docs-get-ensemble-metadata): the deployment is the folder holding
the ensemble, the job its changeId, ``unfurlproject`` the repository's remote path (else its
folder's) and ``revision`` HEAD's first eight digits, in a task and in the outputs."""

from __future__ import annotations

import pytest

from tests.conftest import ensemble_yaml, git
from unfurl_lite.run.metadata import project_path

SPEC = ensemble_yaml("""\
app:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      configure:
        implementation: Template
        inputs:
          resultTemplate:
            attributes:
              seen: "{{ __unfurl.get_ensemble_metadata() }}"
""").replace("      node_templates:\n", """\
      outputs:
        deployment: {value: {eval: {get_ensemble_metadata: deployment}}}
        job: {value: {eval: {get_ensemble_metadata: job}}}
        all: {value: {eval: {get_ensemble_metadata: }}}
        nope: {value: {eval: {get_ensemble_metadata: nope}}}
      node_templates:
""")


def test_metadata_names_the_deployment_job_project_and_revision(project, invoke):
    project.write(SPEC)
    start = git(project.root, "rev-parse", "HEAD").strip()
    git(project.root, "remote", "add", "origin", "https://example.com/org/proj.git")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    from tests.conftest import safe_load

    document = safe_load(project.ensemble.read_text())
    outputs = document["status"]["outputs"]
    job = document["lastJob"]["changeId"]
    assert outputs["deployment"] == project.root.name
    assert outputs["job"] == job
    assert outputs["nope"] == ""
    expected = {"deployment": project.root.name, "job": job, "unfurlproject": "org/proj",
                "revision": start[:8]}
    assert outputs["all"] == expected
    assert project.status()["app"]["attributes"]["seen"] == expected


def test_without_a_remote_the_project_is_the_repositorys_folder(project, invoke):
    project.write(SPEC)
    assert invoke("deploy", "--approve").exit_code == 0
    from tests.conftest import safe_load

    outputs = safe_load(project.ensemble.read_text())["status"]["outputs"]
    assert outputs["all"]["unfurlproject"] == str(project.root.resolve()).lstrip("/")


@pytest.mark.parametrize(("url", "name"), [
    ("https://github.com/onecommons/unfurl.git", "onecommons/unfurl"),
    ("https://user:token@example.com/a/b/c.git", "a/b/c"),
    ("/tmp/x/my.project", "tmp/x/my"),  # Unfurl drops what looks like an extension
    ("file:///srv/repos/site", "srv/repos/site"),
    ("git-local://0cfeee65:spec", ":"),
    ("https://example.com", "example.com"),
])
def test_project_path_is_unfurls(url, name):
    assert project_path(url) == name


def test_an_operation_reads_nodes_and_root_as_unfurls_context_vars(project, invoke):
    """Unfurl's set_context_vars gives every operation NODES, ROOT and TOPOLOGY."""
    project.write(ensemble_yaml("""\
db:
  type: tosca.nodes.Root
  properties:
    port: 5432
app:
  type: tosca.nodes.Root
  requirements:
    - dependency: db
  interfaces:
    Standard:
      configure:
        implementation: Template
        inputs:
          run: "{{ NODES.db.port }}"
          resultTemplate:
            attributes:
              port: "{{ NODES.db.port + 1 }}"
              root: "{{ ROOT.inputs | length }}"
"""))
    assert invoke("validate").exit_code == 0
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["app"]["attributes"] == {"port": 5433, "root": 0}
