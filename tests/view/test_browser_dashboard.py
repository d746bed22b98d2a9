"""The dashboard in a real headless Chromium (Debian's, driven by Playwright for Python):
the topology picture and the timeline are drawn, and a live job's progress moves."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Project, git
from tests.view.dashboard_helpers import (
    cancelled,
    deployed,
    serving,
    tour_failure,
    waiting_ensemble,
)

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs Debian's chromium at /usr/bin/chromium "
                              "(apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs playwright (pip install playwright)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.errors = []  # type: ignore[attr-defined]
    opened.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
    opened.on("pageerror", lambda e: opened.errors.append(str(e)))
    yield opened
    context.close()


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return box


def test_the_overview_draws_the_topology(project: Project, page: Any):
    deployed(project)
    with serving(project.ensemble) as site:
        page.goto(f"http://127.0.0.1:{site.port}/")
        picture = page.locator("#topology svg")
        box = _box(picture)
        assert box["width"] > 50 and box["height"] > 50
        nodes = page.locator("#topology svg g.node")
        assert nodes.count() == 3
        for index in range(3):
            node_box = _box(nodes.nth(index))
            assert node_box["width"] > 0 and node_box["height"] > 0
        assert page.locator("#instances tbody tr").count() == 3
        page.goto(f"http://127.0.0.1:{site.port}/?view=instances")
        assert _box(page.locator("#topology svg"))["width"] > 0
    assert page.errors == []  # no script error, no blocked resource


def test_the_job_page_draws_the_timeline(project: Project, page: Any):
    deployed(project)
    job = project.jobs_tsv()[0].split("\t")[0]
    with serving(project.ensemble) as site:
        page.goto(f"http://127.0.0.1:{site.port}/jobs/{job}")
        assert _box(page.locator("#timeline svg"))["width"] > 100
        bars = page.locator("#timeline svg rect.bar")
        assert bars.count() == 4
        lefts = []
        for index in range(4):
            box = _box(bars.nth(index))
            assert box["width"] > 0 and box["height"] > 0
            lefts.append(box["x"])
        assert lefts == sorted(lefts)  # rows in the order the tasks started
        assert page.locator("#tasks tbody tr").count() == 4
        assert "REDACTED" in page.locator("#tasks").inner_text()
    assert page.errors == []


def _node(page: Any, name: str) -> Any:
    """The topology picture's node of ``name`` (Graphviz's and the built-in drawing's)."""
    return page.locator("#topology svg g.node").filter(
        has=page.locator(f"title:text-matches('^{name}( |$)')"))


def test_a_live_job_from_start_to_end_with_the_overview_open(project: Project, browser: Any,
                                                            tmp_path: Path):
    """The overview follows the job as its tasks finish (before anything is recorded), and
    the job's page ends as the recorded page shows the job, without a reload."""
    from unfurl_lite.view.diagram import PALETTE

    flag = tmp_path / "go"
    project.write(waiting_ensemble(flag))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    overview, job = context.new_page(), context.new_page()
    for opened in (overview, job):
        opened.on("console", lambda m: m.type == "error" and errors.append(m.text))
        opened.on("pageerror", lambda e: errors.append(str(e)))
    with serving(project.ensemble) as site:
        overview.goto(f"http://127.0.0.1:{site.port}/")
        assert "No job has run yet" in overview.locator("#last-job").inner_text()
        deploy = subprocess.Popen(
            [sys.executable, "-m", "unfurl_lite", "deploy", "--approve"], cwd=project.root,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            link = overview.locator("#running a")  # the banner announces the running job
            link.wait_for(timeout=60_000)
            change_id = link.inner_text()
            job.goto(f"http://127.0.0.1:{site.port}/jobs/{change_id}")
            job.wait_for_selector("#job[data-events]", timeout=60_000)
            job.evaluate("""() => {
                window.seen = [];
                const note = () => {
                    const bar = document.getElementById("progress");
                    if (bar) { window.seen.push(Number(bar.getAttribute("aria-valuenow"))); }
                };
                note();
                new MutationObserver(note).observe(document.getElementById("main") ||
                    document.body, {attributes: true, subtree: true, childList: true});
            }""")
            # app waits for the flag: db is done, and the overview says so while the job runs
            db_row = overview.locator("#instances tr[data-instance=db] .badge")
            overview.locator("#instances tr[data-instance=db] .badge:text-is('ok')").wait_for(
                timeout=60_000)
            overview.locator(f"#last-job [data-running='{change_id}']").wait_for(timeout=60_000)
            assert PALETTE["ok"] in _node(overview, "db").first.inner_html()
            assert PALETTE["pending"] in _node(overview, "app").first.inner_html()
            assert deploy.poll() is None  # still running: this came from its journal
            assert "started" in job.locator("#job .badge").first.inner_text()
            job.locator("#tasks tr[data-state=started]").first.wait_for(timeout=60_000)
            flag.touch()  # the slow task may end now
            job.locator("body[data-live=done]").wait_for(timeout=60_000)
            overview.locator(f"#recorded-job a.changeid:text-is('{change_id}')").wait_for(
                timeout=60_000)
            overview.locator("#instances tr[data-instance=app] .badge:text-is('ok')").wait_for(
                timeout=60_000)
            assert db_row.inner_text() == "ok"
            assert PALETTE["ok"] in _node(overview, "app").first.inner_html()
            assert overview.locator("#last-job [data-running]").count() == 0
            # the job's page is the recorded page now: status, commit, every task's reason,
            # duration and output; no live stream left
            head = job.locator("#job")
            seen = job.evaluate("window.seen")
            badge = head.locator(".badge").first.inner_text()
            commit = head.locator(".commit").inner_text()
            partition = job.locator("#partition").inner_text()
            reasons = job.locator("#tasks tbody tr td:nth-child(4)").all_inner_texts()
            outputs = job.locator("#tasks pre.output").count()
            streams = job.locator("[data-events]").count()
        finally:
            flag.touch()
            deploy.communicate(timeout=120)
    context.close()
    assert deploy.returncode == 0
    recorded = git(project.root, "log", "-1", "--format=%H")
    assert badge == "ok" and recorded.startswith(commit) and len(commit) == 12
    assert partition == "4 tasks: 4 ok, 0 failed, 0 blocked, 0 cancelled, 0 skipped, 0 not run"
    assert reasons == ["add"] * 4 and outputs == 4 and streams == 0
    assert seen == sorted(seen) and seen[0] < 4 and seen[-1] == 4 and len(set(seen)) >= 2
    assert errors == []


def test_a_blocked_jobs_page_shows_what_blocked_each_task(tmp_path: Path, page: Any):
    root = tmp_path / "tour"
    job = tour_failure(root)
    with serving(root / "ensemble.yaml") as site:
        page.goto(f"http://127.0.0.1:{site.port}/jobs/{job}")
        blocked = page.locator("#tasks tr[data-outcome=blocked]")
        assert blocked.count() == 3
        for index in range(3):
            row = blocked.nth(index)
            assert row.locator(".badge").inner_text() == "blocked"
            assert row.locator(".why").inner_text().endswith("did not succeed")
            assert _box(row)["height"] > 0
        markers = page.locator("#timeline svg g.unstarted path.marker")
        assert markers.count() == 3
        bars = page.locator("#timeline svg rect.bar")
        assert bars.count() == 2
        # each marker sits after the failed create ended: when the journal says it was blocked
        failed_end = max(_box(bars.nth(i))["x"] + _box(bars.nth(i))["width"] for i in range(2))
        assert all(_box(markers.nth(i))["x"] >= failed_end - 8 for i in range(3))
        fills = page.locator("#progress .fill")
        assert [fills.nth(i).get_attribute("data-outcome") for i in range(fills.count())] == \
            ["ok", "failed"]
        track = _box(page.locator("#progress"))["width"]
        assert abs(sum(_box(fills.nth(i))["width"] for i in range(2)) - 0.4 * track) < 3
        text = page.locator("main").inner_text()
        assert "5 tasks: 1 ok, 1 failed, 3 blocked, 0 cancelled, 0 skipped, 0 not run" in text
        assert "no journal" not in text and "pending" not in page.locator(
            "#tasks td.outcome").all_inner_texts()
    assert page.errors == []


def test_a_cancelled_jobs_page(project: Project, page: Any):
    job = cancelled(project)
    with serving(project.ensemble) as site:
        page.goto(f"http://127.0.0.1:{site.port}/jobs/{job}")
        assert page.locator("#job .badge").first.inner_text() == "cancelled"
        rows = page.locator("#tasks tbody tr")
        outcomes = [rows.nth(i).get_attribute("data-outcome") for i in range(rows.count())]
        assert outcomes[0] == "ok" and set(outcomes[1:]) == {"cancelled"}
        said = page.locator("#timeline svg g.unstarted text.outcome").all_text_contents()
        assert len(said) == len(outcomes) - 1 and all(t.startswith("cancelled") for t in said)
        fill = _box(page.locator("#progress .fill").first)["width"]
        track = _box(page.locator("#progress"))["width"]
        assert abs(fill - track / len(outcomes)) < 3  # one finished task, not a full bar
        assert "absent" not in page.locator("#tasks").inner_text()
        assert "unfurl resume" in page.locator("#resume-hint").inner_text()
    assert page.errors == []


def test_the_overview_shows_a_new_job_once_it_is_recorded(project: Project, page: Any):
    from tests.conftest import run_in_process
    from tests.view.dashboard_helpers import ENSEMBLE

    project.write(ENSEMBLE)
    with serving(project.ensemble) as site:
        page.goto(f"http://127.0.0.1:{site.port}/")
        assert "No job has run yet" in page.locator("#last-job").inner_text()
        page.locator("body[data-page=overview]").wait_for(timeout=60_000)
        assert run_in_process(project.root, "deploy", "--approve").returncode == 0
        job = project.jobs_tsv()[0].split("\t")[0]
        # the page reloads itself when jobs.tsv changes: no refresh by the test
        page.locator(f"#recorded-job a.changeid:has-text('{job}')").wait_for(timeout=60_000)
        assert page.locator("#instances .badge:has-text('ok')").count() == 3
    assert page.errors == []
