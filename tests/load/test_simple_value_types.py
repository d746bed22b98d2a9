"""A property or input value its declared simple type refuses (``abc`` for an ``integer``,
``3`` for a ``list``, ``10`` for a ``scalar-unit.size``) is refused at validate, as Unfurl
1.2.0 refuses it at load; a value computed when read (a template, an ``eval``) and the
spellings toscaparser converts (``"8080"`` for an integer, ``42`` for a string) are
accepted. Before, these were judged only in a document that declared a data type or a
constraint somewhere. Each probe in tests/data/unfurl120/54-simple-value-types was run with
Unfurl 1.2.0 (``capture.sh`` there); ``test_unfurl_still_answers_so`` re-asks it."""

from __future__ import annotations

import pytest

from tests.recorded_probes import (
    assert_refused_saying_so,
    oracle_tests,
    recorded,
    words_from,
)
from unfurl_lite.load.validate import check
from unfurl_lite.load.yamlio import parse

PROBES = recorded("54-simple-value-types")


unfurls_words = words_from(r"ValueError: (.*?)\.?$")


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_where_unfurl_refuses_it(name: str) -> None:
    problems = check(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert_refused_saying_so(PROBES, name, problems, unfurls_words)


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=10)
