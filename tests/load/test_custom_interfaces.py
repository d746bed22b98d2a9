"""An interface of one's own (``Mine: {type: My}``, ``My`` one of the document's
``interface_types``) given an operation its interface type does not declare is refused at
validate, as Unfurl 1.2.0 refuses it at load ('"interfaces" of template "app" contains
unknown field "op2".'); before, it was accepted. Each probe in
tests/data/unfurl120/56-custom-interfaces was run with Unfurl 1.2.0 (``capture.sh`` there).
One difference is kept on purpose: an operation a *parent* interface type declares is
accepted here (1.2.0 refuses it too: ``inherited``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "56-custom-interfaces"
PROBES = sorted(p.stem for p in DATA.glob("*.yaml"))
#: refused by Unfurl 1.2.0, accepted here (docs/differences-from-unfurl.md)
ACCEPTED_HERE = {"inherited"}


def unfurls_words(console: str) -> list[str]:
    """Unfurl's UnknownFieldErrors, each once, without its "Refer to the definition" tail."""
    found = re.findall(r"UnknownFieldError: (.*?contains unknown field \"[^\"]+\"\.)", console)
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("name", PROBES)
def test_refused_in_unfurls_words_where_unfurl_refuses_it(name: str) -> None:
    console = (DATA / name / "console.txt").read_text()
    code = int((DATA / name / "exitcode.txt").read_text())
    problems = semantic_problems(parse((DATA / f"{name}.yaml").read_text(), "e.yaml"), "e.yaml")
    if name in ACCEPTED_HERE:
        assert code != 0 and problems == []
        return
    assert [p.message for p in problems] == unfurls_words(console)
    assert bool(problems) == (code != 0)
    assert all(p.line and p.hint for p in problems)


def test_the_probes_cover_both_answers() -> None:
    codes = {int((DATA / n / "exitcode.txt").read_text()) for n in PROBES}
    assert codes == {0, 1} and len(PROBES) >= 5


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
