"""Unfurl 1.2.0's job options as plans: --template, deploy --check, --repair, --skip-new,
--change-detection, --prune, --upgrade, and undeploy's rule that a kept instance keeps
what it needs (--force turns it off). The runs these follow are the corpus cases
tests/data/unfurl-cases/101..122 (recorded with Unfurl 1.2.0); here each rule is checked
on the plan itself, broadly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.api import PlanOptions
from unfurl_lite.api.project import make_plan
from unfurl_lite.errors import PlanError
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model import dependencies
from unfurl_lite.plan.tasks import Plan


def node(name: str, *requires: str, check: str | None = None, directives: str = "") -> str:
    reqs = "".join(f"\n    - dependency: {r}" for r in requires)
    text = f"{name}:\n  type: tosca.nodes.Root\n"
    if directives:
        text += f"  directives: [{directives}]\n"
    if reqs:
        text += f"  requirements:{reqs}\n"
    text += ("  interfaces:\n    Standard:\n"
             f"      create: echo {name}\n      delete: echo {name} gone\n")
    if check:
        text += ("    Install:\n      check:\n        implementation: Template\n"
                 f"        inputs:\n          done:\n            status: {check}\n")
    return text


def status(records: dict[str, str], extra: dict[str, str] | None = None) -> str:
    """A status section: instance -> local status (recorded by an earlier job)."""
    lines = ["status:", "  instances:"]
    for name, local in records.items():
        # a failed instance as a failed create leaves it (Unfurl re-creates only those)
        state = {"absent": "initial", "pending": "initial", "error": "creating"}.get(
            local, "created")
        lines += [f"    {name}:", f"      template: {name}", "      readyState:",
                  f"        local: {local}", f"        state: {state}",
                  "      lastConfigChange: A6BNFOVd0001", "      created: A6BNFOVd0001"]
        for key, value in (extra or {}).items():
            if key.startswith(f"{name}."):
                lines.append(f"      {key.split('.', 1)[1]}: {value}")
    return "\n".join(lines) + "\n"


def ensemble(tmp_path: Path, nodes: list[str], recorded: str = "") -> Path:
    body = textwrap.indent("".join(nodes), " " * 8)
    path = tmp_path / "ensemble.yaml"
    path.write_text("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
                    "    topology_template:\n      node_templates:\n" + body + recorded)
    return path


def plan_of(path: Path, workflow: str = "deploy", **options: object) -> Plan:
    return make_plan(load_ensemble(path), workflow, PlanOptions(**options))  # type: ignore[arg-type]


def tasks(plan: Plan) -> list[tuple[str, str, str]]:
    return [(t.target, t.name, t.reason) for t in plan.tasks]


def test_template_limits_deploy_to_it_and_what_it_requires(tmp_path: Path) -> None:
    path = ensemble(tmp_path, [node("db"), node("cache"), node("app", "db"), node("other")])
    plan = plan_of(path, template="app")
    assert {t for t, _, _ in tasks(plan)} == {"db", "app"}
    assert set(plan.new_instances) == {"db", "app"}


def test_template_limits_check_to_it_and_what_it_requires_as_deploy(tmp_path: Path) -> None:
    """As Unfurl 1.2.0 (unfurl-cases 263: ``check --template web`` checks db, app and
    web), check plans from deploy's templates; undeploy takes only the template's own."""
    nodes = [node("db", check="ok"), node("cache", check="ok"), node("app", "db", check="ok"),
             node("web", "app", check="ok")]
    path = ensemble(tmp_path, nodes)
    assert [t for t, _, _ in tasks(plan_of(path, "check", template="web"))] == [
        "db", "app", "web"]
    assert [t for t, _, _ in tasks(plan_of(path, "check", template="db"))] == ["db"]
    recorded = ensemble(tmp_path, nodes, status({n: "ok" for n in ("db", "cache", "app", "web")}))
    assert [t for t, _, _ in tasks(plan_of(recorded, "undeploy", template="web"))] == ["web"]


def test_an_unknown_template_is_an_error_naming_it(tmp_path: Path) -> None:
    path = ensemble(tmp_path, [node("app")])
    with pytest.raises(PlanError, match=r"specified template not found: ap$") as caught:
        plan_of(path, template="ap")
    assert "did you mean 'app'" in (caught.value.hint or "")
    for workflow in ("undeploy", "check", "discover"):
        with pytest.raises(PlanError, match="specified template not found"):
            plan_of(path, workflow, template="nope")


def test_deploy_check_checks_new_instances_first_and_creates_only_if_not_found(
    tmp_path: Path,
) -> None:
    path = ensemble(tmp_path, [node("exists", check="ok"), node("nocheck")])
    plan = plan_of(path, check=True)
    assert tasks(plan) == [("exists", "check", "check"), ("exists", "create", "add"),
                           ("nocheck", "create", "add")]
    create = plan.tasks[1]
    assert create.skip_when is not None and create.skip_when.value == "ok"
    assert create.after == (1,)
    # without --check nothing is checked
    assert [n for _, n, _ in tasks(plan_of(path))] == ["create", "create"]


@pytest.mark.parametrize(
    ("repair", "expected"),
    [
        ("error", {"failed": "error"}),
        # as Unfurl 1.2.0: with --repair degraded a failed instance's reason is degraded;
        # a degraded one, created, with no configure or start to run again, runs nothing
        # (tests/plan/test_repair_phases.py has every state)
        ("degraded", {"failed": "degraded"}),
        ("none", {}),
        ("missing", {"gone": "missing"}),
    ],
)
def test_repair_chooses_which_recorded_instances_run_again(
    tmp_path: Path, repair: str, expected: dict[str, str]
) -> None:
    recorded = status({"failed": "error", "half": "degraded", "fine": "ok", "gone": "absent"})
    nodes = [node("failed"), node("half"), node("fine"), node("gone")]
    plan = plan_of(ensemble(tmp_path, nodes, recorded), repair=repair, skip_new=True)
    reasons = {target: reason for target, _, reason in tasks(plan)}
    assert reasons == expected


def test_missing_instances_run_again_by_default_whatever_repair_says(tmp_path: Path) -> None:
    recorded = status({"gone": "absent", "failed": "error"})
    path = ensemble(tmp_path, [node("gone"), node("failed")], recorded)
    reasons = {t: r for t, _, r in tasks(plan_of(path, repair="none"))}
    assert reasons == {"gone": "missing"}


def test_skip_new_creates_nothing_new_and_repairs_what_is_recorded(tmp_path: Path) -> None:
    recorded = status({"existing": "error"})
    path = ensemble(tmp_path, [node("existing"), node("newcomer")], recorded)
    plan = plan_of(path, skip_new=True)
    assert {t for t, _, _ in tasks(plan)} == {"existing"}
    assert plan.new_instances == {}


def test_change_detection_choices_and_customized(tmp_path: Path) -> None:
    nodes = [node("app")]
    recorded = status({"app": "ok"}, {"app.customized": "true"})
    path = ensemble(tmp_path, nodes, recorded)
    for choice in ("skip", "spec", "evaluate", "always"):
        assert tasks(plan_of(path, change_detection=choice)) == []  # nothing to compare with
    with pytest.raises(PlanError, match="--change-detection 'sometimes'"):
        plan_of(path, change_detection="sometimes")
    with pytest.raises(PlanError, match="--repair 'all'"):
        plan_of(path, repair="all")


def test_prune_deletes_what_the_job_did_not_plan_for(tmp_path: Path) -> None:
    recorded = status({"keep": "ok", "old": "ok"})
    path = ensemble(tmp_path, [node("keep"), node("old")], recorded)
    plan = plan_of(path, prune=True, template="keep")
    assert tasks(plan) == [("old", "delete", "prune")]
    assert tasks(plan_of(path, template="keep")) == []


def test_upgrade_is_accepted_and_changes_nothing(tmp_path: Path) -> None:
    path = ensemble(tmp_path, [node("app")], status({"app": "ok"}))
    assert tasks(plan_of(path, upgrade=True)) == tasks(plan_of(path)) == []


def test_undeploy_keeps_what_a_protected_instance_needs_and_force_deletes_it(
    tmp_path: Path,
) -> None:
    nodes = [node("db"), node("app", "db", directives="protected"), node("lone")]
    path = ensemble(tmp_path, nodes, status({"db": "ok", "app": "ok", "lone": "ok"}))
    plan = plan_of(path, "undeploy")
    assert {t for t, _, _ in tasks(plan)} == {"lone"}
    notes = {n.target: n.message for n in plan.notes}
    assert notes["db"] == "skipped: required instances depend on it: app"
    assert {t for t, _, _ in tasks(plan_of(path, "undeploy", force=True))} == {"lone", "db"}
    assert {t for t, _, _ in tasks(plan_of(path, "undeploy", template="db"))} == set()
    assert {t for t, _, _ in tasks(plan_of(path, "undeploy", template="db", force=True))} \
        == {"db"}


def test_what_a_failed_kept_instance_needs_is_not_kept(tmp_path: Path) -> None:
    """Only an operational (ok or degraded) required instance keeps what it needs."""
    nodes = [node("db"), node("app", "db", directives="protected")]
    path = ensemble(tmp_path, nodes, status({"db": "ok", "app": "error"}))
    assert {t for t, _, _ in tasks(plan_of(path, "undeploy"))} == {"db"}


@st.composite
def topologies(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """A random DAG of instances (each may require earlier ones) and which are protected."""
    count = draw(st.integers(min_value=1, max_value=7))
    names = [f"n{i}" for i in range(count)]
    requires = {n: sorted(draw(st.sets(st.sampled_from(names[:i])))) if i else []
                for i, n in enumerate(names)}
    protected = draw(st.sets(st.sampled_from(names)))
    return names, requires, protected


@settings(max_examples=examples(40))
@given(topologies(), st.booleans())
def test_undeploy_never_deletes_what_a_kept_instance_needs(
    tmp_path_factory: pytest.TempPathFactory,
    topology: tuple[list[str], dict[str, list[str]], set[str]],
    force: bool,
) -> None:
    names, requires, protected = topology
    nodes = [node(n, *requires[n], directives="protected" if n in protected else "")
             for n in names]
    path = ensemble(tmp_path_factory.mktemp("undeploy"), nodes,
                    status(dict.fromkeys(names, "ok")))
    deleted = {t for t, _, _ in tasks(plan_of(path, "undeploy", force=force))}
    assert not deleted & protected
    if force:
        assert deleted == set(names) - protected
    else:
        needed = dependencies.closure(requires, protected)
        assert deleted == set(names) - needed


@pytest.mark.parametrize(("below", "repair", "dependent"), [
    ("error", "error", "error"),
    ("unknown", "error", "error"),
    ("absent", "error", "error"),
    ("degraded", "error", None),
    ("degraded", "degraded", "degraded"),
    ("error", "degraded", "degraded"),
    ("error", "none", None),
    ("ok", "error", None),
])
def test_an_ok_instance_that_requires_a_broken_one_is_repaired_as_in_effect(
        tmp_path: Path, below: str, repair: str, dependent: str | None) -> None:
    """Unfurl's plan reads an instance's effective status (its own folded with what it
    requires): one that is ok but requires an instance in error, unknown or absent is in
    error, and a deploy repairs it, reason ``error`` (unfurl-cases 304); a degraded
    dependency degrades it."""
    recorded = status({"base": below, "top": "ok"})
    top = node("top", "base").replace("create: echo top", "configure: echo top")
    path = ensemble(tmp_path, [node("base"), top], recorded)
    reasons = {t: r for t, _, r in tasks(plan_of(path, repair=repair))}
    assert reasons.get("top") == dependent
