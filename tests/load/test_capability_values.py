"""The property values a template's capability assignment gives are judged at validate
against the capability type's definitions, as Unfurl 1.2.0 judges them at load: TOSCA's
(a Compute host's ``num_cpus: 0``, an admin endpoint's ``secure: false``, an endpoint's
``port: abc`` or ``initiator: nobody``) and a document's own capability types; before, any
value was accepted. Each probe in tests/data/unfurl120/58-capability-values was run with
Unfurl 1.2.0 (``capture.sh`` there); an expression is judged when it is read."""

from __future__ import annotations

import pytest

from tests.conftest import Invoke, Project
from tests.recorded_probes import oracle_tests, recorded, words_from
from unfurl_lite.load.validate import check
from unfurl_lite.load.yamlio import parse

PROBES = recorded("58-capability-values")


#: Unfurl's verdicts on a value, without the follow-on ones about "None" it adds after a
#: scalar it could not read
unfurls_words = words_from(r"(?:ValidationError|ValueError): (.*?\.)(?: in node template .*)?$",
                           unless='"None"')


@pytest.mark.parametrize("name", PROBES.names)
def test_refused_where_unfurl_refuses_it(name: str) -> None:
    problems = check(parse(PROBES.text(name), "e.yaml"), "e.yaml")
    assert bool(problems) == (PROBES.code(name) != 0), [p.message for p in problems]
    words = unfurls_words(PROBES.console(name))  # Unfurl may add a constraint's verdict
    if words:  # to a value of the wrong type: the first is the one said here
        assert problems[0].message.startswith(words[0]), (words, problems)
    assert all(p.line and ".capabilities." in (p.path or "") for p in problems)


def test_a_deploy_is_refused_before_anything_runs(project: Project, invoke: Invoke) -> None:
    project.write(PROBES.text("compute-cpus-zero"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1, result.output
    assert 'property "num_cpus" must be greater than or equal to "1"' in result.output
    assert not (project.ensemble.parent / "jobs.tsv").exists()


test_the_probes_cover_both_answers, test_unfurl_still_answers_so = oracle_tests(
    PROBES, unfurls_words, minimum=10)
