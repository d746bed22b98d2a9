"""The ``unfurl`` process ends without tearing its heap down (``cli._exit_now``): what
the interpreter's own exit would do that a user can see still happens — every line of
output, the exit code, the exit functions (temporary files an expression made)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ensemble_yaml, git, run_unfurl, shell_node


def _project(root: Path, nodes: str) -> Path:
    root.mkdir()
    (root / "ensemble.yaml").write_text(ensemble_yaml(nodes))
    git(root, "init", "-q")
    return root


def test_temporary_files_are_removed_when_the_command_ends(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    node = shell_node("n", 'test "$(cat {{ inputs.f }})" = hello', "f: {eval: {tempfile: hello}}")
    root = _project(tmp_path / "p", node)
    result = run_unfurl(root, "deploy", "--approve", "--dirty=ok", "--no-commit",
                        env={"TMPDIR": str(temp)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 ok" in result.stdout
    assert list(temp.iterdir()) == []  # the folder tempfile made while the job ran


def test_a_failed_job_keeps_its_exit_code_and_its_output(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", shell_node("a", "exit 3") + shell_node("b", "exit 0"))
    result = run_unfurl(root, "deploy", "--approve", "--dirty=ok", "--no-commit",
                        "--jobexitcode", "error")
    assert result.returncode == 64, result.stdout + result.stderr
    assert any(line.startswith("2 tasks: 1 ok, 1 failed") for line in result.stdout.splitlines())
