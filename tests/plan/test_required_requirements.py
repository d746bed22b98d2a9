"""A required requirement with no match is a plan error, as Unfurl 1.2.0 ("Node template app
is missing requirements: db"); one its type declares is matched by capability, as Unfurl
matches it (captured in tests/data/unfurl120/13-structure-and-layout/required-*)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "13-structure-and-layout"


def test_required_requirement_with_no_match_is_a_plan_error(project, invoke):
    console = (DATA / "required-unmatched" / "1-plan" / "console.txt").read_text()
    assert "Node template app is missing requirements: db" in console
    project.write((DATA / "required-unmatched.yaml").read_text())
    for command in (["plan"], ["validate"], ["deploy", "--approve"]):
        result = invoke(*command)
        assert result.exit_code == 1, result.output
        assert "node template 'app' is missing requirements: db" in result.output
    assert project.jobs_tsv() == [] and len(project.commits()) == 2


def test_optional_requirement_with_no_match_is_fine(project, invoke):
    text = (DATA / "required-unmatched.yaml").read_text().replace(
        "relationship: tosca.relationships.ConnectsTo",
        "relationship: tosca.relationships.ConnectsTo\n              occurrences: [0, 1]",
    )
    project.write(text)
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.local("app") == "ok"


def test_requirement_declared_by_the_type_is_matched_by_capability(project, invoke):
    project.write((DATA / "required-by-capability.yaml").read_text())
    result = invoke("plan", "--json")
    assert result.exit_code == 0, result.output
    assert invoke("deploy", "--approve").exit_code == 0
    from unfurl_lite.load.loader import load_ensemble

    app = load_ensemble(project.ensemble).topology.templates["app"]
    assert [(r.name, r.node) for r in app.requirements] == [("db", "db")]
    assert project.local("app") == "ok"
