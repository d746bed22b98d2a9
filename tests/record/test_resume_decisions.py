"""Resuming a job whose path a check decided: the decision already acted on keeps."""

from __future__ import annotations

from tests.plan.test_cloudify_fidelity import failing_if, of, with_op
from tests.plan.test_workflows import deployed, node, ok, ran, reset


def test_resuming_a_heal_whose_reinstall_failed_finishes_the_reinstall(project, invoke):
    """heal: app's check_status fails, so app is reinstalled; its create fails after its
    stop and delete ran. Fixed, `unfurl resume` must create it again, not re-run the check
    (which now passes) and skip the rest, leaving app deleted and the heal "succeeded"."""
    app = with_op(node(), "Validation", "check_status", failing_if("check_status", "sick"))
    with_op(app, "Standard", "create", failing_if("create", "broken"))
    deployed(project, invoke, {"app": app})
    (project.root / "sick").write_text("")
    (project.root / "broken").write_text("")
    reset(project)
    assert invoke("heal", "--approve").exit_code == 64
    assert ran(project) == of("app", ["check_status", "stop", "delete", "create"])
    (project.root / "sick").unlink()
    (project.root / "broken").unlink()
    reset(project)
    ok(invoke("resume", "--approve"))
    assert ran(project) == of("app", ["create", "configure", "start"])
    assert project.status()["app"]["readyState"] == {"local": "ok", "state": "started"}
