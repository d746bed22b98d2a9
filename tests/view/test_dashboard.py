"""`unfurl serve`'s pages over real HTTP: a server on a free port in a thread, in front of a
real deployed project (git repo, jobs.tsv, job files, journals)."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import Project, copy_prepared, git, module_project
from tests.view.dashboard_helpers import SECRET, Running, deployed, serving


@pytest.fixture(scope="module")
def deployed_once(tmp_path_factory: pytest.TempPathFactory, template_repo: Path) -> Path:
    return deployed(module_project(tmp_path_factory, template_repo), times=1).root


@pytest.fixture
def site(project: Project, deployed_once: Path) -> Running:
    """A server in front of this test's own copy of the deployed project."""
    with serving(copy_prepared(deployed_once, project).ensemble) as running:
        yield running


def job_ids(project: Project) -> list[str]:
    return [line.split("\t")[0] for line in project.jobs_tsv() if "\tstatus=" in line
            and line.split("\t")[0].endswith("0000")]


class Links(HTMLParser):
    """Every URL a page makes the browser load or offers as a link."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "xlink:href") and value is not None:
                self.urls.append(value)


def urls_of(body: str) -> list[str]:
    parser = Links()
    parser.feed(body)
    return parser.urls


def test_overview_shows_each_instance_the_last_job_and_the_topology(project, site):
    body = site.get("/")
    last = job_ids(project)[-1]
    for name in ("db", "app", "cache"):
        row = re.search(rf'<tr data-instance="{name}">(.*?)</tr>', body, re.DOTALL)
        assert row, name
        assert ">ok<" in row.group(1)  # status
        assert "configured" in row.group(1) or "created" in row.group(1)  # node state
        assert f'href="/jobs/{last}#{last[:8]}' in row.group(1)  # last change, linked
    assert 'id="last-job"' in body and last in body and "deploy" in body
    assert "4 tasks (3 changed, 4 ok" in body  # Unfurl: one change per instance
    picture = re.search(r'<div class="picture" id="topology">(.*?)</div>', body, re.DOTALL)
    assert picture and picture.group(1).lstrip().startswith("<svg")
    assert "<?xml" not in body and "<!DOCTYPE svg" not in body


def test_overview_shows_drift_and_effective_status(project, site):
    text = project.ensemble.read_text().replace('echo configured', 'echo reconfigured')
    project.write(text)
    body = site.get("/")
    row = re.search(r'<tr data-instance="db">(.*?)</tr>', body, re.DOTALL)
    assert row and 'class="drifted"' in row.group(1) and "configure" in row.group(1)


def test_history_lists_every_job_newest_first_with_commit(project):
    deployed(project, times=1)
    from tests.conftest import run_in_process

    assert run_in_process(project.root, "undeploy", "--approve").returncode == 0
    with serving(project.ensemble) as site:
        body = site.get("/history")
    ids = job_ids(project)
    shown = re.findall(r'<tr data-change-id="(\w+)">', body)
    assert shown == list(reversed(ids))
    for job_id in ids:
        commit = git(project.root, "log", "--format=%H", "-1", "--grep", job_id).strip()
        row = re.search(rf'<tr data-change-id="{job_id}">(.*?)</tr>', body, re.DOTALL)
        assert row and commit[:12] in row.group(1)
    assert "undeploy" in body and "deploy" in body


def test_history_filters_by_instance(project):
    deployed(project)
    from tests.conftest import run_in_process

    result = run_in_process(project.root, "undeploy", "--approve")  # deletes the cache only
    assert result.returncode == 0, result.stderr
    with serving(project.ensemble) as site:
        everything = re.findall(r'<tr data-change-id="(\w+)">', site.get("/history"))
        only_db = re.findall(r'<tr data-change-id="(\w+)">', site.get("/history?instance=db"))
        cache = re.findall(r'<tr data-change-id="(\w+)">', site.get("/history?instance=cache"))
        nothing = site.get("/history?instance=dbb")
        status, _, api_body = site.request("/api/history?instance=dbb")
    assert len(everything) == 2 and only_db == everything[1:] and cache == everything
    assert "no instance named &#39;dbb&#39;" in nothing and "did you mean &#39;db&#39;?" in nothing
    assert status == 404 and "did you mean" in api_body


def test_job_page_lists_every_task_with_its_details(project, site):
    job = job_ids(project)[-1]
    body = site.get(f"/jobs/{job}")
    rows = dict(re.findall(r'<tr id="(\w+)" data-change-id="\w+" data-number="\d+" '
                           r'data-state="\w+" data-outcome="[\w ]+">(.*?)</tr>', body, re.DOTALL))
    assert sorted(rows) == [f"{job[:8]}000{n}" for n in range(1, 5)]
    create_db = next(r for r in rows.values() if "db</a>" in r and "Standard.create" in r)
    cells = [re.sub(r"<[^>]+>", "", c).strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", create_db, re.DOTALL)]
    assert cells[1:8] == ["db", "Standard.create", "add", "ok", "ok", "1", "local"]
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", cells[8])  # started (UTC)
    assert re.fullmatch(r"\d+\.\d{3}s", cells[9])  # duration
    assert "password=&lt;&lt;REDACTED&gt;&gt;" in cells[10]  # output, redacted as recorded


def test_job_output_is_redacted_exactly_as_the_records(project, site):
    job = job_ids(project)[-1]
    record = next((project.root / "jobs").glob(f"job*-{job[:8]}.yaml")).read_text()
    assert SECRET not in record and "password=<<REDACTED>>" in record
    for path in ("/", "/history", f"/jobs/{job}", f"/api/jobs/{job}", "/api/status",
                 "/api/history", "/topology.svg"):
        status, _, body = site.request(path)
        assert status == 200 and SECRET not in body, path
    assert "password=<<REDACTED>>" in json.loads(site.get(f"/api/jobs/{job}"))["tasks"][0][
        "output"]


def test_job_page_draws_a_timeline_of_each_task(project, site):
    job = job_ids(project)[-1]
    body = site.get(f"/jobs/{job}")
    svg = re.search(r'<div class="timeline-box" id="timeline">(<svg.*?</svg>)</div>', body,
                    re.DOTALL)
    assert svg
    bars = re.findall(r'<g class="task[^"]*" data-change-id="(\w+)" data-outcome="ok">.*?'
                      r'<rect class="bar" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"',
                      svg.group(1), re.DOTALL)
    assert sorted(b[0] for b in bars) == [f"{job[:8]}000{n}" for n in range(1, 5)]
    assert all(float(width) > 0 for _, _, width in bars)
    assert 'class="task critical"' in svg.group(1)
    times = json.loads(site.get(f"/api/jobs/{job}"))
    assert times["timesMeasured"] is True
    assert all(t["start"] and t["end"] and t["start"] <= t["end"] for t in times["tasks"])


def test_a_task_changeid_opens_its_job(project, site):
    job = job_ids(project)[-1]
    body = site.get(f"/jobs/{job[:8]}0002")
    assert f"<h1>Job {job}" in body
    assert f"<h1>Job {job}" in site.get(f"/jobs/{job[:8]}")


@pytest.mark.parametrize("path", ["/jobs/not-a-change-id", "/jobs/Azzzzzzz0000", "/jobs/A",
                                  "/jobs/A6BNExZa0000", "/nosuch", "/static/../ensemble.yaml",
                                  "/static/nosuch.css", "/jobs/%00", "/api/jobs/Azzzzzzz0000",
                                  "/jobs/A6BNExZa0000/events"])
def test_unknown_pages_and_changeids_are_404_pages(site, path):
    status, headers, body = site.request(path)
    assert status == 404
    assert headers["content-type"].startswith("text/html")
    assert "<h1>404 Not found</h1>" in body and "Traceback" not in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_anything_but_get_is_405(site, method):
    status, headers, body = site.request("/", method=method)
    assert status == 405 and headers["allow"] == "GET, HEAD" and "read-only" in body


def test_head_answers_without_a_body(site):
    status, headers, body = site.request("/history", method="HEAD")
    assert status == 200 and body == "" and int(headers["content-length"]) > 0


def test_pages_load_nothing_from_outside(project, site):
    job = job_ids(project)[-1]
    for path in ("/", "/history", f"/jobs/{job}", "/nosuch"):
        _, headers, body = site.request(path)
        assert "default-src 'none'" in headers["content-security-policy"]
        for url in urls_of(body):
            assert url.startswith(("/", "#")) and not url.startswith("//"), (path, url)
    for asset in ("/static/dashboard.css", "/static/dashboard.js"):
        assert "http" not in site.get(asset)


def test_a_foreign_host_header_is_refused(site):
    """A page elsewhere that rebinds its DNS name to 127.0.0.1 cannot read the dashboard."""
    status, _, _ = site.request("/", headers={"Host": "evil.example:8081"})
    assert status == 421
    assert site.request("/", headers={"Host": f"localhost:{site.port}"})[0] == 200


def test_json_endpoints(project, site):
    job = job_ids(project)[-1]
    assert json.loads(site.get("/api/status"))["lastJob"]["changeId"] == job
    assert [j["changeId"] for j in json.loads(site.get("/api/history"))] == [job]
    data = json.loads(site.get(f"/api/jobs/{job}"))
    assert data["workflow"] == "deploy" and len(data["tasks"]) == 4


def test_a_broken_ensemble_shows_its_error_and_keeps_the_history(project, site):
    project.write(project.ensemble.read_text().replace("type: tosca.nodes.Root", "type: Nope", 1))
    body = site.get("/")
    assert "The ensemble does not load" in body and "Nope" in body
    assert job_ids(project)[-1] in site.get("/history")


def _snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime)
            for p in sorted(root.rglob("*"))}


def test_hitting_every_page_writes_nothing(project):
    deployed(project)
    git(project.root, "status", "--porcelain")  # let git refresh its index once, before
    before_status = git(project.root, "status", "--porcelain")
    before = _snapshot(project.root)
    job = job_ids(project)[-1]
    with serving(project.ensemble) as site:
        for path in ("/", "/?view=instances", "/history", "/history?instance=db",
                     f"/jobs/{job}", f"/jobs/{job[:8]}0001", "/api/status", "/api/history",
                     f"/api/jobs/{job}", "/topology.svg", "/static/dashboard.css",
                     "/static/dashboard.js", "/nosuch", "/jobs/Azzzzzzz0000",
                     f"/jobs/{job}/events"):
            site.request(path)
        site.request("/", method="POST")
    assert _snapshot(project.root) == before
    assert git(project.root, "status", "--porcelain") == before_status


def test_serving_a_project_without_jobs(project):
    project.write(deployed.__globals__["ENSEMBLE"])
    with serving(project.ensemble) as site:
        body = site.get("/")
        assert "No job has run yet" in body and ">pending<" not in body.split("Instances")[0]
        assert "No jobs yet." in site.get("/history")


def test_static_files_ship_with_the_package():
    import unfurl_lite.view.dashboard as package

    folder = Path(package.__file__).parent
    for name in ("templates/base.html", "static/dashboard.css", "static/dashboard.js"):
        assert (folder / name).is_file()
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert "view/dashboard/templates/*.html" in pyproject
    assert "view/dashboard/static/*" in pyproject
    assert os.access(folder / "templates", os.R_OK)


def test_a_failed_job_shows_the_failure_and_the_blocked_task(project):
    project.write(deployed.__globals__["ENSEMBLE"].replace('echo configured', 'exit 3')
                  .replace("- dependency: db", "- host: db"))  # a host's failure blocks
    from tests.conftest import run_in_process

    assert run_in_process(project.root, "deploy", "--approve").returncode == 64
    job = job_ids(project)[-1]
    with serving(project.ensemble) as site:
        body = site.get(f"/jobs/{job}")
        history = site.get("/history")
        overview = site.get("/")
    rows = re.findall(r'data-state="(\w+)" data-outcome="[\w ]+">(.*?)</tr>', body, re.DOTALL)
    states = {re.search(r'instance=(\w+)', r).group(1) + " " + re.search(
        r"<td>(Standard\.\w+)</td>", r).group(1): s for s, r in rows}
    assert states["db Standard.configure"] == "failed"
    assert states["app Standard.create"] == "blocked"
    assert "exit code 3" in body or "returncode: 3" in body
    assert ">error<" in re.search(rf'<tr data-change-id="{job}">(.*?)</tr>', history,
                                  re.DOTALL).group(1)
    # a failed Shell configure leaves db unknown, as in Unfurl 1.2.0
    assert re.search(r'<tr data-instance="db">.*?>unknown<', overview, re.DOTALL)


def test_what_a_url_carries_is_escaped(site):
    body = site.get("/history?instance=%3Cscript%3Ealert(1)%3C/script%3E")
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body
    status, _, body = site.request("/jobs/%3Cb%3Ex")
    assert status == 404 and "<b>x" not in body


def test_without_graphviz_the_overview_draws_the_picture_itself(project, site, monkeypatch,
                                                               tmp_path):
    tools = tmp_path / "bin"  # git and a shell, but no dot
    tools.mkdir()
    import shutil

    for name in ("git", "sh"):
        found = shutil.which(name)
        assert found
        (tools / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(tools))
    body = site.get("/")
    assert "drawn by built-in" in body
    picture = re.search(r'<div class="picture" id="topology">(.*?)</div>', body, re.DOTALL)
    assert picture and picture.group(1).lstrip().startswith("<svg")
    for name in ("db", "app", "cache"):
        assert f">{name}<" in picture.group(1)


def test_with_graphviz_the_overview_uses_it(site):
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed here (CI installs graphviz)")
    assert "drawn by graphviz" in site.get("/")


def test_a_damaged_job_file_is_said_so_not_a_missing_job(project, site):
    job = job_ids(project)[-1]
    next((project.root / "jobs").glob(f"job*-{job[:8]}.yaml")).write_text("changes: [unclosed\n")
    status, _, body = site.request(f"/jobs/{job}")
    assert status == 422 and "cannot read" in body and "Traceback" not in body
    assert job in site.get("/history")
