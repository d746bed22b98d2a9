"""The README stays true: its tour runs, and what it shows is what the commands print.

The tour's ```console blocks are run command by command (``$ ...`` lines) in a fresh
directory, as a new user would. Each output line the README shows must appear in the real
output once changeIds, times, durations, commit hashes and the temporary directory are
normalised; a line that is just ``…`` stands for lines left out, and ``…`` inside a line
for text left out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
TOUR_DIR = "/tmp/tour"  # where the README's tour was run
CHANGE_ID = re.compile(r"\bA[0-9A-Za-z]{7}[0-9a-f]{4}\b")
VARIABLE = [
    (CHANGE_ID, "<changeId>"),
    (re.compile(r"\d{4}-\d\d-\d\d[ T-]\d\d[:-]\d\d[:-]\d\d[-0-9.:+Z]*"), "<time>"),
    (re.compile(r"\bin \d+\.\d+s\b"), "in <seconds>"),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), "<hash>"),
]


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)


def tour_steps(text: str) -> list[Step]:
    tour = text.split("## A 5-minute tour", 1)[1].split("\n## ", 1)[0]
    steps: list[Step] = []
    for block in re.findall(r"```console\n(.*?)```", tour, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            else:
                steps[-1].shown.append(line)
    return steps


def normalise(line: str) -> str:
    for pattern, placeholder in VARIABLE:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def appears(shown: str, actual: list[str]) -> bool:
    pieces = [normalise(p) for p in shown.split("…")]
    for line in actual:
        at = 0
        for piece in pieces:
            found = line.find(piece, at)
            if found < 0:
                break
            at = found + len(piece)
        else:
            return True
    return False


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """`unfurl` on PATH as this checkout, a fixed width, no colour, a known git author."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "unfurl"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m unfurl_lite "$@"\n')
    shim.chmod(0o755)
    who = {"NAME": "Ada", "EMAIL": "ada@example.com"}
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "NO_COLOR": "1",
        "COLUMNS": "100",
        **{f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER")
           for key, value in who.items()},
    }


@pytest.mark.slow
def test_the_tour_prints_what_the_readme_shows(tmp_path: Path, shell_env: dict[str, str]):
    work = tmp_path / "tour"
    work.mkdir()
    steps = tour_steps(README.read_text())
    assert [s.command.split()[1] for s in steps if s.command.startswith("unfurl ")][:4] == [
        "init", "plan", "deploy", "status"
    ]
    cwd, last_code = work, 0
    readme_jobs: list[str] = []  # job changeIds in the order the README shows them
    real_jobs: list[str] = []
    for step in steps:
        command = step.command
        for shown_id in CHANGE_ID.findall(command):  # a changeId copied from earlier output
            real = real_jobs[readme_jobs.index(shown_id[:8])]
            command = command.replace(shown_id, real + shown_id[8:])
        if command.startswith("cd "):
            cwd = cwd / command[3:].strip()
            continue
        if command == "echo $?":
            actual = [str(last_code)]
        else:
            run = subprocess.run(
                ["bash", "-c", command], cwd=cwd, env=shell_env, capture_output=True,
                text=True, timeout=120, stdin=subprocess.DEVNULL,
            )
            last_code = run.returncode
            output = (run.stdout + run.stderr).replace(str(work), TOUR_DIR)
            actual = output.splitlines()
            assert "\x1b" not in output
        for ids, lines in ((readme_jobs, step.shown), (real_jobs, actual)):
            for change_id in CHANGE_ID.findall("\n".join(lines)):
                if change_id[:8] not in ids:
                    ids.append(change_id[:8])
        normalised = [normalise(line) for line in actual]
        missing = [s for s in step.shown if s.strip() != "…" and not appears(s, normalised)]
        assert not missing, f"$ {step.command}\nREADME shows, but the real output lacks:\n" + (
            "\n".join(missing) + "\n--- real output ---\n" + "\n".join(actual)
        )


def test_every_doc_and_example_the_readme_names_exists():
    text = README.read_text()
    named = set(re.findall(r"\]\(((?:docs|examples)/[^)#]+)\)", text))
    named |= set(re.findall(r"`((?:docs|examples)/[\w./-]+)`", text))
    assert len(named) > 10
    missing = [n for n in sorted(named) if not (ROOT / n).exists()]
    assert not missing
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in text, f"README's docs index lacks {page.name}"
    for example in (ROOT / "examples").iterdir():
        if (example / "ensemble.yaml").exists():
            assert f"(examples/{example.name})" in text, f"README lacks {example.name}"


def test_the_readme_starts_with_the_set_up_commands_ci_runs():
    text = README.read_text()
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert "pip install -e . && unfurl init demo --from three-tier" in first_block
    assert "pip install -e '.[test]' && python3 -m pytest" in first_block
    assert "python3 -m pytest" in (ROOT / ".ci" / "run").read_text()
