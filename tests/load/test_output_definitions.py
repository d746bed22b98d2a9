"""The topology's outputs are judged at validate as Unfurl 1.2.0 judges them at load: an
output without a ``value`` (or written as a bare value, which 1.2.0 fails on) is refused
('Output "url" is missing required field "value".'), and so is a static value its ``type``
refuses; an expression or a template is judged when the job computes it. Before, such an
output was accepted and came out null. Each probe in tests/data/unfurl120/55-outputs was
run with Unfurl 1.2.0 (``capture.sh`` there); ``test_unfurl_still_answers_so`` re-asks it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, unfurl120
from unfurl_lite.load.validate import check
from unfurl_lite.load.yamlio import parse

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "55-outputs"
PROBES = sorted(p.stem for p in DATA.glob("*.yaml"))


def unfurls_words(console: str) -> list[str]:
    return list(dict.fromkeys(re.findall(
        r"(?:ValueError|MissingRequiredFieldError): (.*?)\.?(?: in node template .*)?$",
        console, re.M)))


@pytest.mark.parametrize("name", PROBES)
def test_refused_where_unfurl_refuses_it(name: str) -> None:
    console = (DATA / name / "console.txt").read_text()
    refused = int((DATA / name / "exitcode.txt").read_text()) != 0
    problems = check(parse((DATA / f"{name}.yaml").read_text(), "e.yaml"), "e.yaml")
    assert bool(problems) == refused, [p.message for p in problems]
    for words in unfurls_words(console):
        assert any(words in p.message for p in problems), (words, problems)


def test_the_probes_cover_both_answers() -> None:
    codes = {int((DATA / n / "exitcode.txt").read_text()) for n in PROBES}
    assert codes == {0, 1} and len(PROBES) >= 6


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize("name", PROBES)
def test_unfurl_still_answers_so(tmp_path: Path, name: str) -> None:
    (tmp_path / "ensemble.yaml").write_text((DATA / f"{name}.yaml").read_text())
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == int((DATA / name / "exitcode.txt").read_text()), output
    assert unfurls_words(output) == unfurls_words((DATA / name / "console.txt").read_text())
