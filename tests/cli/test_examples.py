"""Every bundled example plans, deploys and undeploys on a bare machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, InvokeIn, git

EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir() if (p / "ensemble.yaml").exists())


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_plans_deploys_and_undeploys(tmp_path: Path, name: str, invoke_in: InvokeIn):
    project = tmp_path / name
    init = invoke_in(tmp_path, "init", str(project), "--from", str(ROOT / "examples" / name))
    assert init.exit_code == 0, init.output
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "T")
    plan = invoke_in(project, "plan")
    assert plan.exit_code == 0, plan.output
    assert "Plan for deploy:" in plan.stdout
    deploy = invoke_in(project, "deploy", "--approve")
    assert deploy.exit_code == 0, deploy.output
    assert "deploy succeeded" in deploy.stdout
    again = invoke_in(project, "deploy", "--approve")
    assert "Nothing to do" in again.stdout
    undeploy = invoke_in(project, "undeploy", "--approve")
    assert undeploy.exit_code == 0, undeploy.output
    assert git(project, "status", "--porcelain").strip() == ""


def test_three_tier_merges_its_includes(tmp_path: Path):
    from unfurl_lite.load.loader import load_ensemble

    ensemble = load_ensemble(ROOT / "examples" / "three-tier")
    web = ensemble.topology.templates["web"]
    assert web.type == "example.Service" and web.properties["role"] == "web"
    assert web.operation("configure") is not None and web.operation("check") is not None
