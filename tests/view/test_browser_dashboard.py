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

from tests.conftest import ROOT, Project
from tests.view.dashboard_helpers import deployed, serving, waiting_ensemble

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


def test_a_live_jobs_progress_moves_and_ends_with_its_summary(project: Project, page: Any,
                                                              tmp_path: Path):
    flag = tmp_path / "go"
    project.write(waiting_ensemble(flag))
    with serving(project.ensemble) as site:
        page.goto(f"http://127.0.0.1:{site.port}/")
        deploy = subprocess.Popen(
            [sys.executable, "-m", "unfurl_lite", "deploy", "--approve"], cwd=project.root,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            link = page.locator("#running a")  # the overview announces the running job
            link.wait_for(timeout=60_000)
            link.click()
            page.wait_for_selector("#job[data-events]")
            page.evaluate("""() => {
                window.seen = [];
                const bar = document.getElementById("progress");
                const note = () => window.seen.push(Number(bar.getAttribute("aria-valuenow")));
                note();
                new MutationObserver(note).observe(bar, {attributes: true});
            }""")
            # locators, not wait_for_function: the page's CSP forbids evaluating strings
            page.locator("body[data-live=progress]").wait_for(timeout=60_000)
            page.locator("#tasks tr[data-state=started]").first.wait_for(timeout=60_000)
            flag.touch()  # the slow task may end now
            page.locator("body[data-live=done]").wait_for(timeout=60_000)
            seen = page.evaluate("window.seen")
            summary = page.locator("#summary").inner_text()
            # once recorded, the timeline and the tasks (with their output) are redrawn
            timeline_bars = page.locator("#timeline svg rect.bar").count()
            outputs = page.locator("#tasks pre.output").count()
        finally:
            flag.touch()
            deploy.communicate(timeout=120)
    assert deploy.returncode == 0
    assert timeline_bars == 4 and outputs == 4
    assert seen == sorted(seen) and seen[0] < 4 and seen[-1] == 4 and len(set(seen)) >= 2
    assert summary.startswith("4 tasks (3 changed, 4 ok") and "(ok)" in summary
    assert page.errors == []


def test_the_overview_shows_a_new_job_once_it_is_recorded(project: Project, page: Any):
    from tests.conftest import run_in_process
    from tests.view.dashboard_helpers import ENSEMBLE

    project.write(ENSEMBLE)
    with serving(project.ensemble) as site:
        page.goto(f"http://127.0.0.1:{site.port}/")
        assert "No job has run yet" in page.locator("#last-job").inner_text()
        page.locator("body[data-page=overview]").wait_for()
        assert run_in_process(project.root, "deploy", "--approve").returncode == 0
        job = project.jobs_tsv()[0].split("\t")[0]
        # the page reloads itself when jobs.tsv changes: no refresh by the test
        page.locator(f"#last-job a.changeid:has-text('{job}')").wait_for(timeout=60_000)
        assert page.locator("#instances .badge:has-text('ok')").count() == 3
    assert page.errors == []
