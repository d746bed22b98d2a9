"""jobs.tsv's digestPut: the attributes a task set, as Unfurl 1.2.0 records them
(tests/data/unfurl-cases/21-resulttemplate-stdout/expected/deploy.jobs.tsv)."""

from __future__ import annotations

from tests.conftest import ensemble_yaml

PROBE = ensemble_yaml("""\
probe:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation: {className: Shell}
        inputs:
          command: "printf '  42  '"
          resultTemplate: |
            - name: SELF
              attributes:
                answer: "{{ stdout | trim }}"
                rc: "{{ returncode }}"
      configure: echo nothing set
""")


def test_digest_put_names_the_attributes_the_task_set(project, invoke):
    project.write(PROBE)
    assert invoke("deploy", "--approve").exit_code == 0
    rows = {line.split("operation=")[1].split("\t")[0]: line for line in project.jobs_tsv()[1:]}
    put = rows["create"].split("digestPut=")[1].split("\t")[0]
    assert set(put.split(",")) == {"::probe::answer", "::probe::rc"}
    assert "\tdigestPut=\t" in rows["configure"]
