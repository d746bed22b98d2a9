"""A property or input value its declared simple type refuses (``abc`` for an ``integer``,
``3`` for a ``list``, ``10`` for a ``scalar-unit.size``) is refused at validate, as Unfurl
1.2.0 refuses it at load; a value computed when read (a template, an ``eval``) and the
spellings toscaparser converts (``"8080"`` for an integer, ``42`` for a string) are
accepted. Before, these were judged only in a document that declared a data type or a
constraint somewhere. Each probe in tests/data/unfurl120/54-simple-value-types was run with
Unfurl 1.2.0 (``capture.sh`` there); ``test_unfurl_still_answers_so`` re-asks it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.recorded_probes import needs_unfurl120, recorded, unfurl_validates
from unfurl_lite.load.validate import check
from unfurl_lite.load.yamlio import parse

PROBES = recorded("54-simple-value-types")


def unfurls_words(console: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"ValueError: (.*?)\.?$", console, re.M)))


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_where_unfurl_refuses_it(name: str) -> None:
    console = PROBES.console(name)
    refused = PROBES.code(name) != 0
    problems = check(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert bool(problems) == refused, [p.message for p in problems]
    for words in unfurls_words(console):
        assert any(words in p.message for p in problems), (words, problems)


def test_the_probes_cover_both_answers() -> None:
    codes = PROBES.codes()
    assert codes == {0, 1} and len(PROBES.names) >= 10


@needs_unfurl120
@pytest.mark.parametrize("name", PROBES.names)
def test_unfurl_still_answers_so(tmp_path: Path, name: str) -> None:
    code, output = unfurl_validates(tmp_path, PROBES.text(name))
    assert code == PROBES.code(name), output
    assert unfurls_words(output) == unfurls_words(PROBES.console(name))
