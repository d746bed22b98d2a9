"""An interface of one's own (``Mine: {type: My}``, ``My`` one of the document's
``interface_types``) given an operation its interface type does not declare is refused at
validate, as Unfurl 1.2.0 refuses it at load ('"interfaces" of template "app" contains
unknown field "op2".'); before, it was accepted. Each probe in
tests/data/unfurl120/56-custom-interfaces was run with Unfurl 1.2.0 (``capture.sh`` there).
One difference is kept on purpose: an operation a *parent* interface type declares is
accepted here (1.2.0 refuses it too: ``inherited``)."""

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

PROBES = recorded("56-custom-interfaces")
#: refused by Unfurl 1.2.0, accepted here (docs/differences-from-unfurl.md)
ACCEPTED_HERE = {"inherited"}


#: Unfurl's UnknownFieldErrors, without their "Refer to the definition" tail
unfurls_words = words_from(r"UnknownFieldError: (.*?contains unknown field \"[^\"]+\"\.)")


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_in_unfurls_words_where_unfurl_refuses_it(name: str) -> None:
    problems = semantic_problems(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    if name in ACCEPTED_HERE:
        assert PROBES.code(name) != 0 and problems == []
        return
    assert_refused_in_its_words(PROBES, name, problems, unfurls_words)


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=5)
