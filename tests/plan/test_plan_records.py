"""Planning reads the model and the job records and changes neither.

Update and deploy's reconfigure compare what an operation last ran with against the spec:
they take it from the structured fields of the job records (target, operation, reason,
digest), never from the summary text people read. Planning an update with a removed
template leaves the loaded ensemble as it was; the plan carries the template to the job.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, examples
from tests.plan.test_workflows import deployed, node, ok, op, ran, reset, respec
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model.builtin_workflows import BY_NAME as PLANNERS
from unfurl_lite.plan import build
from unfurl_lite.plan.registry import planner


def _changed_configure(project, templates: dict) -> None:
    templates["app"]["interfaces"]["Standard"]["operations"]["configure"] = (
        op("configure") + " # v2"
    )
    respec(project, templates)


def _rewrite_summaries(project, summary: str) -> None:
    """jobs.tsv's summaries say something else entirely (a person's text, not a record)."""
    path = project.root / "jobs.tsv"
    path.write_text(re.sub(r"summary=[^\t\n]*", f"summary={summary}", path.read_text()))


def _tasks(plan) -> list[tuple[str, str, str]]:
    return [(t.target, t.name, t.reason) for t in plan.runnable]


@pytest.mark.parametrize("summary", ["", "using configurator for check: Standard.configure "
                                         "(x), priority: required, reason: check"])
def test_update_reads_structured_records_not_summary_text(project, invoke, summary):
    templates = {"app": node(Lifecycle=("update",))}
    deployed(project, invoke, templates)
    _changed_configure(project, templates)
    _rewrite_summaries(project, summary)
    plan = build(load_ensemble(project.ensemble), "update")
    assert ("app", "update", "update") in _tasks(plan)
    assert any(n.message == "changed: Standard.configure" for n in plan.notes)


def test_deploy_reconfigures_from_structured_records(project, invoke):
    templates = {"app": node()}
    deployed(project, invoke, templates)
    _changed_configure(project, templates)
    _rewrite_summaries(project, "")
    plan = build(load_ensemble(project.ensemble), "deploy")
    assert _tasks(plan) == [("app", "configure", "reconfigure")]


def test_a_checks_inputs_are_no_deployment_baseline(project, invoke):
    """A check (reason check) ran Standard.configure's sibling; its record does not make
    the instance look changed or unchanged: only deploying runs count."""
    templates = {"app": node(Install=("check",))}
    deployed(project, invoke, templates)
    ok(invoke("check", "--approve"))
    templates["app"]["interfaces"]["Install"]["operations"]["check"] = op("check") + " # v2"
    respec(project, templates)
    plan = build(load_ensemble(project.ensemble), "update")
    assert not any(n.message.startswith("changed:") for n in plan.notes)


def test_records_written_before_the_interface_field_still_resolve(project, invoke):
    templates = {"app": node(Lifecycle=("update",))}
    deployed(project, invoke, templates)
    for path in (project.root / "jobs").glob("job*.yaml"):
        path.write_text("".join(line for line in path.read_text().splitlines(True)
                                if not line.lstrip().startswith("interface:")))
    _changed_configure(project, templates)
    plan = build(load_ensemble(project.ensemble), "update")
    assert any(n.message == "changed: Standard.configure" for n in plan.notes)


def test_a_damaged_job_record_is_skipped_with_a_warning(project, invoke, caplog):
    templates = {"app": node(Lifecycle=("update",))}
    deployed(project, invoke, templates)
    (project.root / "jobs" / "job2000-01-01-00-00-00-Aaaaaaaa.yaml").write_text("changes: [\n")
    _changed_configure(project, templates)
    plan = build(load_ensemble(project.ensemble), "update")
    assert ("app", "update", "update") in _tasks(plan)
    assert "job record skipped" in caplog.text


def test_planning_an_update_leaves_the_ensemble_unchanged(project, invoke):
    templates = {"app": node(), "old": node()}
    deployed(project, invoke, templates)
    del templates["old"]
    respec(project, templates)
    ensemble = load_ensemble(project.ensemble)
    templates_before = dict(ensemble.topology.templates)
    instances_before = copy.deepcopy(ensemble.instances)
    plan = build(ensemble, "update")
    assert ensemble.topology.templates == templates_before
    assert "old" not in ensemble.topology.templates
    assert ensemble.instances == instances_before
    assert set(plan.removed_templates) == {"old"}
    assert [t.name for t in plan.runnable if t.target == "old"] == ["stop", "delete"]


def test_the_job_runs_a_removed_templates_operations_from_the_plan(project, invoke):
    templates = {"app": node(), "old": node()}
    deployed(project, invoke, templates)
    del templates["old"]
    respec(project, templates)
    reset(project)
    ok(invoke("update", "--approve"))
    assert ran(project) == ["old stop", "old delete"]
    assert "old" not in project.status()
    summary = next(line for line in project.jobs_tsv() if "target=::old" in line)
    assert "(type tosca.nodes.Root," in summary  # the removed template's type, from the plan


def test_every_registered_planner_resolves():
    for workflow in PLANNERS:
        assert callable(planner(workflow))


def test_unknown_workflow_names_every_built_in_one(project, invoke):
    deployed(project, invoke, {"app": node()})
    from unfurl_lite.errors import PlanError

    with pytest.raises(PlanError) as caught:
        build(load_ensemble(project.ensemble), "deplyo")
    assert caught.value.hint == "choose one of: " + ", ".join(PLANNERS)


def test_planner_modules_import_on_their_own_and_the_registry_loads_them_lazily():
    """No import cycle between planners: each module imports first, with none of the
    package's modules loaded before it (one process forgets them between imports);
    planning a deploy does not load the Cloudify-only planners."""
    modules = ["tasks", "lifecycle", "topology", "registry", "deploy", "operations", "heal",
               "scale", "update", "tosca", "baselines", "drift"]
    first = ("import importlib, sys\n"
             f"for module in {modules!r}:\n"
             "    for name in [m for m in sys.modules if m.startswith('unfurl_lite')]:\n"
             "        del sys.modules[name]\n"
             "    importlib.import_module('unfurl_lite.plan.' + module)\n")
    subprocess.run([sys.executable, "-c", first], check=True, cwd=ROOT)
    probe = ("import sys, unfurl_lite.plan.registry as r; r.planner('deploy'); "
             "print(sorted(m for m in sys.modules if m.startswith('unfurl_lite.plan.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT,
                            capture_output=True, text=True).stdout
    for lazy in ("heal", "scale", "update", "operations"):
        assert f"unfurl_lite.plan.{lazy}'" not in loaded


def test_has_operation_is_gone():
    import unfurl_lite.plan.lifecycle as lifecycle
    import unfurl_lite.plan.topology as topology

    assert not hasattr(lifecycle, "has_operation") and not hasattr(topology, "has_operation")


_VALUES = st.one_of(
    st.text(max_size=90),
    st.sampled_from(["::app", "true", "0123", "1e5", "null", "", "a: b", "x #y", "- z", "'q'",
                     "step:install", "::a::.requirements::[.name=host]", "é ü", "  padded "]),
)


@settings(max_examples=examples(150))
@given(st.lists(st.fixed_dictionaries({
    "changeId": _VALUES, "target": _VALUES, "reason": _VALUES, "digestValue": _VALUES,
    "state": _VALUES, "interface": _VALUES, "summary": _VALUES,
    "implementation": st.fixed_dictionaries({"operation": _VALUES, "className": _VALUES}),
    "inputs": st.dictionaries(st.text(max_size=5), _VALUES, max_size=2),
}), max_size=4), _VALUES)
@example([{"changeId": "", "target": "", "reason": "", "digestValue": "", "state": "",
           "interface": "0\xa0", "summary": "", "inputs": {},
           "implementation": {"operation": "", "className": ""}}], "")  # YAML keeps NBSP
def test_job_records_read_line_by_line_say_what_yaml_says(entries, workflow):
    """The fast reader of job records either reads exactly what a YAML parser reads from
    the file as the record package writes it, or declines (and the file is parsed)."""
    from unfurl_lite.load import taskrecords, yamlio

    text = yamlio.dump({"manifest": "../ensemble.yaml",
                        "changes": [{"changeId": "A0000000" "0000", "workflow": workflow},
                                    *entries]})
    scanned = taskrecords._scan(text)
    parsed = yamlio.parse_plain(text)
    if scanned is not None:
        assert list(taskrecords._records(scanned)) == list(taskrecords._records(parsed))
    assert list(taskrecords._records(taskrecords._parse(text))) == list(
        taskrecords._records(parsed))


def test_the_line_reader_reads_ordinary_records_without_a_parser(project, invoke):
    from unfurl_lite.load import taskrecords

    deployed(project, invoke, {"app": node(), "db": node(Lifecycle=("update",))})
    [path] = (project.root / "jobs").glob("job*.yaml")
    assert taskrecords._scan(path.read_text()) is not None
    records = taskrecords.task_records(project.root)
    assert {(r.instance, r.qualified_name, r.reason, r.succeeded) for r in records} >= {
        ("app", "Standard.create", "add", True), ("db", "Standard.configure", "add", True)}


#: every built-in workflow, with the options it needs
WORKFLOWS = [
    ("deploy", {"force": True}), ("undeploy", {}), ("check", {}), ("discover", {}),
    ("run", {"command": ["true"], "instance_names": ["app"]}),
    ("execute_operation", {"operation": "configure"}),
    ("start", {}), ("stop", {}), ("restart", {}), ("heal", {}), ("update", {}),
    ("scale", {"scalable_entity_name": "app"}),
    ("scale", {"scalable_entity_name": "app", "delta": -1}),
    ("install_new_agents", {}),
]


def test_no_planner_changes_the_ensemble(project, invoke):
    templates = {"db": node(Install=("check", "discover")), "old": node(),
                 "app": node(requirements=[{"dependency": "db"}])}
    templates["db"]["metadata"] = {"agent": "db-1"}  # something for install_new_agents
    deployed(project, invoke, templates)
    ok(invoke("scale", "app", "--approve"))
    del templates["old"]
    respec(project, templates)
    ensemble = load_ensemble(project.ensemble)
    assert {w for w, _ in WORKFLOWS} == set(PLANNERS)
    for workflow, options in WORKFLOWS:
        before = copy.deepcopy((ensemble.topology, ensemble.instances, ensemble.spec))
        assert build(ensemble, workflow, options).tasks, workflow
        assert (ensemble.topology, ensemble.instances, ensemble.spec) == before, workflow
