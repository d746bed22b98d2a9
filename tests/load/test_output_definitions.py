"""The topology's outputs are judged at validate as Unfurl 1.2.0 judges them at load: an
output without a ``value`` (or written as a bare value, which 1.2.0 fails on) is refused
('Output "url" is missing required field "value".'), and so is a static value its ``type``
refuses; an expression or a template is judged when the job computes it. Before, such an
output was accepted and came out null. Each probe in tests/data/unfurl120/55-outputs was
run with Unfurl 1.2.0 (``capture.sh`` there); ``test_unfurl_still_answers_so`` re-asks it."""

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

PROBES = recorded("55-outputs")


unfurls_words = words_from(
    r"(?:ValueError|MissingRequiredFieldError): (.*?)\.?(?: in node template .*)?$")


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_where_unfurl_refuses_it(name: str) -> None:
    problems = check(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert_refused_saying_so(PROBES, name, problems, unfurls_words)


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=6)
