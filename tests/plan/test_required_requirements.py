"""A required requirement with no match: validate accepts it, but a job that would run an
operation of the template cannot be created, as Unfurl 1.2.0 ("Node template app is missing
requirements: db", "Unable to create job", exit 64); one its type declares is matched by
capability, as Unfurl matches it (captured in tests/data/unfurl120/13-structure-and-layout/
required-*)."""

from __future__ import annotations

from pathlib import Path

import yaml

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "13-structure-and-layout"


def test_required_requirement_with_no_match_is_valid_but_no_job_runs_it(project, invoke):
    unfurl = DATA / "required-unmatched"
    assert "Node template app is missing requirements: db" in (
        unfurl / "1-plan" / "console.txt").read_text()
    assert [(unfurl / step / "exitcode.txt").read_text().strip()
            for step in ("1-plan", "2-deploy")] == ["64", "64"]
    project.write((DATA / "required-unmatched.yaml").read_text())
    result = invoke("validate")
    assert result.exit_code == 0, result.output
    assert "warning: node template 'app' is missing requirements: db" in result.output
    for command in (["plan"], ["deploy", "--approve"]):
        result = invoke(*command)
        assert result.exit_code == 64, result.output
        assert "Unable to create job: node template 'app' is missing requirements: db" \
            in result.output
    assert project.jobs_tsv() == [] and len(project.commits()) == 2


def test_a_job_that_runs_none_of_its_operations_is_created(project, invoke):
    """As Unfurl 1.2.0 (required-unmatched-no-ops/README.md): a template with no operations
    is recorded pending; --template leaves an incomplete one out of the job."""
    unfurl = DATA / "required-unmatched-no-ops"
    project.write((unfurl / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    recorded = yaml.safe_load((unfurl / "ensemble.after-deploy.yaml").read_text())
    for name, record in recorded["status"]["instances"].items():
        assert project.status()[name]["readyState"] == record["readyState"], name
    with_operations = (unfurl / "ensemble.before.yaml").read_text().replace(
        "          type: needs.Db\n",
        "          type: needs.Db\n          interfaces:\n            Install:\n"
        "              check: echo checking\n            Standard:\n"
        "              create: echo lonely\n")
    project.write(with_operations)
    assert invoke("deploy", "--approve", "--template", "other").exit_code == 0
    result = invoke("check", "--approve")
    assert result.exit_code == 64, result.output
    assert "node template 'lonely' is missing requirements: database" in result.output


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
