"""The properties of a relationship, a relationship template or one written inline in a
requirement, are judged at validate as Unfurl 1.2.0 judges them when it loads the service
template: one its relationship type does not declare, and a required one left out (TOSCA's
AttachesTo's ``location`` too), are refused in tosca-parser's words (an inline relationship
named after its requirement). Each probe in tests/data/unfurl120/53-relationship-properties
was run with Unfurl 1.2.0 (``capture.sh`` there); ``test_unfurl_still_answers_so`` re-asks
it when it is installed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "53-relationship-properties"
PROBES = sorted(p.stem for p in DATA.glob("*.yaml"))


def unfurls_words(console: str) -> list[str]:
    """Unfurl's field errors, each once, without the "Refer to the definition" tail."""
    found = re.findall(r"(?:UnknownFieldError|MissingRequiredFieldError): (.*?(?:contains "
                       r"unknown field|is missing required field) \"[^\"]+\"\.)", console)
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("name", PROBES)
def test_refused_in_unfurls_words_where_unfurl_refuses_it(name: str) -> None:
    console = (DATA / name / "console.txt").read_text()
    code = int((DATA / name / "exitcode.txt").read_text())
    problems = semantic_problems(parse((DATA / f"{name}.yaml").read_text(), "e.yaml"), "e.yaml")
    assert [p.message for p in problems] == unfurls_words(console)
    assert bool(problems) == (code != 0)
    assert all(p.line and p.hint for p in problems)


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
