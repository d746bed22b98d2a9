"""80 columns: every command's output fits, nothing is split inside a word, an id or a
time, messages keep their words, and `history` keeps WORKFLOW and SUMMARY readable before
AUTHOR. Tested through the command's entry point in this process with COLUMNS=80 (a pipe
with COLUMNS set, as on a terminal) and, in the slow run, on a pseudo-terminal."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import InvokeIn, init_example, run_in_process
from unfurl_lite.cli.tables import prose

WIDTH = 80
WORD = st.one_of(
    st.text(alphabet="abcdefgh.:/_-=()'", min_size=1, max_size=16),
    st.text(alphabet="A6BQxyz019", min_size=7, max_size=7).map(
        lambda middle: f"A{middle}0001"),  # a changeId
    st.just("2026-11-26 04:56:04"),  # a time: never split across lines
)


@given(st.lists(st.lists(WORD, min_size=1, max_size=16), min_size=1, max_size=3),
       st.integers(min_value=0, max_value=6), st.integers(min_value=20, max_value=120))
def test_prose_wraps_at_spaces_only(paragraphs: list[list[str]], indent: int, width: int):
    text = "\n".join(" " * indent + " ".join(words) for words in paragraphs)
    wrapped = prose(text, width)
    assert " ".join(wrapped.split()) == " ".join(text.split())  # no word split or lost
    for line in wrapped.splitlines():
        assert len(line) <= width or len(line.split()) == 1 or "2026-11-26 04:56:04" in line
    assert "2026-11-26\n" not in wrapped
    assert prose(text, None) == text  # a pipe without COLUMNS: as it is


def _tour(invoke_in: InvokeIn, tmp_path: Path) -> Path:
    return init_example(invoke_in, tmp_path, "three-tier", "tour",
                        author="Ada Lovelace-Byron of the Analytical Engine")


def _at(root: Path, *args: str, width: int | None = WIDTH) -> subprocess.CompletedProcess[str]:
    env = {"COLUMNS": str(width)} if width else {}
    if not width:
        env["COLUMNS"] = ""
    return run_in_process(root, *args, env=env)


def _fits(text: str) -> None:
    """No line is wider than the width, unless one word in it (a path) is too long."""
    long = [line for line in text.splitlines()
            if len(line) > WIDTH and max(len(w) for w in line.split()) < WIDTH - 10]
    assert long == []


def test_every_command_fits_80_columns_in_a_pipe_with_columns_set(invoke_in: InvokeIn,
                                                                  tmp_path: Path):
    root = _tour(invoke_in, tmp_path)
    (root / "state" / "app").mkdir(parents=True)  # the tour's failure: app cannot be created
    failed = _at(root, "deploy", "--approve")
    assert failed.returncode == 64
    _fits(failed.stdout)
    _fits(failed.stderr)
    job = (root / "jobs.tsv").read_text().split("\t", 1)[0]
    for args in (["plan"], ["status"], ["history"], ["show", job, "--no-diff"],
                 ["history", "--instance", "wbe"], ["scale", "nosuch", "-a"],
                 ["validate"], ["diff", job], ["check"]):
        narrow = _at(root, *args)
        _fits(narrow.stdout)
        _fits(narrow.stderr)
    # sentences keep every word: the same text as without a width, wrapped at spaces
    for args in (["plan"], ["show", job, "--no-diff"], ["history", "--instance", "wbe"]):
        narrow, wide = _at(root, *args), _at(root, *args, width=None)
        assert " ".join((narrow.stdout + narrow.stderr).split()) == \
            " ".join((wide.stdout + wide.stderr).split()), args


def test_history_keeps_workflow_and_summary_readable_before_author(invoke_in: InvokeIn,
                                                                   tmp_path: Path):
    root = _tour(invoke_in, tmp_path)
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    assert invoke_in(root, "check").exit_code == 0
    narrow = _at(root, "history").stdout.splitlines()
    assert narrow[0].split() == ["CHANGEID", "TIME", "(UTC)", "WORKFLOW", "STATUS", "SUMMARY",
                                 "COMMIT"]  # AUTHOR left out, not cut unreadable
    assert [line.split()[3] for line in narrow[1:]] == ["check", "deploy"]  # whole
    assert all(len(line) <= WIDTH for line in narrow)
    assert all(re.search(r"\b\d+ tasks \(\d+ (changed|ok)", line) for line in narrow[1:])
    wide = _at(root, "history", width=200).stdout.splitlines()
    assert wide[0].split()[-1] == "AUTHOR" and "Analytical Engine" in wide[1]
    assert "0 unknown" in wide[1]  # with room, Unfurl's whole summary


@pytest.mark.slow  # a pseudo-terminal and processes of their own
def test_a_failed_job_on_an_80_column_terminal(invoke_in: InvokeIn, tmp_path: Path):
    from tests.cli.test_tables import _on_terminal

    root = _tour(invoke_in, tmp_path)
    (root / "state" / "app").mkdir(parents=True)
    text = _on_terminal(root, WIDTH, "deploy", "--approve")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    final = text.split("(deploy): failed")[-1]
    lines = [line.rstrip() for line in final.replace("\r", "").splitlines()]
    assert [line for line in lines if len(line) > WIDTH] == []
    rows = [line.split() for line in lines if re.match(r"\s*(A\w{11}|-)\s", line)]
    assert [row[2] for row in rows] == ["Standard.create", "Standard.create",
                                        "Standard.configure", "Standard.create",
                                        "Standard.configure"]  # never split mid-word
    # web only depends on app (no host): it runs, as in Unfurl
    assert [row[4] for row in rows] == ["ok", "failed", "blocked", "ok", "ok"]
    said = " ".join(" ".join(lines).split())
    assert "app Standard.create: failed: exit code 2: /bin/sh: 1: cannot create state/app: " \
           "Is a directory" in said  # the message, once, whole
    assert said.count("cannot create state/app") == 1  # in the table's footer, once
    assert " ".join(text.split()).count("cannot create state/app") == 2  # and as it happened


@pytest.mark.slow  # a pseudo-terminal and a process of its own
def test_long_instance_names_leave_the_operation_and_outcome_whole(tmp_path: Path):
    """On 80 columns the job's table shortens the target (the footer names it whole),
    never the operation, the reason or the outcome (`fa…` for failed)."""
    from tests.cli.test_tables import _on_terminal
    from tests.conftest import ensemble_yaml, git, shell_node

    long_name = "a_rather_long_instance_name_for_this_test"
    (tmp_path / "ensemble.yaml").write_text(ensemble_yaml(
        shell_node(long_name, "'exit 3'") + shell_node(
            "another_long_named_instance_here", "'echo ok'", operation="configure")))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=T", "-c", "user.email=t@t", "commit", "-qm", "init")
    text = _on_terminal(tmp_path, WIDTH, "deploy", "--approve")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    final = text.split("(deploy): failed")[-1]
    lines = [line.rstrip() for line in final.replace("\r", "").splitlines()]
    assert [line for line in lines if len(line) > WIDTH] == []
    rows = sorted(line.split() for line in lines if re.match(r"\s*A\w{11}\s", line))
    assert [row[2:] for row in rows] == [["Standard.create", "add", "failed", "error"],
                                         ["Standard.configure", "add", "ok", "ok"]], rows
    assert f"{long_name} Standard.create: failed" in " ".join(lines)  # whole in the footer
