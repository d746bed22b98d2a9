"""Operations get an allow-listed environment; a list command runs without a shell."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, shell_node

ENSEMBLE = ensemble_yaml(shell_node("app", "%s", "env: {DECLARED: declared-value}"))


def _stdout(project: Project) -> str:
    job = sorted((project.root / "jobs").glob("job2*.yaml"))[-1].read_text()
    return job


@pytest.fixture
def leaky_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-only-value")


def test_env_is_an_allow_list_plus_declared(
    project: Project, invoke: Invoke, leaky_env: None
) -> None:
    project.write(ENSEMBLE % '["sh", "-c", "echo aws=${AWS_SECRET_ACCESS_KEY}-d=$DECLARED"]')
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "aws=-d=declared-value" in _stdout(project)


def test_env_passthrough_gives_the_whole_environment(
    project: Project, invoke: Invoke, leaky_env: None
) -> None:
    project.write(ENSEMBLE % '["sh", "-c", "echo aws=${AWS_SECRET_ACCESS_KEY}"]')
    result = invoke("deploy", "--approve", "--env-passthrough")
    assert result.exit_code == 0, result.output
    assert "aws=parent-only-value" in _stdout(project)


def test_list_command_is_not_interpreted_by_a_shell(project: Project, invoke: Invoke) -> None:
    project.write(ENSEMBLE % '["echo", "$HOME; touch pwned"]')
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "$HOME; touch pwned" in _stdout(project)
    assert not (project.root / "pwned").exists()


def test_string_command_runs_with_sh(project: Project, invoke: Invoke) -> None:
    project.write(ENSEMBLE % '"echo one && echo two"')
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert 'stdout: "one\\ntwo\\n"' in _stdout(project)
