"""A running job seen through the dashboard: server-sent events from its journal move its
progress and end with its summary."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, Project
from tests.view.dashboard_helpers import deployed, read_events, serving, waiting_ensemble


def start_deploy(project: Project) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", "deploy", "--approve"], cwd=project.root,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def test_a_finished_jobs_stream_gives_its_progress_and_summary_then_ends(project):
    deployed(project)
    job = project.jobs_tsv()[0].split("\t")[0]
    with serving(project.ensemble) as site:
        events = list(read_events(site, f"/jobs/{job}/events"))
    assert [name for name, _ in events] == ["progress", "summary"]
    assert events[0][1]["done"] == events[0][1]["total"] == 4
    assert events[1][1]["status"] == "ok" and events[1][1]["summary"].startswith("4 tasks")


@pytest.mark.slow  # a real deploy in its own process, ~3 s of waiting on it
def test_a_running_job_streams_its_progress_and_ends_with_its_summary(project, tmp_path):
    flag = tmp_path / "go"
    project.write(waiting_ensemble(flag))
    deploy = start_deploy(project)
    try:
        with serving(project.ensemble) as site:
            job = None
            for name, data in read_events(site, "/events"):  # the overview's stream
                if name == "jobs" and data["running"]:
                    job = data["running"][0]
                    break
            assert job and job["workflow"] == "deploy" and job["total"] == 4
            page = site.get(f"/jobs/{job['changeId']}")  # its page, while it runs
            assert f'data-events="/jobs/{job["changeId"]}/events"' in page
            assert page.count("data-number=") == 4  # its tasks are listed before they run
            seen = []
            for name, data in read_events(site, f"/jobs/{job['changeId']}/events"):
                seen.append((name, data))
                if name == "progress":
                    states = {t["target"]: t["state"] for t in data["tasks"]}
                    if states.get("app") == "started":
                        flag.touch()  # let the slow task end
                if name == "summary":
                    break
            progress = [d for n, d in seen if n == "progress"]
            done = [p["done"] for p in progress]
            assert done == sorted(done) and done[0] < 4 and done[-1] == 4  # it moved
            assert len(set(done)) >= 2
            name, summary = seen[-1]
            assert name == "summary" and summary["status"] == "ok"
            assert summary["summary"].startswith("4 tasks (3 changed, 4 ok")
            # once recorded, the same URL is the recorded job's page
            assert "data-events" not in site.get(f"/jobs/{job['changeId']}")
    finally:
        flag.touch()
        _, err = deploy.communicate(timeout=120)
    assert deploy.returncode == 0, err


@pytest.mark.slow  # kills a real deploy
def test_a_killed_job_ends_its_stream_saying_resume_continues_it(project, tmp_path):
    import signal

    flag = tmp_path / "go"
    project.write(waiting_ensemble(flag))
    deploy = start_deploy(project)
    try:
        with serving(project.ensemble) as site:
            job = None
            for name, data in read_events(site, "/events"):
                if name == "jobs" and data["running"]:
                    job = data["running"][0]["changeId"]
                    break
            assert job
            last = None
            for name, data in read_events(site, f"/jobs/{job}/events"):
                if name == "progress" and any(t["target"] == "app" and t["state"] == "started"
                                              for t in data["tasks"]):
                    deploy.send_signal(signal.SIGKILL)
                    deploy.wait(timeout=60)
                if name == "summary":
                    last = data
                    break
            assert last is not None and "unfurl resume" in last["summary"]
            assert last["status"] in ("interrupted", "started")
            assert "is running" not in site.get("/")
            page = site.get(f"/jobs/{job}")  # not in jobs.tsv: its page comes from the journal
            assert "interrupted" in page and "unfurl resume" in page
            assert "data-events" not in page
    finally:
        flag.touch()
        deploy.kill()
        deploy.communicate(timeout=60)


def test_the_projects_stream_says_which_jobs_run(project):
    deployed(project)
    with serving(project.ensemble) as site:
        name, data = next(iter(read_events(site, "/events")))
    assert name == "jobs" and data["running"] == []
