"""Probes recorded with Unfurl 1.2.0's ``validate``, and asking it again.

A folder under tests/data/unfurl120/ holds each probe as ``NAME.yaml`` beside
``NAME/exitcode.txt`` and ``NAME/console.txt``, Unfurl's answer as
``capture-validate.sh`` recorded it. The recorded answer is the oracle the default run
judges us against; the opt-in tests (``UNFURL120_VENV``) check that Unfurl still gives it,
so an oracle cannot go stale unnoticed.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from tests.conftest import git, unfurl120
from unfurl_lite.errors import Problem

DATA = Path(__file__).parent / "data" / "unfurl120"
UNFURL = unfurl120()
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Test = TypeVar("Test", bound=Callable[..., None])


@dataclass(frozen=True)
class RecordedProbes:
    folder: Path

    @property
    def names(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.yaml"))

    def text(self, name: str) -> str:
        return (self.folder / f"{name}.yaml").read_text()

    def code(self, name: str) -> int:
        return int((self.folder / name / "exitcode.txt").read_text())

    def console(self, name: str) -> str:
        return (self.folder / name / "console.txt").read_text()

    def codes(self) -> set[int]:
        return {self.code(name) for name in self.names}


def recorded(folder: str) -> RecordedProbes:
    return RecordedProbes(DATA / folder)


def words_from(pattern: str, unless: str | None = None) -> Callable[[str], list[str]]:
    """What Unfurl said, as ``pattern``'s group picks it from a console, each once, in order
    (without what contains ``unless``): the words a judgement here is compared with."""
    found = re.compile(pattern, re.M)

    def words(console: str) -> list[str]:
        said = dict.fromkeys(found.findall(console))
        return [w for w in said if unless is None or unless not in w]
    return words


def assert_refused_in_its_words(probes: RecordedProbes, name: str, problems: list[Problem],
                                words: Callable[[str], list[str]]) -> None:
    """Refused exactly where Unfurl refused, with its messages, each at a line with a hint."""
    assert [p.message for p in problems] == words(probes.console(name))
    assert bool(problems) == (probes.code(name) != 0)
    assert all(p.line and p.hint for p in problems)


def assert_refused_saying_so(probes: RecordedProbes, name: str, problems: list[Problem],
                             words: Callable[[str], list[str]]) -> None:
    """Refused exactly where Unfurl refused, each of its verdicts within one of ours."""
    assert bool(problems) == (probes.code(name) != 0), [p.message for p in problems]
    for said in words(probes.console(name)):
        assert any(said in p.message for p in problems), (said, problems)


def needs_unfurl120(test: Test) -> Test:
    """Opt-in: Unfurl 1.2.0 is a tool outside the repository."""
    skip = pytest.mark.skipif(not UNFURL.exists(),
                              reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
    marked: Test = pytest.mark.unfurl120(skip(test))
    return marked


def oracle_tests(probes: RecordedProbes, words: Callable[[str], object],
                 minimum: int) -> tuple[Callable[[], None], Callable[[Path, str], None]]:
    """A probe module's two tests of its oracle itself: the probes cover both answers (so a
    judgement that refuses everything, or nothing, fails), and Unfurl 1.2.0 still gives the
    recorded answer in the same ``words`` (opt-in). Assign them to ``test_`` names."""

    def covers_both_answers() -> None:
        assert probes.codes() == {0, 1} and len(probes.names) >= minimum

    @needs_unfurl120
    @pytest.mark.parametrize("name", probes.names)
    def unfurl_still_answers_so(tmp_path: Path, name: str) -> None:
        code, output = unfurl_validates(tmp_path, probes.text(name))
        assert code == probes.code(name), output
        assert words(output) == words(probes.console(name))

    return covers_both_answers, unfurl_still_answers_so


def unfurl_validates(tmp_path: Path, text: str) -> tuple[int, str]:
    """Unfurl 1.2.0's exit code and console (without colours) for ``validate`` of ``text``
    as the ensemble of a fresh repository."""
    (tmp_path / "ensemble.yaml").write_text(text)
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    return proc.returncode, _ANSI.sub("", proc.stdout + proc.stderr)
