"""A mistyped name gets a "did you mean", as the README promises: an instance given to
`history --instance`, a template given to `scale`, an example given to `init --from`."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import InvokeIn, init_example


def test_history_of_a_mistyped_instance(invoke_in: InvokeIn, tmp_path: Path):
    root = init_example(invoke_in, tmp_path, "three-tier")
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    result = invoke_in(root, "history", "--instance", "wbe")
    assert result.exit_code == 1
    assert "no instance named 'wbe'" in result.output and "did you mean 'web'?" in result.output
    assert invoke_in(root, "history", "--instance", "web").exit_code == 0


def test_history_of_an_instance_not_deployed_yet_is_empty_not_an_error(invoke_in: InvokeIn,
                                                                      tmp_path: Path):
    root = init_example(invoke_in, tmp_path, "three-tier")
    result = invoke_in(root, "history", "--instance", "web")
    assert result.exit_code == 0 and "did you mean" not in result.output


def test_scale_of_a_mistyped_template(invoke_in: InvokeIn, tmp_path: Path):
    root = init_example(invoke_in, tmp_path, "scaled-web")
    result = invoke_in(root, "scale", "wbe", "--delta", "1", "--approve")
    assert result.exit_code == 1 and "did you mean 'web'?" in result.output
    nothing_close = invoke_in(root, "scale", "nosuch", "--delta", "1", "--approve")
    assert nothing_close.exit_code == 1
    assert "nothing to scale named 'nosuch'" in nothing_close.output
    assert "web" in nothing_close.output  # what could be scaled


def test_init_from_a_mistyped_example(invoke_in: InvokeIn, tmp_path: Path):
    result = invoke_in(tmp_path, "init", "x", "--from", "three-teir")
    assert result.exit_code == 1 and "did you mean 'three-tier'?" in result.output
    assert not (tmp_path / "x").exists()


def test_heal_and_execute_operation_of_mistyped_names(invoke_in: InvokeIn, tmp_path: Path):
    """Every command that takes an instance or a template by name says what was meant:
    heal's instance, execute-operation's `node_ids` and `node_instance_ids`, --instance."""
    root = init_example(invoke_in, tmp_path, "three-tier")
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    head = (root / "jobs.tsv").read_text()
    for args, said in (
            (("heal", "wbe"), "no instance named 'wbe'"),
            (("execute-operation", "Standard.configure", "-p", "node_ids=[wbe]"),
             "no node template named 'wbe'"),
            (("execute-operation", "Standard.configure", "-p", "node_instance_ids=[wbe]"),
             "no instance named 'wbe'"),
            (("deploy", "--instance", "wbe"), "no instance named 'wbe'")):
        result = invoke_in(root, *args, "--approve")
        assert result.exit_code == 1, result.output
        assert said in result.output and "did you mean 'web'?" in result.output, result.output
    assert (root / "jobs.tsv").read_text() == head  # nothing ran
