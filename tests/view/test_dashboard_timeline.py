"""The job page's Gantt chart: bars where the tasks ran, and the critical path outlined."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.conftest import ROOT, Project
from tests.view.dashboard_helpers import serving
from unfurl_lite.view.dashboard.timeline import Bar, critical_path, timeline_svg

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def bar(key: str, start: float, end: float | None, status: str = "ok") -> Bar:
    return Bar(key, f"task {key}", status, T0 + timedelta(seconds=start),
               T0 + timedelta(seconds=end) if end is not None else None)


def test_the_critical_path_is_the_chain_that_ends_last():
    # a (0-2) and b (0-5) run in parallel; c (2-3) follows a; d (5-6) follows b
    bars = [bar("a", 0, 2), bar("b", 0, 5), bar("c", 2, 3), bar("d", 5, 6)]
    assert critical_path(bars) == {"b", "d"}


def test_bars_are_placed_and_sized_by_time_and_parallel_tasks_overlap():
    svg = timeline_svg([bar("a", 0, 2), bar("b", 0, 4), bar("c", 4, 8, status="error")])
    rects = {key: (float(x), float(w)) for key, x, w in re.findall(
        r'data-change-id="(\w)" data-outcome="\w+">.*?<rect class="bar" x="([\d.]+)" '
        r'y="[\d.]+" width="([\d.]+)"',
        svg, re.DOTALL)}
    assert rects["a"][0] == rects["b"][0]  # started together
    assert abs(rects["b"][1] - 2 * rects["a"][1]) < 0.2  # twice as long
    assert abs(rects["c"][0] - (rects["b"][0] + rects["b"][1])) < 0.2  # begins as b ends
    assert 'class="task critical" data-change-id="c" data-outcome="error"' in svg
    assert 'class="task" data-change-id="a" data-outcome="ok"' in svg
    assert "c: error, 4.000s, on the critical path" in svg


def test_a_running_task_reaches_now_and_says_so():
    svg = timeline_svg([bar("a", 0, 1), bar("b", 1, None)], now=T0 + timedelta(seconds=3))
    assert "task b: ok, 2.000s (running)" in svg


def test_labels_are_escaped():
    svg = timeline_svg([Bar("k", '<script>alert("x")</script>', "ok", T0, T0)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_no_times_no_chart():
    assert timeline_svg([Bar("k", "x", "ok", None, None)]) == ""


def test_a_job_recorded_by_unfurl_has_its_page(project: Project):
    """Unfurl 1.2.0's records (no journal, no task times): the tasks, and no chart."""
    captured = ROOT / "tests/data/unfurl120/01-deploy-redeploy-undeploy/1-deploy"
    shutil.copy(captured / "ensemble.after.yaml", project.root / "ensemble.yaml")
    shutil.copy(captured / "jobs.tsv", project.root / "jobs.tsv")
    for folder in ("jobs", "changes"):
        shutil.copytree(captured / folder, project.root / folder)
    with serving(Path(project.ensemble)) as site:
        body = site.get("/jobs/A6BMNAKo0000")
        history = site.get("/history")
    assert "A6BMNAKo0001" in body and "A6BMNAKo0002" in body
    assert "creating db" in body and "Standard.create" not in body.split("<h2>Tasks")[0]
    assert "has no journal" in body and "<svg" not in body.split("<h2>Tasks")[0]
    assert "A6BMNAKo0000" in history and "deploy" in history
