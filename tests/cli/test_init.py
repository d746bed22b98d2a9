"""``unfurl init`` as a new user runs it: bundled examples by name from any directory,
``--from PATH``, inside an existing repository, and without a git identity."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_in_process
from unfurl_lite.load import bundled

EXAMPLES = ("check-discover", "relationships", "scaled-web", "secrets", "three-tier")
IDENTITY = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"}


@pytest.fixture
def anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory far from the repository's examples/, with a git identity."""
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    work = tmp_path / "somewhere" / "else"
    work.mkdir(parents=True)
    return work


def test_init_from_a_bundled_example_by_name_works_from_any_directory(anywhere):
    created = run_in_process(anywhere, "init", "demo", "--from", "three-tier")
    assert created.returncode == 0, created.stderr
    assert (anywhere / "demo" / "types.yaml").exists()
    assert git(anywhere / "demo", "log", "--format=%s") == "Create ensemble\n"
    deployed = run_in_process(anywhere, "deploy", "--approve", "demo")
    assert deployed.returncode == 0, deployed.stderr
    assert git(anywhere / "demo", "status", "--porcelain") == ""  # the lock file is ignored


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_bundled_example_inits_and_validates(anywhere, name):
    assert run_in_process(anywhere, "init", name, "--from", name).returncode == 0
    assert run_in_process(anywhere / name, "validate").returncode == 0


def test_from_a_path_still_copies_that_directory(anywhere):
    source = anywhere / "mine"
    source.mkdir()
    (source / "ensemble.yaml").write_text((bundled.EXAMPLES / "secrets" / "ensemble.yaml")
                                          .read_text())
    (source / "notes.txt").write_text("mine\n")
    result = run_in_process(anywhere, "init", "copy", "--from", str(source))
    assert result.returncode == 0, result.stderr
    assert (anywhere / "copy" / "notes.txt").read_text() == "mine\n"
    relative = run_in_process(anywhere, "init", "copy2", "--from", "./mine")
    assert relative.returncode == 0, relative.stderr


def test_an_unknown_example_name_lists_the_bundled_ones(anywhere):
    result = run_in_process(anywhere, "init", "demo", "--from", "three-teir")
    assert result.returncode == 1
    for name in EXAMPLES:
        assert name in result.stderr
    assert "--list-examples" in result.stderr
    assert not (anywhere / "demo").exists()


def test_list_examples_names_each_with_what_it_shows(anywhere):
    result = run_in_process(anywhere, "init", "--list-examples")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(EXAMPLES)
    assert all(len(line.split()) > 3 for line in lines)


def test_init_inside_an_existing_repository_uses_it(anywhere):
    git(anywhere, "init", "-q", "-b", "main")
    git(anywhere, "commit", "-q", "--allow-empty", "-m", "mine")
    (anywhere / "unrelated.txt").write_text("not for the project's commit\n")
    result = run_in_process(anywhere, "init", "infra/demo", "--from", "secrets")
    assert result.returncode == 0, result.stderr
    assert not (anywhere / "infra" / "demo" / ".git").exists()  # no nested repository
    assert git(anywhere, "log", "--format=%s") == "Create ensemble\nmine\n"
    committed = git(anywhere, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == ["infra/demo/.gitignore", "infra/demo/ensemble.yaml"]
    assert "unrelated.txt" in git(anywhere, "status", "--porcelain")
    deployed = run_in_process(anywhere / "infra" / "demo", "deploy", "--approve")
    assert deployed.returncode == 0, deployed.stderr
    assert git(anywhere, "log", "-1", "--format=%s").startswith("Updating status for job")


def test_init_in_a_directory_the_repository_ignores_makes_its_own(anywhere):
    git(anywhere, "init", "-q", "-b", "main")
    (anywhere / ".gitignore").write_text("demo/\n")
    result = run_in_process(anywhere, "init", "demo", "--from", "three-tier")
    assert result.returncode == 0, result.stderr
    assert (anywhere / "demo" / ".git").is_dir()


def test_a_missing_git_identity_is_one_clear_error_before_anything_is_written(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tuseConfigOnly = true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", PYTHONPATH=str(ROOT))
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "unfurl_lite", "init", "demo", "--from",
                             "three-tier"], cwd=tmp_path, env=env, capture_output=True,
                            text=True)
    assert result.returncode == 1
    assert "git has no identity" in result.stderr and "git config --global" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "demo").exists()

    project = tmp_path / "project"  # a job: refused before any operation runs
    project.mkdir()
    git(project, "init", "-q")
    (project / "ensemble.yaml").write_text(
        (bundled.EXAMPLES / "three-tier" / "ensemble.yaml").read_text())
    (project / "types.yaml").write_text(
        (bundled.EXAMPLES / "three-tier" / "types.yaml").read_text())
    job = subprocess.run([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                         cwd=project, env=env, capture_output=True, text=True)
    assert job.returncode == 1, job.stderr
    assert "git has no identity" in job.stderr and "--no-commit" in job.stderr
    assert not (project / "state").exists() and not (project / "jobs.tsv").exists()


def test_the_package_ships_every_example_file():
    """The wheel's package-data globs cover unfurl_lite/examples (a non-editable install
    has no repository checkout to read them from)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["unfurl_lite"]
    package = ROOT / "unfurl_lite"
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    files = {p for p in (package / "examples").rglob("*") if p.is_file()
             and "__pycache__" not in p.parts}
    assert files and files <= shipped, sorted(str(p) for p in files - shipped)
    assert bundled.example_names() == list(EXAMPLES)
