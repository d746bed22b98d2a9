"""What the terminal shows: one JSON document per --json command, colour only on a terminal
and never with NO_COLOR or in files, and shell completion installed where shells look."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    ROOT,
    Project,
    copy_prepared,
    ensemble_yaml,
    git,
    module_project,
    run_in_process,
    run_unfurl,
)
from unfurl_lite.cli.main import COMMANDS
from unfurl_lite.cli.terminal import STYLE_ESCAPE

THREE_TIER = ROOT / "examples" / "three-tier"

# every command, the arguments that make it do its real work, and whether the project is
# deployed first; `worker` is a long-running server and prints no result
NO_RESULT = {"worker", "serve"}  # servers: they run until stopped, with no result to print
JSON_CASES: dict[str, tuple[list[str], bool]] = {
    "init": (["init", "another"], False),
    "validate": (["validate"], False),
    "plan": (["plan"], False),
    "deploy": (["deploy", "--approve"], False),
    "install": (["install", "--approve"], False),
    "undeploy": (["undeploy", "--approve"], True),
    "teardown": (["teardown", "--approve"], True),
    "uninstall": (["uninstall", "--approve"], True),
    "check": (["check"], True),
    "discover": (["discover"], True),
    "run": (["run", "--approve", "--json", "--", "echo", "hello"], True),
    "execute-operation": (["execute-operation", "Install.check", "--approve"], True),
    "start": (["start", "--approve"], True),
    "stop": (["stop", "--approve"], True),
    "restart": (["restart", "--approve"], True),
    "heal": (["heal", "--approve"], True),
    "scale": (["scale", "web", "--approve"], True),
    "update": (["update", "--approve"], True),
    "install-new-agents": (["install-new-agents", "--approve"], True),  # no agents: nothing
    "status": (["status"], True),
    "history": (["history"], True),
    "show": (["show", "{job}"], True),
    "diff": (["diff", "{job}"], True),
    "resume": (["resume"], False),  # after a failed deploy, see below
    "cancel": (["cancel"], True),  # no job is running: the error is the document
    "agents": (["agents", "--broker", "redis://127.0.0.1:1/0"], False),  # no broker: error
    "version": (["version"], False),
    "export": (["export"], False),
    "completion": (["completion", "zsh"], False),
    "graph": (["graph", "--instances"], True),
}


def copy_example(project: Project) -> None:
    shutil.copytree(THREE_TIER, project.root, dirs_exist_ok=True)
    git(project.root, "add", ".")
    git(project.root, "commit", "-q", "-m", "three-tier")


@pytest.fixture(scope="module")
def deployed_example(tmp_path_factory: pytest.TempPathFactory, template_repo: Path) -> Path:
    """The three-tier example deployed once: the tests that start from a deployed project
    each take a copy (the deploy itself is what ``deploy``'s own case checks)."""
    prepared = module_project(tmp_path_factory, template_repo)
    copy_example(prepared)
    result = run_in_process(prepared.root, "deploy", "--approve")
    assert result.returncode == 0, result.stderr
    return prepared.root


def test_every_command_is_covered_by_the_json_test():
    assert set(COMMANDS) - NO_RESULT == set(JSON_CASES)


@pytest.mark.parametrize("name", sorted(JSON_CASES))
def test_json_prints_one_document_and_nothing_else(project, invoke, name, request):
    args, deployed_first = JSON_CASES[name]
    if deployed_first:
        copy_prepared(request.getfixturevalue("deployed_example"), project)
    else:
        copy_example(project)
    if name == "resume":
        (project.root / "state" / "app").mkdir(parents=True)  # makes app's create fail
        assert invoke("deploy", "--approve").exit_code == 64
        (project.root / "state" / "app").rmdir()
    job = project.jobs_tsv()[-1].split("\t")[0] if project.jobs_tsv() else ""
    args = [a.replace("{job}", job) for a in args]
    if "--json" not in args:
        args.append("--json")
    result = invoke(*args)
    document = json.loads(result.stdout)  # the whole of stdout is one JSON document
    assert isinstance(document, dict | list)
    if result.exit_code not in (0, 64):
        assert name in ("cancel", "agents") and document["error"] and document["exitCode"] == 1
    if name == "resume":
        assert result.exit_code == 0 and document["status"] == "ok"
        assert {t["target"] for t in document["tasks"]} >= {"app", "web"}
    if name in ("deploy", "undeploy", "check"):
        assert document["changeId"].startswith("A") and document["tasks"]


def test_a_bad_ensemble_with_json_is_a_json_error(project, invoke):
    project.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec: [1, 2\n")
    result = invoke("plan", "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["exitCode"] == 1 and document["problems"][0]["line"]


# ------------------------------------------------------------------------------ colour


def run_on_terminal(cwd: Path, *args: str, env: dict[str, str]) -> str:
    """Run unfurl with a pseudo-terminal as stdin, stdout and stderr, as a person would."""
    import pty

    leader, follower = pty.openpty()
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    process = subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", *args],
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**base, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "100",
             **env},
        close_fds=True,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode(errors="replace")


@pytest.fixture
def example(project: Project) -> Project:
    copy_example(project)
    return project


@pytest.mark.slow
def test_colour_on_a_terminal_and_none_with_no_color_even_when_forced(example):
    coloured = run_on_terminal(example.root, "plan", env={})
    assert STYLE_ESCAPE.search(coloured), "a terminal should get styles (else this test is moot)"
    for env, flags in (
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, []),
        ({"NO_COLOR": "yes"}, []),
        ({"FORCE_COLOR": "1"}, ["--no-color"]),
    ):
        plan = run_on_terminal(example.root, *flags, "plan", env=env)
        assert "Plan for deploy" in plan and "\x1b" not in plan
        deploy = run_on_terminal(example.root, *flags, "deploy", "--approve", env=env)
        assert "deploy succeeded" in deploy
        # the live progress bar still moves the cursor, but nothing is coloured or styled
        assert not STYLE_ESCAPE.search(deploy)
        status = run_on_terminal(example.root, *flags, "status", env=env)
        assert "web " in status and "Last job" in status and "\x1b" not in status
        run_on_terminal(example.root, *flags, "undeploy", "--approve", env=env)


def test_no_escapes_through_a_pipe_even_with_force_color(example):
    """The deploy through a real pipe; the rest through the entry point in this process,
    whose output is no terminal either (colour is decided per command, from isatty)."""
    env = {"FORCE_COLOR": "1", "TERM": "xterm-256color"}
    for args in (["plan"], ["deploy", "--approve"], ["status"], ["history"], ["check"]):
        run = run_unfurl if args[0] == "deploy" else run_in_process
        result = run(example.root, *args, env=env)
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout + result.stderr, args


@pytest.mark.slow
def test_job_records_never_hold_escapes(project):
    project.write(ensemble_yaml(r"""
painter:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      operations:
        create: printf '\033[31mred\033[0m \033]8;;http://x\007link\033]8;;\007\n'
"""))
    shown = run_on_terminal(project.root, "deploy", "--approve", env={"FORCE_COLOR": "1"})
    assert "deploy succeeded" in shown
    written = [p for p in project.root.rglob("*") if p.is_file() and ".git" not in p.parts]
    assert any(p.parent.name == "jobs" for p in written)
    for path in written:
        assert "\x1b" not in path.read_text(errors="replace"), path
    job_files = [p.read_text() for p in written if p.parent.name == "jobs"]
    assert any("red link" in text for text in job_files)
    assert "\x1b" not in git(project.root, "log", "-p")


# -------------------------------------------------------------------------- completion


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_completion_install_detects_the_shell_and_is_idempotent(invoke, home, monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/bash")
    (home / ".bashrc").write_text("alias ll='ls -l'")  # no final newline
    first = invoke("completion", "--install")
    assert first.exit_code == 0 and "Added bash completion to" in first.stdout
    line = 'eval "$(_UNFURL_COMPLETE=bash_source unfurl)"'
    assert line in first.stdout
    again = invoke("completion", "--install")
    assert again.exit_code == 0 and "already installed" in again.stdout
    text = (home / ".bashrc").read_text()
    assert text.startswith("alias ll='ls -l'\n") and text.count(line) == 1


@pytest.mark.parametrize(
    ("shell", "path", "line"),
    [
        ("zsh", ".zshrc", 'eval "$(_UNFURL_COMPLETE=zsh_source unfurl)"'),
        ("fish", ".config/fish/completions/unfurl.fish",
         "_UNFURL_COMPLETE=fish_source unfurl | source"),
    ],
)
def test_completion_install_for_zsh_and_fish(invoke, home, monkeypatch, shell, path, line):
    monkeypatch.setenv("SHELL", f"/usr/bin/{shell}")
    result = invoke("completion", "--install", "--json")
    assert json.loads(result.stdout) == {
        "shell": shell, "file": str(home / path), "changed": True
    }
    assert line in (home / path).read_text().splitlines()
    assert json.loads(invoke("completion", shell, "--install", "--json").stdout)["changed"] is False


def test_install_completion_as_a_global_option(invoke, home, monkeypatch):
    """`unfurl --install-completion` / `--show-completion`, as typer-built CLIs spell it."""
    monkeypatch.setenv("SHELL", "/bin/zsh")
    installed = invoke("--install-completion")
    assert installed.exit_code == 0 and "Added zsh completion to" in installed.stdout
    assert 'eval "$(_UNFURL_COMPLETE=zsh_source unfurl)"' in (home / ".zshrc").read_text()
    shown = invoke("--show-completion")
    assert shown.exit_code == 0 and "compdef" in shown.stdout  # zsh's script


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_installed_bash_completion_registers_in_a_new_shell(invoke, home, monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/bash")
    assert invoke("completion", "--install").exit_code == 0
    scripts = str(Path(sys.executable).parent)
    if shutil.which("unfurl", path=scripts) is None:
        pytest.skip("the unfurl script is not installed next to this python")
    shell = subprocess.run(
        ["bash", "-c", 'source "$HOME/.bashrc" && complete -p unfurl'],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "HOME": str(home), "PATH": f"{scripts}:{os.environ['PATH']}"},
    )
    assert shell.returncode == 0, shell.stderr
    assert "_unfurl_completion" in shell.stdout


def test_cloudify_workflows_refuse_instance_instead_of_ignoring_it(example, invoke):
    result = invoke("start", "--approve", "--instance", "web")
    assert result.exit_code != 0 and "--node-instance-ids" in result.output
    result = invoke("scale", "web", "--approve", "-i", "web")
    assert result.exit_code != 0 and "--instance does not apply to scale" in result.output
