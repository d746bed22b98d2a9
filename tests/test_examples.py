"""Every bundled example plans, deploys and undeploys on a bare machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_unfurl

EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir() if (p / "ensemble.yaml").exists())


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_plans_deploys_and_undeploys(tmp_path: Path, name: str):
    project = tmp_path / name
    init = run_unfurl(tmp_path, "init", str(project), "--from", str(ROOT / "examples" / name))
    assert init.returncode == 0, init.stderr
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "T")
    plan = run_unfurl(project, "plan")
    assert plan.returncode == 0, plan.stderr
    assert "Plan for deploy:" in plan.stdout
    deploy = run_unfurl(project, "deploy", "--approve")
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    assert "deploy succeeded" in deploy.stdout
    again = run_unfurl(project, "deploy", "--approve")
    assert "Nothing to do" in again.stdout
    undeploy = run_unfurl(project, "undeploy", "--approve")
    assert undeploy.returncode == 0, undeploy.stdout + undeploy.stderr
    assert git(project, "status", "--porcelain").strip() == ""


def test_three_tier_merges_its_includes(tmp_path: Path):
    from unfurl_lite.load.loader import load_ensemble

    ensemble = load_ensemble(ROOT / "examples" / "three-tier")
    web = ensemble.topology.templates["web"]
    assert web.type == "example.Service" and web.properties["role"] == "web"
    assert web.operation("configure") is not None and web.operation("check") is not None
