"""Take the dashboard screenshots in docs/img/ with the browser tests' Playwright and Chromium.

    python tests/view/dashboard_screenshots.py docs/img

Builds a small project in a temporary git repo (tasks that sleep a little, so the timeline
shows parallel work), deploys it with a failing operation (its dependents are blocked),
deploys it again fixed, changes one operation's inputs (drift), serves it and photographs
the overview, the history, the failed job's page and a job while it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.view.dashboard_helpers import serving  # noqa: E402
from tests.view.test_browser_dashboard import ARGS, CHROMIUM  # noqa: E402


def node(name: str, ops: dict[str, str], requires: tuple[str, ...] = (), host: str = "") -> str:
    lines = [f"        {name}:", "          type: tosca.nodes.Root"]
    reqs = [f"            - dependency: {r}" for r in requires]
    if host:
        reqs.append(f"            - host: {host}")
    if reqs:
        lines += ["          requirements:", *reqs]
    lines += ["          interfaces:", "            Standard:", "              operations:"]
    for op, command in ops.items():
        lines += [f"                {op}:", "                  implementation: {className: Shell}",
                  f"                  inputs: {{command: {command!r}}}"]
    return "\n".join(lines)


ENSEMBLE = "\n".join([
    "apiVersion: unfurl/v1alpha1", "kind: Ensemble", "spec:", "  service_template:",
    "    topology_template:", "      inputs:", "        db_password:",
    "          type: unfurl.datatypes.Sensitive", "          default: hunter2-demo",
    "      node_templates:",
    node("host", {"create": "sleep 0.3; echo host up"}),
    node("db", {"create": 'sleep 0.5; echo "db password={{ TOPOLOGY.inputs.db_password }}"',
                "configure": "sleep 0.2; echo db configured"}),
    node("web", {"create": "sleep 0.3; echo web", "start": "sleep 0.1; echo listening on 8080"},
         requires=("db",), host="host"),
    node("worker", {"create": "sleep 0.4; echo worker"}, requires=("db",), host="host"),
    node("cache", {"create": "sleep 0.25; echo cache ready"}),
]) + "\n"


def unfurl(root: Path, *args: str, expect: int = 0) -> None:
    done = subprocess.run([sys.executable, "-m", "unfurl_lite", *args], cwd=root, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
    if done.returncode != expect:
        raise SystemExit(f"unfurl {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def main(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "shop"
        root.mkdir()
        for args in (["init", "-q", "-b", "main"], ["config", "user.email", "ops@example.com"],
                     ["config", "user.name", "Ops"]):
            subprocess.run(["git", *args], cwd=root, check=True)
        broken = "sleep 0.2; echo cannot reach the database >&2; exit 3"
        (root / "ensemble.yaml").write_text(ENSEMBLE.replace("sleep 0.2; echo db configured",
                                                             broken))
        subprocess.run(["git", "add", "."], cwd=root, check=True)
        subprocess.run(["git", "commit", "-qm", "shop"], cwd=root, check=True)
        unfurl(root, "deploy", "--approve", expect=64)  # db fails: web and worker blocked
        failed = (root / "jobs.tsv").read_text().split("\t", 1)[0]
        (root / "ensemble.yaml").write_text(ENSEMBLE)
        subprocess.run(["git", "commit", "-qam", "db configures"], cwd=root, check=True)
        unfurl(root, "deploy", "--approve")
        spec = (root / "ensemble.yaml").read_text()
        (root / "ensemble.yaml").write_text(spec.replace("echo worker", "echo worker v2"))
        subprocess.run(["git", "commit", "-qam", "worker v2"], cwd=root, check=True)
        unfurl(root, "run", "--approve", "--instance", "worker", "--", "sh", "-c",
               "echo queue full >&2; exit 2", expect=64)
        unfurl(root, "run", "--approve", "--instance", "cache", "--", "echo", "flushed")
        with serving(root / "ensemble.yaml") as site, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            base = f"http://127.0.0.1:{site.port}"
            for name, path in (("overview", "/"), ("history", "/history"),
                               ("job", f"/jobs/{failed}")):
                page.goto(base + path)
                page.screenshot(path=str(out / f"dashboard-{name}.png"), full_page=True)
            live(root, page, base, out)
            browser.close()


def live(root: Path, page: Any, base: str, out: Path) -> None:
    """A job caught running: undeploy and deploy again, worker's create held until the
    picture is taken."""
    flag = root.parent / "go"
    spec = (root / "ensemble.yaml").read_text()
    held = f"for i in $(seq 600); do [ -f {flag} ] && exit 0; sleep 0.05; done; exit 1"
    (root / "ensemble.yaml").write_text(spec.replace("echo worker v2", held).replace(
        "sleep 0.3; echo web", "sleep 0.3; echo web v2"))
    subprocess.run(["git", "commit", "-qam", "web v2"], cwd=root, check=True)
    page.goto(base + "/")
    job = subprocess.Popen([sys.executable, "-m", "unfurl_lite", "update", "--approve"],
                           cwd=root, env={**os.environ, "PYTHONPATH": str(ROOT)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        page.locator("#running a").wait_for(timeout=60_000)
        page.locator("#running a").click()
        page.locator("body[data-live=progress]").wait_for(timeout=60_000)
        page.locator("#tasks tr[data-state=started]").first.wait_for(timeout=60_000)
        page.wait_for_timeout(700)  # let the other tasks finish and the timeline redraw
        page.screenshot(path=str(out / "dashboard-live.png"), full_page=True)
    finally:
        flag.touch()
        job.wait(timeout=120)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img"))
