from tests.conftest import REFERENCE, ROOT


def test_reference_deploy_then_nothing_to_do(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.local("db") == "ok" and project.state("app") == "configured"
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0
    assert "Nothing to do" in again.output
    assert project.commits()[0].startswith("Updating status for job A")
    assert len(project.commits()) == 3  # init, write, one job


def test_unknown_instance_is_a_clear_error(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    result = invoke("deploy", "--approve", "--instance", "dbb")
    assert result.exit_code == 1
    assert "no instance named 'dbb'" in result.output and "did you mean 'db'" in result.output


def test_shell_completion_offers_instance_names(project, monkeypatch, capsys):
    from click.shell_completion import ShellComplete

    from unfurl_lite.cli.main import cli

    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    monkeypatch.chdir(project.root)
    complete = ShellComplete(cli, {}, "unfurl", "_UNFURL_COMPLETE")
    assert [c.value for c in complete.get_completions(["deploy", "--instance"], "")] == [
        "app",
        "db",
    ]
    assert [c.value for c in complete.get_completions(["plan", "-i"], "a")] == ["app"]
    assert [c.value for c in complete.get_completions([], "undep")] == ["undeploy"]


def test_unknown_command_and_option_suggest_the_right_one(invoke):
    result = invoke("deploi")
    assert result.exit_code != 0 and "Did you mean 'deploy'?" in result.output
    result = invoke("deploy", "--aprove")
    assert result.exit_code != 0 and "Did you mean" in result.output
    assert "'--approve'" in result.output


def test_version_prints_version(invoke):
    from unfurl_lite import __version__

    result = invoke("--version")
    assert result.exit_code == 0 and result.output.startswith(f"unfurl-lite {__version__}")


def test_quiet_prints_only_the_result(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    result = invoke("deploy", "--approve", "-q")
    assert result.exit_code == 0
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("Job A") and "deploy succeeded" in lines[0]
    assert len(lines) == 3 and lines[2].startswith("committed ")
    assert lines[1] == "2 tasks: 2 ok, 0 failed, 0 blocked, 0 cancelled, 0 skipped, 0 not run"
    assert invoke("deploy", "--approve", "--quiet").output == ""


def test_version_commit_is_read_from_packed_refs_and_worktrees(tmp_path):
    """`--version` names the checkout's commit however git stores it."""
    from pathlib import Path

    from tests.conftest import git
    from unfurl_lite.cli.version import _source_commit

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=T",
        "commit", "-q", "--allow-empty", "-m", "one")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert _source_commit(str(repo)) == head
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert _source_commit(str(repo)) == head
    git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"))
    assert Path(tmp_path / "wt" / ".git").is_file()
    assert _source_commit(str(tmp_path / "wt")) == head


def test_version_and_help_import_none_of_the_heavy_libraries():
    """Issue 10: `--version` and `--help` start fast because nothing heavy is imported."""
    import subprocess
    import sys

    heavy = ("git", "jinja2", "celery", "rich", "ruamel.yaml", "jsonschema")
    # the console script's entry point; --version is answered before click is imported
    for flag, unloaded in (("--version", (*heavy, "click")), ("--help", heavy)):
        code = (
            "import sys\nfrom unfurl_lite.cli import main\n"
            f"try:\n    main([{flag!r}])\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in {unloaded!r} if m in sys.modules))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        assert "LOADED []" in out, out
        assert flag != "--version" or out.startswith("unfurl-lite "), out


def test_the_version_is_the_package_metadatas(tmp_path):
    """``__version__`` is the installed metadata's (or, in a checkout, pyproject's)."""
    import shutil
    import subprocess
    import sys
    import tomllib

    import unfurl_lite

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert unfurl_lite.__version__ == pyproject["project"]["version"]
    package = tmp_path / "installed" / "unfurl_lite"
    package.mkdir(parents=True)
    shutil.copy(ROOT / "unfurl_lite" / "__init__.py", package / "__init__.py")
    (tmp_path / "site" / "unfurl_lite-9.8.7.dist-info").mkdir(parents=True)
    code = (f"import sys; sys.path[:0] = [{str(package.parent)!r}, {str(tmp_path / 'site')!r}]; "
            "import unfurl_lite; print(unfurl_lite.__version__)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=tmp_path)
    assert shown.stdout.strip() == "9.8.7"
