"""--dirty=auto: a job's commit takes along the ensemble's own edited spec files (an
``+include``d file, a TOSCA ``imports:`` file, however deep), new ones too; any other
uncommitted change still stops the job before anything runs."""

from __future__ import annotations

import pytest

from tests.conftest import InvokeIn, Project, git

TYPES = """\
node_types:
  Svc:
    derived_from: tosca.nodes.Root
    interfaces:
      Standard:
        operations:
          create:
            implementation: {{className: Shell}}
            inputs: {{command: "echo {word}"}}
"""

ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    {how}
    topology_template:
      node_templates:
        a: {{type: Svc}}
"""


def _project(project: Project, how: str, files: dict[str, str]) -> Project:
    for name, text in files.items():
        project.write(text, name)
    project.write(ENSEMBLE.format(how=how))
    return project


def _changed_in_head(project: Project) -> set[str]:
    return set(git(project.root, "show", "--name-only", "--format=", "HEAD").split())


def _edit(project: Project, name: str, old: str, new: str) -> None:
    path = project.root / name
    path.write_text(path.read_text().replace(old, new))


@pytest.mark.parametrize("how, name, files", [
    ("+include: types.yaml", "types.yaml", {"types.yaml": TYPES.format(word="one")}),
    ("imports: [lib/types.yaml]", "lib/types.yaml", {"lib/types.yaml": TYPES.format(word="one")}),
    ("+include: outer.yaml", "inner.yaml",  # an include inside an include
     {"inner.yaml": TYPES.format(word="one"), "outer.yaml": "+include: inner.yaml\n"}),
])
def test_an_edited_spec_file_is_committed_with_the_job(project: Project, invoke_in: InvokeIn,
                                                      how: str, name: str,
                                                      files: dict[str, str]):
    _project(project, how, files)
    assert invoke_in(project.root, "deploy", "--approve").exit_code == 0
    _edit(project, name, "echo one", "echo two")
    result = invoke_in(project.root, "deploy", "--approve", "--force")
    assert result.exit_code == 0, result.output
    assert name in _changed_in_head(project)  # the job's own commit took it along
    assert git(project.root, "status", "--porcelain") == ""
    assert "two" in git(project.root, "show", f"HEAD:{name}")


def test_a_new_included_file_is_committed_with_the_job(project: Project, invoke_in: InvokeIn):
    _project(project, "+include: types.yaml", {"types.yaml": TYPES.format(word="one")})
    assert invoke_in(project.root, "deploy", "--approve").exit_code == 0
    (project.root / "more.yaml").write_text("b: {type: Svc}\n")  # not in git yet
    _edit(project, "ensemble.yaml", "a: {type: Svc}", "a: {type: Svc}\n        +include: more.yaml")
    result = invoke_in(project.root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert {"more.yaml", "ensemble.yaml"} <= _changed_in_head(project)
    assert git(project.root, "status", "--porcelain") == ""


def test_any_other_uncommitted_change_still_stops_the_job(project: Project,
                                                          invoke_in: InvokeIn):
    _project(project, "+include: types.yaml", {"types.yaml": TYPES.format(word="one"),
                                               "notes.txt": "todo\n"})
    _edit(project, "types.yaml", "echo one", "echo two")
    _edit(project, "notes.txt", "todo", "done")
    head = git(project.root, "rev-parse", "HEAD")
    result = invoke_in(project.root, "deploy", "--approve")
    assert result.exit_code == 1
    assert "uncommitted changes: notes.txt" in result.output
    assert "types.yaml" not in result.output.split("hint")[0]  # the spec file is not blamed
    assert git(project.root, "rev-parse", "HEAD") == head  # nothing ran, nothing recorded
    assert not (project.root / "jobs.tsv").exists()


def test_abort_stops_on_an_edited_spec_file_and_ok_leaves_it_uncommitted(
        project: Project, invoke_in: InvokeIn):
    _project(project, "+include: types.yaml", {"types.yaml": TYPES.format(word="one")})
    _edit(project, "types.yaml", "echo one", "echo two")
    refused = invoke_in(project.root, "deploy", "--approve", "--dirty=abort")
    assert refused.exit_code == 1 and "uncommitted changes: types.yaml" in refused.output
    assert invoke_in(project.root, "deploy", "--approve", "--dirty=ok").exit_code == 0
    assert "types.yaml" not in _changed_in_head(project)
    assert git(project.root, "status", "--porcelain").split() == ["M", "types.yaml"]


def test_records_left_uncommitted_are_committed_and_the_rest_still_judged(
        project: Project, invoke_in: InvokeIn):
    """A job after the first reads one `git status` for both questions: the records an
    earlier job left (--no-commit) are committed in a commit of their own and blamed for
    nothing; a user's edit still stops the job; the ensemble that job wrote goes with
    the next job's commit."""
    _project(project, "+include: types.yaml", {"types.yaml": TYPES.format(word="one"),
                                               "notes.txt": "todo\n"})
    assert invoke_in(project.root, "deploy", "--approve").exit_code == 0
    assert invoke_in(project.root, "deploy", "--approve", "--force", "--no-commit"
                     ).exit_code == 0
    left = git(project.root, "status", "--porcelain", "--untracked-files=all")
    assert "jobs.tsv" in left and "?? jobs/" in left
    _edit(project, "notes.txt", "todo", "done")
    refused = invoke_in(project.root, "deploy", "--approve", "--force")
    assert refused.exit_code == 1
    assert "uncommitted changes: notes.txt" in refused.output
    assert "jobs" not in refused.output.split("hint")[0]
    assert project.commits()[0].startswith("Recording what job")
    git(project.root, "checkout", "notes.txt")
    assert invoke_in(project.root, "deploy", "--approve", "--force").exit_code == 0
    assert git(project.root, "status", "--porcelain", "--untracked-files=all") == ""
