"""A job that did not simply succeed, as its page shows it: every task's real outcome
(blocked with what blocked it, cancelled, not run), the times its journal recorded, a
progress bar that counts what finished, and the job's head (duration, author, command,
options, plan, the resume that finished it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import Project, run_in_process
from tests.view.dashboard_helpers import cancelled, serving, tour_failure
from unfurl_lite.record.journal import journal_path, read_journal


def rows(body: str) -> dict[str, dict[str, str]]:
    """'target operation' -> the row's outcome, state, why and changeId."""
    found = {}
    for match in re.finditer(r'<tr[^>]* data-change-id="(\w*)" data-number="\d+" '
                             r'data-state="(\w*)" data-outcome="([\w ]+)">(.*?)</tr>', body,
                             re.DOTALL):
        change_id, state, outcome, row = match.groups()
        cells = [re.sub(r"<[^>]+>", " ", c).split()
                 for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)]
        why = re.search(r'<div class="why">(.*?)</div>', row, re.DOTALL)
        found[f"{cells[1][0]} {cells[2][0]}"] = {
            "changeId": change_id, "state": state, "outcome": outcome,
            "why": why.group(1).strip() if why else ""}
    return found


def test_the_tours_failed_deploy_shows_blocked_tasks_with_the_journals_times(tmp_path: Path):
    root = tmp_path / "tour"
    job = tour_failure(root)
    journal = read_journal(journal_path(root, job))
    with serving(root / "ensemble.yaml") as site:
        body = site.get(f"/jobs/{job}")
        data = json.loads(site.get(f"/api/jobs/{job}"))
    shown = rows(body)
    assert shown["db Standard.create"]["outcome"] == "ok"
    assert shown["app Standard.create"]["outcome"] == "failed"
    assert "cannot create state/app" in shown["app Standard.create"]["why"]
    for task in ("app Standard.configure", "web Standard.create", "web Standard.configure"):
        assert shown[task]["outcome"] == "blocked", task  # not its instance's pending/error
        assert shown[task]["why"].endswith("did not succeed"), task  # what blocked it
    assert "no journal" not in body and "one after another" not in body
    # every time on the page is the journal's: started tasks from start to end, blocked
    # ones at the moment they were blocked, none invented
    by_number = {t["number"]: t for t in journal.tasks}
    for task in data["tasks"]:
        recorded = by_number[task["number"]]
        assert _same_moment(task["start"], recorded["startedAt"]), task
        assert _same_moment(task["end"], recorded["endedAt"]), task
    assert [t["start"] is None for t in data["tasks"]] == [False, False, True, True, True]
    assert data["partition"] == {"ok": 1, "failed": 1, "blocked": 3, "cancelled": 0,
                                 "skipped": 0, "not run": 0}
    assert "5 tasks: 1 ok, 1 failed, 3 blocked, 0 cancelled, 0 skipped, 0 not run" in body
    assert "5 tasks (3 changed, 1 ok, 1 failed, 3 blocked, 0 unknown, 0 skipped)" in body
    # the bar counts what finished: 2 of 5, in the colours of ok and failed
    bar = re.search(r'<div class="progress" id="progress".*?</div>\s*</div>|'
                    r'<div class="progress" id="progress"[^>]*>.*?\n', body, re.DOTALL)
    assert bar and 'aria-valuenow="2"' in bar.group(0) and 'aria-valuemax="5"' in bar.group(0)
    assert re.findall(r'data-outcome="(\w+)" style="width: (\d+\.\d)%', bar.group(0)) == [
        ("ok", "20.0"), ("failed", "20.0")]
    # the timeline: bars for the two that ran, a marker for each blocked task
    timeline = re.search(r'<div class="timeline-box" id="timeline">(.*?)</div>', body,
                         re.DOTALL)
    assert timeline and timeline.group(1).count('<rect class="bar"') == 2
    assert timeline.group(1).count('class="marker"') == 3
    assert data["author"] == "Ada" and data["command"] == "unfurl deploy"
    assert data["duration"] is not None and data["duration"] > 0
    assert data["resume"] == "unfurl resume" and data["execution"] == "failed"  # Cloudify's
    assert "<code>unfurl resume</code>" in body


def _same_moment(shown: str | None, recorded: str | None) -> bool:
    from datetime import datetime

    if shown is None or recorded is None:
        return shown is recorded
    return abs((datetime.fromisoformat(shown.replace("Z", "+00:00"))
                - datetime.fromisoformat(recorded)).total_seconds()) < 0.001


def test_a_cancelled_jobs_unrun_tasks_are_cancelled_not_absent(project: Project):
    job = cancelled(project)
    with serving(project.ensemble) as site:
        body = site.get(f"/jobs/{job}")
        data = json.loads(site.get(f"/api/jobs/{job}"))
        history = site.get("/history")
    outcomes = [t["outcome"] for t in data["tasks"]]
    assert outcomes.count("ok") == 1 and outcomes.count("cancelled") == len(outcomes) - 1
    assert data["status"] == "cancelled" and data["execution"] == "cancelled"
    assert '<span class="execution" id="execution"' in body
    assert all(t["why"] == "the job was cancelled before this task started"
               for t in data["tasks"] if t["outcome"] == "cancelled")
    assert "absent" not in re.search(r'<table class="tasks".*?</table>', body,
                                     re.DOTALL).group(0)
    total = len(outcomes)
    assert 'aria-valuenow="1"' in body and f'aria-valuemax="{total}"' in body
    assert f"{total} tasks: 1 ok, 0 failed, 0 blocked, {total - 1} cancelled" in body
    row = re.search(rf'<tr data-change-id="{job}">(.*?)</tr>', history, re.DOTALL).group(1)
    assert ">cancelled<" in row and "unfurl deploy --jobs 1" in row
    assert re.search(r'class="duration">\d', row)


def test_a_resumed_job_links_to_the_resume_that_finished_it(project: Project):
    job = cancelled(project)
    result = run_in_process(project.root, "resume")
    assert result.returncode == 0, result.stderr + result.stdout
    lines = [line.split("\t")[0] for line in project.jobs_tsv()]
    resumer = [c for c in lines if c.endswith("0000")][-1]
    with serving(project.ensemble) as site:
        first = json.loads(site.get(f"/api/jobs/{job}"))
        second = json.loads(site.get(f"/api/jobs/{resumer}"))
        body = site.get(f"/jobs/{job}")
        history = site.get("/history")
    assert first["resumedBy"] == resumer and first["resume"] is None
    assert second["resumes"] == job
    assert f'Finished by <a class="changeid" href="/jobs/{resumer}#{resumer}">' in body
    row = re.search(rf'<tr data-change-id="{job}">(.*?)</tr>', history, re.DOTALL).group(1)
    assert "finished by <a" in row and resumer in row


def test_the_job_page_shows_the_plans_notes_and_the_command(project: Project):
    from tests.view.dashboard_helpers import deployed

    deployed(project)
    project.write(project.ensemble.read_text().replace("echo configured", "echo reconfigured"))
    result = run_in_process(project.root, "deploy", "--approve", "--jobs", "2")
    assert result.returncode == 0, result.stderr + result.stdout
    job = project.jobs_tsv()[-1].split("\t")[0][:8] + "0000"
    with serving(project.ensemble) as site:
        data = json.loads(site.get(f"/api/jobs/{job}"))
        body = site.get(f"/jobs/{job}")
    assert data["command"] == "unfurl deploy --jobs 2"
    assert "app: skipped: already ok" in data["plan"]
    assert "cache: skipped: already ok" in data["plan"]
    assert "<li>cache: skipped: already ok</li>" in body


def test_the_equivalent_command_spells_each_workflows_options():
    from unfurl_lite.view.dashboard.jobpage import equivalent_command

    assert equivalent_command("deploy", {"instance_names": ["a", "b"], "force": True},
                              {"jobs": 2, "commit": False}) == \
        "unfurl deploy --instance a --instance b --force --jobs 2 --no-commit"
    assert equivalent_command("run", {"command": ["echo", "hi there"]}, {}) == \
        "unfurl run -- echo 'hi there'"
    assert equivalent_command("scale", {"scalable_entity_name": "web", "delta": 2,
                                        "rollback_if_failed": False}, {}) == \
        "unfurl scale -p scalable_entity_name=web -p delta=2 -p rollback_if_failed=false"
    assert equivalent_command("execute_operation", {"operation": "Standard.configure",
                                                    "node_ids": ["app"]}, {}) == \
        "unfurl execute-operation -p operation=Standard.configure -p 'node_ids=[\"app\"]'"
    assert equivalent_command("nightly", {"instance_names": ["db"]}, {}) == \
        "unfurl run --workflow nightly --instance db"
