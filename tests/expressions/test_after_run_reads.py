"""What an operation's ``resultTemplate`` and ``done`` read after it ran is part of its
digest, as in Unfurl 1.2.0 (tests/data/unfurl120/19-after-run-reads, recorded with it):
``{{ SELF.path }}`` there is ``::t::path`` in digestKeys, a query ``::other::path`` too,
grouped by instance; so a change of what they read reconfigures the operation."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "19-after-run-reads"


def rows(lines: list[str]) -> list[dict[str, str]]:
    found = []
    for line in lines:
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "target" in fields:
            found.append(fields)
    return found


def digests(found: list[dict[str, str]]) -> dict[str, tuple[str, str]]:
    return {r["target"]: (r["digestKeys"], r["digestValue"]) for r in found}


def test_reads_after_the_run_are_digested_as_unfurl_digests_them(project, invoke):
    project.write((DATA / "ensemble.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code in (0, 64)
    theirs = digests(rows((DATA / "jobs.tsv").read_text().splitlines()[:5]))
    ours = digests(rows(project.jobs_tsv()))
    assert ours == theirs
    assert ours["::t"][0] == "::t::path,::t::other,::other::path"
    assert ours["::s"][0] == "command,::s::path,::other::path"


def test_a_change_of_what_a_result_template_read_reconfigures_it(project, invoke):
    text = (DATA / "ensemble.yaml").read_text()
    project.write(text)
    invoke("deploy", "--approve")
    before = len(project.jobs_tsv())
    invoke("deploy", "--approve")
    again = rows(project.jobs_tsv()[before:])
    assert {"::t", "::s"}.isdisjoint(r["target"] for r in again)
    project.write(text.replace("            path: /x", "            path: /y"))
    before = len(project.jobs_tsv())
    invoke("deploy", "--approve")
    changed = rows(project.jobs_tsv()[before:])
    theirs = rows((DATA / "jobs.tsv").read_text().splitlines()[5:])
    assert [r["target"] for r in theirs] == ["::t", "::s"]
    assert {r["target"] for r in changed} >= {"::t", "::s"}
    assert digests([r for r in changed if r["target"] in ("::t", "::s")]) == digests(theirs)
