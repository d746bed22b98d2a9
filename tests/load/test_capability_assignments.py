"""A node template's ``capabilities:`` assignments are judged at validate as Unfurl 1.2.0
judges them when it loads the service template: a capability its type does not have, and a
property the capability's type does not declare (its own capability types, and TOSCA's:
``portz`` on a Database's endpoint), are refused in tosca-parser's words; attributes and the
declared properties are accepted. Each probe in
tests/data/unfurl120/52-capability-assignments was run with Unfurl 1.2.0 (``capture.sh``
there); ``test_unfurl_still_answers_so`` re-asks it when it is installed."""

from __future__ import annotations

import pytest

from tests.recorded_probes import (
    assert_refused_in_its_words,
    oracle_tests,
    recorded,
    words_from,
)
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

PROBES = recorded("52-capability-assignments")


#: Unfurl's UnknownFieldErrors, without their "Refer to the definition" tail
unfurls_words = words_from(r"UnknownFieldError: (.*?contains unknown field \"[^\"]+\"\.)")


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_in_unfurls_words_where_unfurl_refuses_it(name: str) -> None:
    problems = semantic_problems(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert_refused_in_its_words(PROBES, name, problems, unfurls_words)


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=6)
