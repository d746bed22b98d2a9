"""A step a job takes while git adds its records (the parse cache's copy of ensemble.yaml,
the journal forced to disk) that fails is reported once the commit is made: `git add` has
staged the records by then, and a commit left undone would leave them staged, to be taken
by the user's next commit under the user's message."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, git, shell_node
from unfurl_lite.record import statusfile


def test_a_failure_while_git_adds_still_commits_the_records_and_is_reported(
        project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    project.write(ensemble_yaml(shell_node("app", "true")))
    head = git(project.root, "rev-parse", "HEAD").strip()

    def fails(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(statusfile, "remember", fails)
    result = invoke("deploy", "--approve")
    assert result.exit_code != 0
    assert "No space left on device" in result.output
    assert git(project.root, "diff", "--cached", "--name-only").strip() == ""
    assert git(project.root, "rev-parse", "HEAD^").strip() == head
    committed = git(project.root, "show", "--name-only", "--format=", "HEAD").split()
    assert "jobs.tsv" in committed
