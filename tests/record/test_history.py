"""check, discover, status and history review, through the CLI on real git repos."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT, git, run_in_process

SCHEMA = json.loads((ROOT / "unfurl_lite" / "schema" / "status.schema.json").read_text())


def ensemble(templates: str, inputs: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(templates).strip("\n"), " " * 8)
    extra = textwrap.indent(textwrap.dedent(inputs).strip("\n"), " " * 6) + "\n" if inputs else ""
    return (
        "apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
        f"    topology_template:\n{extra}      node_templates:\n{body}\n"
    )


SERVER = """
server:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: mkdir -p state && touch state/server
      delete: rm -f state/server
    Install:
      check:
{check}
"""

SHELL_DONE = """\
        implementation: Shell
        inputs:
          command: test -f state/server
          done:
            status: >-
              {% if returncode == 0 %}ok{% elif returncode == 1 %}absent{% else %}error{% endif %}
"""

SHELL_RESULT_TEMPLATE = """\
        implementation: Shell
        inputs:
          command: test -f state/server && echo present || echo gone
          resultTemplate: |
            readyState: {{ 'ok' if stdout | trim == 'present' else 'absent' }}
"""

PYTHON_CHECK = """\
        implementation: {className: "probes:check_server"}
"""

PROBES = """\
import os


def check_server(ctx):
    return {"status": "ok" if os.path.exists("state/server") else "absent", "modified": False}


def discover_disks(ctx):
    return {"modified": False, "resources": [
        {"name": "disk-1", "template": "server", "attributes": {"size_gb": 20}}]}
"""


def write_server(project, check: str) -> None:
    (project.root / "probes.py").write_text(PROBES)
    git(project.root, "add", "probes.py")
    project.write(ensemble(SERVER.format(check=textwrap.indent(check, "  "))))


@pytest.mark.parametrize(
    "check",
    [SHELL_DONE, SHELL_RESULT_TEMPLATE, PYTHON_CHECK],
    ids=["done", "resultTemplate", "python"],
)
def test_check_finds_a_node_gone_marks_it_absent_and_deploy_recreates_it(project, invoke, check):
    write_server(project, check)
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.local("server") == "ok"

    (project.root / "state" / "server").unlink()
    result = invoke("check")  # no --approve: check changes nothing live
    assert result.exit_code == 0, result.output
    assert project.local("server") == "absent"
    lines = project.jobs_tsv()
    check_id = next(line for line in lines if "operation=check" in line).split("\t")[0]
    assert project.commits()[0] == f"Updating status for job {check_id[:8]}0000"
    # as Unfurl 1.2.0, the status moved without a change recorded (no lastStateChange)
    assert "lastStateChange" not in project.status()["server"]

    plan = invoke("plan")  # Unfurl's reason for an absent instance it knew: missing
    assert "server (missing)" in plan.output and "Standard.create" in plan.output
    assert invoke("deploy", "--approve").exit_code == 0
    assert (project.root / "state" / "server").exists()
    assert project.local("server") == "ok"


def test_check_that_fails_marks_unknown_and_keeps_unchecked_nodes(project, invoke):
    project.write(
        ensemble("""
        flaky:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo made
            Install:
              check: sh -c 'echo cannot reach it >&2; exit 3'
        plain:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo made
        """)
    )
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("check")
    # as Unfurl 1.2.0 (tests/data/unfurl-cases/26-check-ops): a check command that fails
    # did not say what it found, so the instance is unknown
    assert project.local("flaky") == "unknown"
    assert project.local("plain") == "ok"
    assert "plain: not checked: no check operation" in result.output
    assert result.exit_code == 64  # the check task failed


def test_plan_previews_check_and_discover(project, invoke):
    write_server(project, SHELL_DONE)
    check = invoke("plan", "--workflow", "check")
    assert check.exit_code == 0 and "Install.check [check]" in check.output
    discover = invoke("plan", "--workflow", "discover", "--json")
    assert json.loads(discover.output)["notes"][0]["message"].startswith("not discovered")
    assert not (project.root / "jobs.tsv").exists()


@pytest.mark.parametrize("kind", ["template", "python"])
def test_discover_adds_an_instance_shown_by_status_and_left_alone_by_undeploy(
    project, invoke, kind
):
    discover = (
        """
        implementation: Template
        inputs:
          done:
            resources:
              - name: disk-1
                template: server
                attributes: {size_gb: 20}
        """
        if kind == "template"
        else 'implementation: {className: "probes:discover_disks"}\n'
    )
    text = SERVER.format(check=textwrap.indent(SHELL_DONE, "  ")) + "      discover:\n" + (
        textwrap.indent(textwrap.dedent(discover).strip("\n"), " " * 8) + "\n"
    )
    (project.root / "probes.py").write_text(PROBES)
    git(project.root, "add", "probes.py")
    project.write(ensemble(text))
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("discover")
    assert result.exit_code == 0, result.output
    disk = project.status()["disk-1"]
    assert disk["created"] is False and disk["attributes"] == {"size_gb": 20}
    assert disk["lastStateChange"].endswith("0001")
    assert project.local("server") == "ok"  # a discover does not judge its own target

    status = json.loads(invoke("status", "--json").output)
    row = next(r for r in status["instances"] if r["name"] == "disk-1")
    assert row["discovered"] and row["status"] == "ok"
    assert "discovered" in invoke("status").output

    found = json.loads(invoke("history", "--instance", "disk-1", "--json").output)
    assert [job["workflow"] for job in found] == ["discover"]  # the job that found it

    undeploy = invoke("undeploy", "--approve")
    assert "disk-1: skipped: discovered" in undeploy.output
    assert project.local("disk-1") == "ok" and project.local("server") == "absent"
    invoke("undeploy", "--approve", "--destroy-discovered")
    assert project.local("disk-1") == "absent"


def three_jobs(project, invoke) -> list[str]:
    write_server(project, SHELL_DONE)
    for args in (("deploy", "--approve"), ("check",), ("undeploy", "--approve")):
        assert invoke(*args).exit_code == 0
    return git(project.root, "log", "--format=%H", "-3").split()


def test_history_lists_deploy_check_undeploy_newest_first_with_commits(project, invoke):
    commits = three_jobs(project, invoke)
    jobs = json.loads(invoke("history", "--json").output)
    assert [j["workflow"] for j in jobs] == ["undeploy", "check", "deploy"]
    assert [j["commit"] for j in jobs] == commits
    assert [j["author"] for j in jobs] == ["Test"] * 3
    assert jobs[0]["changeId"] > jobs[1]["changeId"] > jobs[2]["changeId"]
    assert jobs[1]["tasks"][0]["operation"] == "check"

    text = invoke("history").output.splitlines()
    assert [line.split()[0] for line in text[1:]] == [j["changeId"] for j in jobs]
    assert commits[0][:10] in text[1]

    def ids(*args: str) -> list[str]:
        return [j["changeId"] for j in json.loads(invoke("history", "--json", *args).output)]

    assert ids("--workflow", "check") == [jobs[1]["changeId"]]
    assert ids("--limit", "2") == [jobs[0]["changeId"], jobs[1]["changeId"]]
    assert ids("--since", jobs[1]["changeId"]) == [jobs[0]["changeId"], jobs[1]["changeId"]]
    assert ids("--since", "2020-01-01") == [j["changeId"] for j in jobs]
    assert ids("--since", "2999-01-01") == []
    assert ids("--instance", "server") == [j["changeId"] for j in jobs]
    unknown = invoke("history", "--instance", "nothing")  # no instance has that name
    assert unknown.exit_code == 1 and "no instance named 'nothing'" in unknown.output
    # with --json it is the same error, as the one JSON document on stdout (as for `show`)
    unknown = invoke("history", "--json", "--instance", "nothing")
    error = json.loads(unknown.stdout)
    assert unknown.exit_code == error["exitCode"] == 1
    assert "no instance named 'nothing'" in error["error"]
    bad = invoke("history", "--since", "yesterday-ish")
    assert bad.exit_code == 1 and "neither a changeId nor a date" in bad.output


def test_history_works_on_a_fresh_clone(project, invoke, tmp_path: Path):
    commits = three_jobs(project, invoke)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(project.root), str(clone))
    history = run_in_process(clone, "history", "--json")
    assert history.returncode == 0, history.stderr
    jobs = json.loads(history.stdout)
    assert [j["commit"] for j in jobs] == commits
    shown = run_in_process(clone, "show", jobs[1]["tasks"][0]["changeId"])
    assert shown.returncode == 0, shown.stderr
    assert "test -f state/server" in shown.stdout
    status = run_in_process(clone, "status", "--json")
    jsonschema.validate(json.loads(status.stdout), SCHEMA)


SECRET_TEMPLATES = """
db:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation: Shell
        inputs:
          command: {concat: ["echo ", {get_input: db_password}, " | wc -c"]}
          user: admin
"""
SECRET_INPUTS = """
inputs:
  db_password:
    type: string
    metadata: {sensitive: true}
    default: hunter2-secret
"""


def test_show_prints_task_inputs_with_the_secret_redacted(project, invoke):
    project.write(ensemble(SECRET_TEMPLATES, SECRET_INPUTS))
    assert invoke("deploy", "--approve").exit_code == 0
    task_id = project.status()["db"]["lastConfigChange"]
    result = invoke("show", task_id)
    assert result.exit_code == 0, result.output
    assert f"task {task_id}" in result.output
    assert "command: <<REDACTED>>" in result.output
    assert "user: admin" in result.output
    assert "returncode: 0" in result.output  # its outputs
    assert "+status:" in result.output or "+    db:" in result.output  # the job's diff
    assert "hunter2-secret" not in result.output

    job = json.loads(invoke("show", task_id[:8], "--json").output)
    assert job["record"]["workflow"] == "deploy"
    assert job["tasks"][0]["inputs"]["command"] == "<<REDACTED>>"
    assert "hunter2-secret" not in json.dumps(job)

    missing = invoke("show", task_id[:8] + "00ff")
    assert missing.exit_code == 1 and "has no task" in missing.output


def test_diff_between_two_jobs_lists_status_changes(project, invoke):
    three_jobs(project, invoke)
    jobs = json.loads(invoke("history", "--json").output)
    deploy, check, undeploy = jobs[2]["changeId"], jobs[1]["changeId"], jobs[0]["changeId"]
    result = invoke("diff", deploy, undeploy)
    assert result.exit_code == 0, result.output
    assert "server: ok/created -> absent/deleted" in result.output
    assert "-        local: ok" in result.output
    reverse = json.loads(invoke("diff", undeploy, deploy, "--json").output)
    assert reverse["from"] == deploy and reverse["to"] == undeploy
    since_check = json.loads(invoke("diff", check, "now", "--json").output)
    assert since_check["to"] == "now"
    assert since_check["instances"][0]["after"] == {"status": "absent", "state": "deleted"}


def test_status_json_matches_the_schema_and_shows_drift(project, invoke):
    text = ensemble("""
    db:
      type: tosca.nodes.Root
      interfaces:
        Standard:
          create: echo v1
    app:
      type: tosca.nodes.Root
      requirements:
        - dependency: db
    """)
    project.write(text)
    before = json.loads(invoke("status", "--json").output)
    jsonschema.validate(before, SCHEMA)
    assert before["lastJob"] is None and not any(r["recorded"] for r in before["instances"])

    assert invoke("deploy", "--approve").exit_code == 0
    report = json.loads(invoke("status", "--json").output)
    jsonschema.validate(report, SCHEMA)
    db = next(r for r in report["instances"] if r["name"] == "db")
    assert db["status"] == "ok" and db["state"] == "created" and not db["drift"]["drifted"]
    assert db["lastChange"] == db["lastConfigChange"]
    assert db["lastChangeTime"].startswith(report["lastJob"]["time"][:16])
    # app has no operation: it stays pending, as in Unfurl 1.2.0
    assert report["specChanged"] is False and report["counts"] == {"ok": 1, "pending": 1}

    project.write(project.ensemble.read_text().replace("echo v1", "echo v2"))
    drifted = json.loads(invoke("status", "--json").output)
    jsonschema.validate(drifted, SCHEMA)
    db = next(r for r in drifted["instances"] if r["name"] == "db")
    assert db["drift"]["drifted"] and "create" in db["drift"]["changes"][0]
    assert drifted["specChanged"] is True
    table = invoke("status").output
    assert "* Standard.create: inputs changed since" in table
    assert "The spec changed since the last job." in table


def test_status_effective_folds_an_absent_dependency(project, invoke):
    write_server(project, SHELL_DONE)
    text = (project.ensemble.read_text()
            + "        app:\n          type: tosca.nodes.Root\n"
            "          requirements:\n            - dependency: server\n")
    project.write(text)
    invoke("deploy", "--approve")
    (project.root / "state" / "server").unlink()
    invoke("check")
    rows = {r["name"]: r for r in json.loads(invoke("status", "--json").output)["instances"]}
    assert rows["server"]["status"] == "absent"
    assert rows["app"]["status"] == "pending" and rows["app"]["effective"] == "error"


def test_history_of_many_jobs_reads_every_job(project, invoke):
    """Hundreds of jobs: jobs.tsv lines and job files as a long-lived ensemble has them."""
    from unfurl_lite.model import changeid

    write_server(project, SHELL_DONE)
    lines, jobs_dir = [], project.root / "jobs"
    jobs_dir.mkdir()
    start = changeid.parse("A6B10000" + "0000")
    for n in range(400):
        job = str(changeid.ChangeId(start.ticks + n * 62, 0))
        stamp = changeid.job_time_label(changeid.parse(job))
        workflow = "check" if n % 2 else "deploy"
        lines.append(f"{job}\tstatus=ok\tstartTime={stamp}-000000\tsummary=job {n}\n")
        lines.append(f"{job[:8]}0001\tstatus=ok\ttarget=::server\toperation={workflow}\n")
        (jobs_dir / f"job{stamp}-{job[:8]}.yaml").write_text(
            f"manifest: ../ensemble.yaml\nchanges:\n- changeId: {job}\n  workflow: {workflow}\n"
        )
    (project.root / "jobs.tsv").write_text("".join(lines))
    jobs = json.loads(invoke("history", "--json").output)
    assert len(jobs) == 400 and jobs[0]["summary"] == "job 399"
    checks = json.loads(invoke("history", "--json", "-w", "check", "-n", "3").output)
    assert [j["summary"] for j in checks] == ["job 399", "job 397", "job 395"]
