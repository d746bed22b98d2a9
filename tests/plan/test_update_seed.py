"""Cloudify's update as the seed describes it: removed node instances are uninstalled as
the uninstall workflow does (dependents first, with their unlink), added ones installed."""

from __future__ import annotations

import copy

from tests.plan.test_workflows import deployed, node, ok, ran, rel_op, respec


def _link(target: str) -> dict:
    return {"node": target, "relationship": {
        "type": "tosca.relationships.ConnectsTo",
        "interfaces": {"Configure": {"operations": {
            n: rel_op(n) for n in ("add_target", "remove_target")}}}}}


def _three() -> dict:
    return {
        "db": node(),
        "app": node(requirements=[{"database": _link("db")}]),
        "web": node(requirements=[{"dependency": "app"}]),
    }


def test_removing_a_node_and_its_dependents_uninstalls_dependents_first(project, invoke):
    templates = _three()
    deployed(project, invoke, templates)
    respec(project, {"other": node()})
    ok(invoke("update", "--approve"))
    lines = [line for line in ran(project) if not line.startswith("other")]
    assert lines == [
        "web stop", "web delete",
        "app stop", "app->db remove_target", "app delete",
        "db stop", "db delete",
    ]
    assert set(project.status()) == {"other"}


def test_removing_a_dependency_unlinks_the_dependent_that_stays(project, invoke):
    """db is removed, app stays (its requirement on db went with it): app's unlink, as the
    last commit that had it wrote it, runs before db is stopped; app is not reinstalled."""
    templates = _three()
    deployed(project, invoke, templates)
    kept = copy.deepcopy(templates)
    del kept["db"]
    del kept["app"]["requirements"]
    respec(project, kept)
    ok(invoke("update", "--approve"))
    assert ran(project) == ["app->db remove_target", "db stop", "db delete"]
    assert set(project.status()) == {"app", "web"}
    assert project.local("app") == "ok"
