"""The Shell operation's ``shell`` and ``keeplines`` inputs, as Unfurl 1.2.0's Shell
configurator reads them: a string command's lines are joined with spaces unless
``keeplines``; ``shell: false`` splits a string and runs it without a shell; ``shell:
true`` joins a list into one command line; a string ``shell`` is the shell to use. The
expected attributes and digests are what Unfurl 1.2.0 wrote for the same ensemble
(tests/data/unfurl120/shell-inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples, safe_load
from unfurl_lite.run.operations.shell import process_args

UNFURL = Path(__file__).parent.parent / "data" / "unfurl120" / "shell-inputs"


def _rows(text: str) -> dict[str, dict[str, str]]:
    rows = (dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            for line in text.splitlines())
    return {row["target"]: row for row in rows if "target" in row}


def test_shell_and_keeplines_run_as_in_unfurl(project, invoke):
    project.write((UNFURL / "ensemble.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    theirs = safe_load((UNFURL / "deployed.ensemble.yaml").read_text())["status"]["instances"]
    ours = project.status()
    for name in ("folded", "noshell", "listshell", "bash"):
        assert ours[name]["attributes"] == theirs[name]["attributes"], name
    assert ours["folded"]["attributes"] == {"out": "one echo two"}
    assert ours["bash"]["attributes"] == {"out": "3 /bin/bash"}
    their_rows = _rows((UNFURL / "deploy.jobs.tsv").read_text())
    for target, row in _rows("\n".join(project.jobs_tsv())).items():
        assert (row["digestKeys"], row["digestValue"]) == (
            their_rows[target]["digestKeys"], their_rows[target]["digestValue"]), target


def test_an_unclosed_quote_without_a_shell_fails_the_task(project, invoke):
    project.write((UNFURL / "ensemble.yaml").read_text().replace(
        """echo "$HOME" 'a  b' | cat""", """echo "unclosed"""))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64  # the job ran; the task failed
    assert "could not split the command" in result.output
    assert project.local("noshell") != "ok"


words = st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1),
                 min_size=1, max_size=4)


@settings(max_examples=examples(60))
@given(words, st.sampled_from([None, False, True, "/bin/bash"]), st.booleans())
def test_a_list_without_a_shell_is_run_as_given(argv, shell, keeplines):
    args, executable = process_args(argv, shell, keeplines)
    if shell:
        assert args == " ".join(argv)
        assert executable == (shell if isinstance(shell, str) else "/bin/sh")
    else:
        assert (args, executable) == (argv, None)


@settings(max_examples=examples(60))
@given(st.text(st.characters(codec="utf-8", exclude_characters="\0")), st.booleans())
def test_a_string_through_a_shell_keeps_its_lines_only_with_keeplines(text, keeplines):
    args, executable = process_args(text, None, keeplines)
    assert executable == "/bin/sh"
    assert args == (text if keeplines else text.replace("\n", " "))
    assert keeplines or "\n" not in args


@pytest.mark.parametrize("text, expected", [
    ("echo 'a  b' \"$X\"", ["echo", "a  b", "$X"]),
    ("echo one\necho two", ["echo", "one", "echo", "two"]),
])
def test_a_string_without_a_shell_is_split_as_a_shell_would(text, expected):
    assert process_args(text, False, False) == (expected, None)
