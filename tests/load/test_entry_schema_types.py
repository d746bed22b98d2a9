"""A list's or map's ``entry_schema`` naming a type nothing defines is refused at validate
once a value is given for it (an empty one too), as Unfurl 1.2.0 refuses it at load ('No
definition for type "NoSuchData" found. in node template "app"'); without a value, or with
an expression, toscaparser never looks the type up and neither do we. Each probe in
tests/data/unfurl120/57-entry-schema-types was run with Unfurl 1.2.0 (``capture.sh``
there); the short form ``entry_schema: NoSuchData`` makes 1.2.0 fail with a Python error,
refused here in the same words as the long form."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke, Project
from tests.recorded_probes import oracle_tests, recorded, words_from
from unfurl_lite.load.validate import check
from unfurl_lite.load.yamlio import parse

PROBES = recorded("57-entry-schema-types")


unfurls_words = words_from(r'MissingTypeError: (No definition for type "[^"]+" found\.)')


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_where_unfurl_refuses_it(name: str) -> None:
    problems = check(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert bool(problems) == (PROBES.code(name) != 0), [p.message for p in problems]
    for words in unfurls_words(PROBES.console(name)):
        assert any(p.message.startswith(words) for p in problems), (words, problems)
    assert all(p.line and "data_types" in p.hint for p in problems)


def test_a_deploy_is_refused_before_anything_runs(project: Project, invoke: Invoke) -> None:
    project.write(PROBES.text("property-value"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1, result.output
    assert 'No definition for type "NoSuchData" found. in node template "app"' in result.output
    assert not (project.ensemble.parent / "jobs.tsv").exists()


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=8)
