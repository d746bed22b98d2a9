"""Issue 18 item 7: an ensemble with a ``changes:`` list and no ``jobsLog`` keeps its job
log inline, as Unfurl 1.2.0 does: each task is appended to ``changes:``, no jobs.tsv or
``changes/`` file is written, and planning, history and resume read that log. Checked
against what Unfurl 1.2.0 wrote for the same steps (tests/data/unfurl120/16-inline-changes-log)
and, opt-in (``UNFURL120_VENV``), by Unfurl 1.2.0 reading what was written here."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Project, git, safe_load, unfurl120

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "16-inline-changes-log"
#: what differs between two runs of the same step
VOLATILE = ("changeId", "previousId")


def theirs(step: str) -> dict:
    return safe_load((DATA / "inline" / step / "ensemble.after.yaml").read_text())


def ours(project: Project) -> dict:
    return safe_load(project.ensemble.read_text())


def stable(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in entries]


def edit_input(project: Project, value: str) -> None:
    text = project.ensemble.read_text()
    project.write(text.replace("greeting: hello", f"greeting: {value}"))


@pytest.fixture
def inline(project: Project) -> Project:
    project.write((DATA / "inline.yaml").read_text())
    return project


def test_deploy_appends_tasks_to_the_inline_log_as_unfurl_does(inline, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    doc, unfurl = ours(inline), theirs("1-deploy")
    assert stable(doc["changes"]) == stable(unfurl["changes"])
    assert "jobsLog" not in doc and "jobsLog" not in unfurl
    assert "changelog" not in doc["lastJob"] and "changelog" not in unfurl["lastJob"]
    assert not (inline.root / "jobs.tsv").exists() and not (inline.root / "changes").exists()
    assert {n: r["readyState"] for n, r in doc["status"]["instances"].items()} == {
        n: r["readyState"] for n, r in unfurl["status"]["instances"].items()}
    committed = git(inline.root, "show", "--name-only", "--format=", "HEAD").split()
    assert "ensemble.yaml" in committed and "jobs.tsv" not in committed
    assert git(inline.root, "status", "--porcelain").strip() == ""


def test_the_inline_log_is_the_baseline_of_change_detection(inline, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    commits = inline.commits()
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0 and "Nothing to do." in theirs_console("2-deploy-again")
    assert inline.commits() == commits  # nothing ran: nothing recorded
    edit_input(inline, "bonjour")
    plan = invoke("plan")
    assert "reason: reconfigure" in theirs_console("3-plan-input-changed")
    assert "reconfigure" in plan.output and "app" in plan.output
    assert invoke("deploy", "--approve").exit_code == 0
    last = ours(inline)["changes"][-1]
    unfurl = theirs("4-deploy-input-changed")["changes"][-1]
    assert stable([last]) == stable([unfurl])
    # as Unfurl: a reconfigure that reports no change links to nothing and leaves the
    # instance's lastConfigChange at the configure it repeated
    assert "previousId" not in last and "previousId" not in unfurl
    app = ours(inline)["status"]["instances"]["app"]
    assert app["lastConfigChange"] == ours(inline)["changes"][1]["changeId"]
    assert len(ours(inline)["changes"]) == len(theirs("4-deploy-input-changed")["changes"]) == 3


def theirs_console(step: str) -> str:
    return (DATA / "inline" / step / "console.txt").read_text()


def test_undeploy_logs_inline_too(inline, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    assert invoke("undeploy", "--approve").exit_code == 0
    last, unfurl = ours(inline)["changes"][-1], theirs("5-undeploy")["changes"][-1]
    assert stable([last]) == stable([unfurl])
    assert ours(inline)["status"]["instances"]["db"]["readyState"] == {
        "local": "absent", "state": "deleted"}


def test_history_and_show_read_the_inline_log(inline, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    edit_input(inline, "bonjour")
    assert invoke("deploy", "--approve").exit_code == 0
    history = invoke("history")
    assert history.exit_code == 0
    changes = ours(inline)["changes"]
    jobs = sorted({c["changeId"][:8] for c in changes})
    assert len(jobs) == 2 and all(job in history.output for job in jobs)
    # the first job's line comes from its record in jobs/ (the inline log has no job lines)
    assert "2 tasks (2 changed, 2 ok, 0 failed" in history.output
    task = changes[-1]["changeId"]
    shown = invoke("show", task)
    assert shown.exit_code == 0 and "reason: reconfigure" in shown.output
    assert invoke("history", "--instance", "db").output.count("deploy") == 1


def test_an_ensemble_unfurl_deployed_with_an_inline_log_is_read(project, invoke):
    """What Unfurl 1.2.0 wrote: its instances are ok, its digests are the baseline."""
    project.write((DATA / "inline" / "1-deploy" / "ensemble.after.yaml").read_text())
    assert invoke("validate").exit_code == 0
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0 and "skipped: already ok" in again.output
    assert len(project.commits()) == 2  # nothing ran, nothing recorded
    history = invoke("history")
    unfurl_job = theirs("1-deploy")["lastJob"]
    assert unfurl_job["changeId"] in history.output and unfurl_job["summary"] in history.output
    edit_input(project, "bonjour")
    assert invoke("deploy", "--approve").exit_code == 0
    doc = ours(project)
    assert len(doc["changes"]) == 3 and doc["changes"][-1]["reason"] == "reconfigure"
    assert "previousId" not in doc["changes"][-1]  # as Unfurl: the reconfigure changed nothing
    assert doc["status"]["instances"]["app"]["lastConfigChange"] == (
        theirs("1-deploy")["changes"][1]["changeId"])


def test_changes_with_a_jobs_log_keeps_logging_to_jobs_tsv(project, invoke):
    text = (DATA / "inline.yaml").read_text() + "jobsLog: jobs.tsv\n"
    project.write(text)
    assert invoke("deploy", "--approve").exit_code == 0
    assert ours(project)["changes"] == [] and len(project.jobs_tsv()) == 3


def test_a_changes_section_that_is_not_a_list_is_refused(project, invoke):
    project.write((DATA / "inline.yaml").read_text().replace("changes: []", "changes: oops"))
    result = invoke("validate")
    assert result.exit_code == 1 and "changes" in result.output


@pytest.mark.unfurl120
@pytest.mark.skipif(not unfurl120().exists(), reason="Unfurl 1.2.0 not installed (UNFURL120_VENV)")
def test_unfurl_reads_the_inline_log_written_here(inline, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    edit_input(inline, "bonjour")
    env = {**os.environ, "HOME": str(inline.root)}

    def unfurl(*args: str) -> str:
        done = subprocess.run([str(unfurl120()), "--home", "", *args], cwd=inline.root,
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)

    plan = unfurl("plan", "ensemble.yaml")
    assert "operation configure (reason: reconfigure)" in plan
    assert "operation create" not in plan  # db is ok, and its digest unchanged
    unfurl("deploy", "--approve", "--dirty=ok", "--commit", "ensemble.yaml")
    doc = ours(inline)
    assert len(doc["changes"]) == 3 and doc["changes"][-1]["reason"] == "reconfigure"
    assert "jobsLog" not in doc
    before = inline.commits()
    again = invoke("deploy", "--approve")  # and we read what Unfurl appended
    assert again.exit_code == 0 and "already ok" in again.output
    assert inline.commits() == before


def test_a_killed_job_is_resumed_into_the_inline_log(project, invoke):
    from tests.execution_helpers import chain_ensemble, kill9, start_unfurl, wait_for

    marks = project.root / "marks"
    marks.mkdir()
    (project.root / ".gitignore").write_text("jobs/*.log\nmarks/\n")
    project.write(chain_ensemble(["a", "b"], {"b": ["a"]}, marks, sleep=0.2)
                  + "changes: []\n")
    git(project.root, "add", ".gitignore")
    git(project.root, "commit", "-q", "-m", "ignore marks")
    process = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: (marks / "b.start").exists(), process)
    kill9(process)
    resumed = invoke("resume")  # records the killed job; b was running: it stays failed
    assert "Recorded interrupted job" in resumed.output
    doc = ours(project)
    assert [(c["target"], c["readyState"]["local"]) for c in doc["changes"]] == [
        ("::a", "ok"), ("::b", "unknown")]
    assert len({c["changeId"][:8] for c in doc["changes"]}) == 1
    assert "jobsLog" not in doc and not (project.root / "jobs.tsv").exists()
    again = invoke("resume")  # b failed (Cloudify: failed goes back to pending): it runs
    assert again.exit_code == 0, again.output
    assert [c["target"] for c in ours(project)["changes"]] == ["::a", "::b", "::b"]
    assert project.local("a") == project.local("b") == "ok"
    assert invoke("resume").exit_code != 0  # nothing left to resume
    assert "Nothing to do" in invoke("deploy", "--approve").output
