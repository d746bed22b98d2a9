"""The exit codes scripts rely on: 0 done, 1 invalid input or refused, 2 usage error,
64 job failed (``--jobexitcode``). The codes come from the console script's own entry point
(``run_in_process`` runs what ``python -m unfurl_lite`` runs, in this process); a real
process, as a script starts it, checks that the code reaches the shell (a usage error, and
the approval prompt on a terminal)."""

from __future__ import annotations

import os
import pty
import sys

from tests.conftest import ROOT, ensemble_yaml, run_in_process, run_unfurl, shell_node


def test_a_misspelled_command_or_option_exits_2(project):
    project.write(ensemble_yaml(shell_node("db", "true")))
    command = run_unfurl(project.root, "deplyo")
    assert command.returncode == 2, command.stderr
    assert "Did you mean 'deploy'?" in command.stderr
    option = run_in_process(project.root, "deploy", "--aprove")
    assert option.returncode == 2, option.stderr
    assert "No such option" in option.stderr
    choice = run_in_process(project.root, "deploy", "--jobexitcode", "sometimes")
    assert choice.returncode == 2


def test_an_invalid_document_still_exits_1(project):
    project.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec: [\n")
    result = run_in_process(project.root, "validate")
    assert result.returncode == 1


def _answer_prompt(cwd, answer: bytes, *args: str) -> tuple[int, str]:
    """Run unfurl on a pseudo-terminal and type ``answer`` at the approval prompt."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a user's shell session
        os.chdir(cwd)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.environ["NO_COLOR"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "unfurl_lite", *args])
    output, answered = b"", False
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        output += data
        if not answered and b"Run this job?" in output:
            os.write(fd, answer)
            answered = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def test_answering_no_at_the_approval_prompt_exits_1(project):
    project.write(ensemble_yaml(shell_node("db", "touch created")))
    code, output = _answer_prompt(project.root, b"n\n", "deploy")
    assert "Run this job?" in output
    assert code == 1, output
    assert "Cancelled: nothing was run." in output
    assert not (project.root / "created").exists()
    code, output = _answer_prompt(project.root, b"y\n", "deploy")
    assert code == 0, output
    assert (project.root / "created").exists()


CHECKED = """\
server:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: "true"
    Install:
      check:
        implementation: Shell
        inputs:
          command: "true"
          done:
            status: {found}
"""


def test_a_check_that_finds_an_error_exits_per_jobexitcode(project):
    project.write(ensemble_yaml(CHECKED.format(found="error")))
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0  # set-up
    result = run_in_process(project.root, "check")
    assert result.returncode == 64, result.stdout + result.stderr
    assert "check succeeded" not in result.stdout
    assert "(status error)" in result.stdout
    assert "server Install.check: found error" in result.stdout
    assert run_in_process(project.root, "check", "--jobexitcode", "never").returncode == 0


def test_a_check_that_finds_degraded_exits_64_only_with_jobexitcode_degraded(project):
    project.write(ensemble_yaml(CHECKED.format(found="degraded")))
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0  # set-up
    result = run_in_process(project.root, "check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(status degraded)" in result.stdout
    assert run_in_process(project.root, "check", "--jobexitcode", "degraded").returncode == 64


def test_a_check_that_finds_ok_exits_0(project):
    project.write(ensemble_yaml(CHECKED.format(found="ok")))
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0  # set-up
    result = run_in_process(project.root, "check", "--jobexitcode", "degraded")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "check succeeded (status ok)" in result.stdout


def test_a_usage_error_with_json_is_a_document_with_exit_code_2(project):
    import json

    project.write(ensemble_yaml(shell_node("db", "true")))
    result = run_in_process(project.root, "deploy", "--aprove", "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["exitCode"] == 2
