"""Queries, functions and filters in a real deploy, against what Unfurl 1.2.0 recorded
for the same ensemble (tests/data/unfurl120/18-queries, captured with capture.sh): the
attributes a resultTemplate computed with them, the digest of an operation whose command
read other instances through queries, and a second deploy with nothing to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import safe_load

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "18-queries"


def instances(document: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def walk(level: dict[str, Any]) -> None:
        for name, record in (level or {}).items():
            found[name] = record
            walk(record.get("instances") or {})

    walk(document["status"]["instances"])
    return found


def tsv(text: str) -> dict[str, dict[str, str]]:
    rows = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "target" in fields:
            rows[f"{fields['target']}/{fields['operation']}"] = fields
    return rows


def test_query_results_are_unfurls(project, invoke):
    project.write((DATA / "queries.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    theirs = safe_load((DATA / "queries" / "1-deploy" / "ensemble.after.yaml").read_text())
    ours = safe_load(project.ensemble.read_text())
    assert instances(ours)["app"]["attributes"] == instances(theirs)["app"]["attributes"]
    assert instances(ours)["app"]["attributes"]["services"] == ["db", "app"]


def test_an_operation_reading_through_queries_has_unfurls_digest(project, invoke):
    project.write((DATA / "queries.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    theirs = tsv((DATA / "queries" / "1-deploy" / "jobs.tsv").read_text())["::app/create"]
    ours = tsv("\n".join(project.jobs_tsv()))["::app/create"]
    assert ours["digestKeys"] == theirs["digestKeys"] == "command,::server::size,::db::port"
    assert ours["digestValue"] == theirs["digestValue"]
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0 and "Nothing to do." in again.output
    assert "Nothing to do." in (DATA / "queries" / "2-deploy-again" / "console.txt").read_text()
