"""The captures in tests/data/unfurl120/15-imports-types still describe Unfurl 1.2.0, and
Unfurl reads what unfurl-lite wrote for them (opt-in: needs Unfurl 1.2.0's virtualenv)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, InvokeIn, Project, git, unfurl120

UNFURL = unfurl120()
CAPTURED = ROOT / "tests" / "data" / "unfurl120" / "15-imports-types"
STEPS = {"validate": ["validate"],
         "deploy": ["deploy", "--approve", "--dirty=ok", "--commit", "--jobexitcode", "error"]}

pytestmark = [
    pytest.mark.unfurl120,
    pytest.mark.skipif(not UNFURL.exists(),
                       reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0"),
]


def unfurl(project: Project, *args: str) -> tuple[int, str]:
    proc = subprocess.run([str(UNFURL), "--home", "", *args, "ensemble.yaml"],
                          cwd=project.root, capture_output=True, text=True, timeout=300)
    return proc.returncode, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


def _case(project: Project, name: str) -> None:
    shutil.copytree(CAPTURED / name / "input", project.root, dirs_exist_ok=True)
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", name)


@pytest.mark.parametrize(("name", "step"), sorted(
    (p.parent.name, p.name) for p in CAPTURED.glob("*/*") if p.name in STEPS))
def test_unfurl_still_exits_as_captured(project: Project, name: str, step: str) -> None:
    _case(project, name)
    code, _ = unfurl(project, *STEPS[step])
    assert str(code) == (CAPTURED / name / step / "exitcode.txt").read_text().strip()


@pytest.mark.parametrize("name", ["imports-basic", "multi-inherit", "root-node"])
def test_unfurl_finds_nothing_to_do_after_our_deploy(project: Project, invoke_in: InvokeIn,
                                                     name: str) -> None:
    _case(project, name)
    assert invoke_in(project.root, "deploy", "--approve").exit_code == 0
    code, output = unfurl(project, *STEPS["deploy"])
    assert code == 0, output
    assert "No tasks ran" in output or "(0 changed, 0 ok, 0 failed" in output, output
