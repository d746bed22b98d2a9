"""``unfurl --help`` answered from the text click wrote last time (cli/helptext.py): the
same bytes as click's, at every width, without importing click once stored; a changed
source, another width or a file not to be trusted makes click write it again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from unfurl_lite.cli import helptext


def _env(columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "COLUMNS": str(columns), "PYTHONPATH": str(ROOT)}


def _click_help(columns: int) -> str:
    code = ("from unfurl_lite.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(columns), check=True, timeout=120).stdout


@pytest.mark.parametrize("columns", [60, 200])
def test_help_is_clicks_text_and_once_stored_needs_no_click(columns: int) -> None:
    expected = _click_help(columns)
    assert expected.startswith("Usage: unfurl [OPTIONS] COMMAND [ARGS]...")
    for _ in range(2):  # the first may store it, the second reads it
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "unfurl_lite", "--help"],
                              capture_output=True, text=True, env=_env(columns), timeout=120)
        assert done.returncode == 0 and done.stdout == expected, done.stderr[-2000:]
    assert " click\n" not in done.stderr and "dataclasses" not in done.stderr


@pytest.mark.parametrize(("columns", "width"), [("60", 58), ("200", 78), ("10", 50),
                                                 ("x", 78)])
def test_the_width_is_clicks(monkeypatch: pytest.MonkeyPatch, columns: str, width: int) -> None:
    """At most 80 columns less two, at least 50 (a pipe's terminal is 80 wide)."""
    monkeypatch.setenv("COLUMNS", columns)
    assert helptext.width() == width


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A help text stored at width 68 for a package of five sources: (cache, package)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setenv("COLUMNS", "70")
    package, cache = tmp_path / "package", tmp_path / "__pycache__"
    (package / "cli" / "commands").mkdir(parents=True)
    (package / "model").mkdir()
    for name in ("cli/main.py", "cli/commands/jobs.py", "model/builtin_workflows.py",
                 "__init__.py"):
        (package / name).write_text("# source\n")
    assert helptext.cached(str(cache), str(package)) is None
    helptext.store("Usage: unfurl\n", str(cache), str(package))
    return str(cache), str(package)


def test_a_changed_source_or_width_makes_click_write_it_again(
    stored: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert helptext.cached(*stored) == "Usage: unfurl\n"
    monkeypatch.setenv("COLUMNS", "90")
    assert helptext.cached(*stored) is None
    monkeypatch.setenv("COLUMNS", "70")
    (Path(stored[1]) / "cli" / "commands" / "jobs.py").write_text("# a new option\n")
    assert helptext.cached(*stored) is None


def test_a_help_file_anyone_may_write_is_not_read(stored: tuple[str, str]) -> None:
    [path] = Path(stored[0]).glob("help-*.txt")
    path.chmod(0o666)
    assert helptext.cached(*stored) is None
