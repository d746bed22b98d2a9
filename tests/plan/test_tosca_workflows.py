"""TOSCA imperative workflows (topology_template.workflows): deploy/undeploy replaced for the
targets their steps name, as Unfurl 1.2.0 plans it; custom workflows run with `run --workflow`,
recorded, leaving the instances' change history alone; what cannot run is refused by name."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ENSEMBLE_HEAD, Project, safe_load

UNFURL = Path(__file__).parent.parent / "data" / "unfurl120" / "12-custom-workflows"


def fields(row: str) -> dict[str, str]:
    return dict(f.partition("=")[::2] for f in row.split("\t")[1:])


def status_section(project: Project) -> str:
    text = project.ensemble.read_text()
    return text[text.index("status:"):text.index("lastJob:")]


def unfurl_plan(console: str) -> dict[str, list[tuple[str, str | None]]]:
    """Unfurl's plan text as {node: [(operation or state, reason)]}."""
    plan: dict[str, list[tuple[str, str | None]]] = {}
    node = ""
    for line in console.splitlines():
        if m := re.match(r'^Node "(\w+)"', line):
            node = m.group(1)
            plan[node] = []
        elif m := re.match(r"^- operation (\w+)(?: \(reason: ([\w:]+)\))?", line):
            plan[node].append((m.group(1), m.group(2)))
    return plan


def our_plan(document: dict) -> dict[str, list[tuple[str, str | None]]]:
    plan: dict[str, list[tuple[str, str | None]]] = {}
    for task in document["tasks"]:
        if task["operation"]:
            plan.setdefault(task["target"], []).append(
                (task["operation"].split(".")[-1], task["reason"]))
        else:  # Unfurl lists a set_state as an "operation" named after the state, no reason
            plan.setdefault(task["target"], []).append((task["setState"], None))
    return plan


def test_deploy_workflow_replaces_the_lifecycle_of_its_targets_as_unfurl(project, invoke):
    project.write((UNFURL / "deploy-override.yaml").read_text())
    result = invoke("plan", "--json")
    assert result.exit_code == 0, result.output
    expected = unfurl_plan((UNFURL / "override" / "0-plan" / "console.txt").read_text())
    assert our_plan(json.loads(result.stdout)) == expected

    assert invoke("deploy", "--approve").exit_code == 0
    theirs = safe_load((UNFURL / "override" / "1-deploy" / "ensemble.after.yaml")
                            .read_text())["status"]["instances"]
    ours = project.status()
    for name in ("a", "b"):
        assert ours[name]["readyState"] == theirs[name]["readyState"]
    rows = [fields(r) for r in project.jobs_tsv()[1:]]
    theirs_rows = [fields(r) for r in (UNFURL / "override" / "1-deploy" / "jobs.tsv")
                   .read_text().splitlines()[1:]]
    assert sorted((r["target"], r["operation"], r["status"]) for r in rows) == sorted(
        (r["target"], r["operation"], r["status"]) for r in theirs_rows)


def test_custom_workflow_runs_is_recorded_and_leaves_history_alone(project, invoke):
    project.write((UNFURL / "deploy-override.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    before = status_section(project)
    commits = len(project.commits())

    planned = invoke("plan", "--workflow", "greet", "--json")
    assert planned.exit_code == 0
    tasks = json.loads(planned.stdout)["tasks"]
    assert [(t["target"], t["operation"], t["reason"], t["after"]) for t in tasks] == [
        ("b", "Standard.create", "step:hello", []),
        ("a", "Standard.configure", "step:bye", [1]),
    ]
    assert len(project.commits()) == commits  # plan runs and records nothing

    result = invoke("run", "--workflow", "greet", "--approve", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "ok"
    assert status_section(project) == before  # status, readyState, lastConfigChange untouched
    rows = [fields(r) for r in project.jobs_tsv()[-2:]]
    assert [(r["target"], r["operation"], r["status"]) for r in rows] == [
        ("::b", "create", "ok"), ("::a", "configure", "ok")]
    # as Unfurl: the digest lists only the inputs the command resolved; the activity's
    # input reached the operation all the same (its job record has it)
    assert rows[-1]["digestKeys"] == "command"
    job = sorted((project.root / "jobs").glob("job*.yaml"))[-1].read_text()
    assert "extra: 1" in job
    assert len(project.commits()) == commits + 1
    assert safe_load(project.ensemble.read_text())["lastJob"]["workflow"] == "greet"
    assert (project.root / "jobs").is_dir()


WORKFLOW_HEAD = ENSEMBLE_HEAD + """\
        a:
          type: tosca.nodes.Root
          properties:
            size: 3
          interfaces:
            Standard:
              create: echo create-a
              configure: echo configure-a
              start: "false"
              delete: echo delete-a >> log
        b:
          type: tosca.nodes.Root
          properties:
            size: 1
          interfaces:
            Standard:
              create: echo create-b
              configure: echo configure-b >> log
      workflows:
"""


def workflows(text: str) -> str:
    return WORKFLOW_HEAD + textwrap.indent(textwrap.dedent(text), "        ")


def test_on_success_runs_after_success_and_on_failure_after_failure(project, invoke):
    project.write(workflows("""\
        tidy:
          steps:
            try:
              target: a
              activities: [{call_operation: Standard.start}]
              on_success: [celebrate]
              on_failure: [clean_up]
            celebrate:
              target: b
              activities: [{call_operation: Standard.configure}]
            clean_up:
              target: a
              activities: [{call_operation: Standard.delete}]
        """))
    assert invoke("deploy", "--approve").exit_code == 64  # a's start fails
    (project.root / "log").unlink()
    before = status_section(project)
    result = invoke("run", "--workflow", "tidy", "--approve", "--json")
    assert result.exit_code == 64
    tasks = {t["operation"]: t for t in json.loads(result.stdout)["tasks"]}
    assert tasks["Standard.start"]["state"] == "failed"
    assert tasks["Standard.configure"]["state"] == "blocked"
    assert tasks["Standard.delete"]["state"] == "succeeded"
    assert (project.root / "log").read_text() == "delete-a\n"
    assert status_section(project) == before


def test_preconditions_and_step_filters_select_what_runs(project, invoke):
    project.write(workflows("""\
        big_only:
          steps:
            touch:
              target: tosca.nodes.Root
              filter:
                - size: [{greater_than: 2}]
              activities: [{call_operation: Standard.configure}]
        never:
          preconditions:
            - target: b
              condition:
                - size: [{equal: 99}]
          steps:
            touch:
              target: b
              activities: [{call_operation: Standard.configure}]
        """))
    assert invoke("deploy", "--approve").exit_code == 64
    planned = json.loads(invoke("plan", "--workflow", "big_only", "--json").stdout)
    assert [t["target"] for t in planned["tasks"]] == ["a"]
    never = json.loads(invoke("plan", "--workflow", "never", "--json").stdout)
    assert never["tasks"] == [] and "precondition on 'b' does not hold" in str(never["notes"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("w: {steps: {s: {target: a, target_relationship: host, activities: "
         "[{call_operation: Standard.create}]}}}", "`target_relationship` is not supported"),
        ("w: {steps: {s: {target: a, operation_host: SELF, activities: "
         "[{call_operation: Standard.create}]}}}", "`operation_host` is not supported"),
        ("w: {inputs: {x: {type: string}}, steps: {s: {target: a, activities: "
         "[{call_operation: Standard.create}]}}}", "`inputs` is not supported"),
        ("w: {steps: {s: {target: a, activities: [{call_workflow: x}]}}}",
         "activity 'call_workflow' is not supported"),
        ("w: {steps: {s: {target: a, activities: [{set_state: started}]}}}",
         "set_state in custom workflow 'w' is not supported"),
        ("deploy: {steps: {s: {target: a, activities: [{set_state: begun}]}}}",
         "set_state 'begun' is not a node state"),
        ("heal: {steps: {s: {target: a, activities: [{call_operation: Standard.create}]}}}",
         "workflow 'heal' is a built-in workflow"),
        ("w: {steps: {s: {target: a, activities: [{call_operation: Standard.creat}]}}}",
         "has no operation 'Standard.creat'"),
        ("w: {steps: {s: {target: nothere, activities: [{call_operation: create}]}}}",
         "target 'nothere' is neither a node template nor a type"),
        ("w: {steps: {s: {target: a, on_success: [t], activities: [{call_operation: create}]}}}",
         "on_success names unknown step 't'"),
        ("w: {steps: {s: {target: a, on_success: [t], activities: [{call_operation: create}]},"
         " t: {target: a, on_success: [s], activities: [{call_operation: create}]}}}",
         "form a cycle"),
        ("w: {steps: {s: {target: a, filter: [{size: [{bigger: 1}]}], activities: "
         "[{call_operation: create}]}}}", "condition operator 'bigger' is not supported"),
        ("w: {steps: {s: {target: a, activities: [{delegate: heal}]}}}",
         "delegate to 'heal' is not supported"),
        ("w: {steps: {s: {target: a, activities: [{inline: w}]}}}",
         "workflows inline each other"),
    ],
)
def test_validate_refuses_what_workflows_cannot_honour_by_name(project, invoke, body, message):
    project.write(workflows(body + "\n"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert message in result.output
    assert "ensemble.yaml:" in result.output  # with the line


def test_unknown_workflow_names_the_choices(project, invoke):
    project.write(workflows("""\
        greet:
          steps:
            s: {target: a, activities: [{call_operation: Standard.create}]}
        """))
    result = invoke("run", "--workflow", "gret", "--approve")
    assert result.exit_code == 1 and "did you mean 'greet'" in result.output
    assert invoke("plan", "--workflow", "nope").exit_code == 1
    builtin = invoke("run", "--workflow", "deploy", "--approve")
    assert builtin.exit_code == 1 and "run it with `unfurl deploy`" in builtin.output
    assert invoke("run", "--workflow", "greet", "--approve", "--", "echo").exit_code == 2


def test_undeploy_workflow_replaces_the_lifecycle_of_its_targets_as_unfurl(project, invoke):
    project.write((UNFURL / "undeploy-override.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("plan", "--workflow", "undeploy", "--json")
    expected = unfurl_plan((UNFURL / "undeploy" / "1-plan-undeploy" / "console.txt").read_text())
    assert our_plan(json.loads(result.stdout)) == expected
    assert invoke("undeploy", "--approve").exit_code == 0
    theirs = safe_load((UNFURL / "undeploy" / "2-undeploy" / "ensemble.after.yaml")
                            .read_text())["status"]["instances"]
    ours = project.status()
    assert {n: ours[n]["readyState"] for n in ours} == {
        n: theirs[n]["readyState"] for n in theirs}


def test_a_failed_custom_workflow_resumes_without_touching_history(project, invoke):
    project.write(workflows("""\
        again:
          steps:
            one:
              target: b
              activities: [{call_operation: Standard.create}]
              on_success: [two]
            two:
              target: a
              activities: [{call_operation: Standard.start}]
        """))
    assert invoke("deploy", "--approve").exit_code == 64
    before = status_section(project)
    assert invoke("run", "--workflow", "again", "--approve").exit_code == 64
    document = json.loads(invoke("resume", "--json").stdout)
    assert document["workflow"] == "again"
    job = document["changeId"][:8]
    assert [t["operation"] for t in document["tasks"] if t["changeId"].startswith(job)] == [
        "Standard.start"]  # the step that succeeded is not run again
    assert status_section(project) == before


def test_inline_and_delegate_activities_plan_in_order(project, invoke):
    project.write(workflows("""\
        outer:
          steps:
            first:
              target: b
              activities:
                - inline: inner
                - delegate: deploy
        inner:
          steps:
            only:
              target: a
              activities: [{call_operation: Standard.configure}]
        """))
    assert invoke("deploy", "--approve").exit_code == 64
    planned = json.loads(invoke("plan", "--workflow", "outer", "--json").stdout)
    assert [(t["target"], t["operation"], t["after"]) for t in planned["tasks"]] == [
        ("a", "Standard.configure", []),
        ("b", "Standard.create", [1]),
        ("b", "Standard.configure", [1, 2]),
    ]


def test_a_deploy_step_filtered_out_leaves_its_instance_alone_as_unfurl(project, invoke):
    project.write(workflows("""\
        deploy:
          steps:
            only_big:
              target: tosca.nodes.Root
              filter:
                - size: [{greater_than: 2}]
              activities:
                - call_operation: Standard.create
                - set_state: created
        """))
    planned = json.loads(invoke("plan", "--json").stdout)
    assert [(t["target"], t["operation"]) for t in planned["tasks"]] == [
        ("a", "Standard.create"), ("a", None)]
    assert {"target": "b", "message": "skipped: no step of workflow 'deploy' applies to it "
            "(step filters)"} in planned["notes"]
