"""The properties of a relationship, a relationship template or one written inline in a
requirement, are judged at validate as Unfurl 1.2.0 judges them when it loads the service
template: one its relationship type does not declare, and a required one left out (TOSCA's
AttachesTo's ``location`` too), are refused in tosca-parser's words (an inline relationship
named after its requirement). Each probe in tests/data/unfurl120/53-relationship-properties
was run with Unfurl 1.2.0 (``capture.sh`` there); ``test_unfurl_still_answers_so`` re-asks
it when it is installed."""

from __future__ import annotations

import re

import pytest

from tests.recorded_probes import oracle_tests, recorded
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

PROBES = recorded("53-relationship-properties")


def unfurls_words(console: str) -> list[str]:
    """Unfurl's field errors, each once, without the "Refer to the definition" tail."""
    found = re.findall(r"(?:UnknownFieldError|MissingRequiredFieldError): (.*?(?:contains "
                       r"unknown field|is missing required field) \"[^\"]+\"\.)", console)
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_in_unfurls_words_where_unfurl_refuses_it(name: str) -> None:
    console = PROBES.console(name)
    code = PROBES.code(name)
    problems = semantic_problems(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert [p.message for p in problems] == unfurls_words(console)
    assert bool(problems) == (code != 0)
    assert all(p.line and p.hint for p in problems)


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=6)
