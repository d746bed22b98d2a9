"""A failed operation leaves its instance as Unfurl 1.2.0 does (job.py ``_update_status``):
``error`` and ``created`` when it says it modified the instance, ``unknown`` (not created)
when it does not say (a Shell command that exits non-zero), its status untouched when it
says it modified nothing; the node state stays where the task's start put it. The next
deploy's reason follows (``error``, ``missing``, ``add``) and undeploy leaves what this
ensemble did not create. Checked against tests/data/unfurl120/16-failure-status and
13-fidelity/failcreate, what Unfurl 1.2.0 wrote for the same ensembles."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Project, ensemble_yaml, safe_load

UNFURL = Path(__file__).parent.parent / "data" / "unfurl120"
CASE = UNFURL / "16-failure-status"


def _rows(lines: list[str]) -> list[dict[str, str]]:
    return [
        {"id": line.split("\t")[0], **dict(f.partition("=")[::2] for f in line.split("\t")[1:])}
        for line in lines
    ]


def _normalised(instances: dict, lines: list[str]) -> dict[str, dict]:
    """Each instance's readyState, and its created / lastConfigChange as (job number, task
    number): changeIds differ between runs, which job and task made them does not."""
    jobs = [r["id"][:8] for r in _rows(lines) if "target" not in r]

    def where(change_id: str | None) -> tuple[int, str] | None:
        return (jobs.index(change_id[:8]), change_id[-4:]) if change_id else None

    return {
        name: {
            "readyState": record["readyState"],
            "created": where(record.get("created")),
            "lastConfigChange": where(record.get("lastConfigChange")),
        }
        for name, record in instances.items()
    }


def _theirs(step_dir: Path) -> dict[str, dict]:
    doc = safe_load((step_dir / "ensemble.after.yaml").read_text())
    instances = doc["status"]["instances"]
    return _normalised(instances, (step_dir / "jobs.tsv").read_text().splitlines())


def _ours(project: Project) -> dict[str, dict]:
    instances = {
        name: {k: v for k, v in record.items() if k != "hostedOn"}
        for name, record in project.status().items()
    }
    return _normalised(instances, project.jobs_tsv())


def _task_rows(lines: list[str], job: int) -> dict[str, dict[str, str]]:
    rows = _rows(lines)
    prefix = [r["id"][:8] for r in rows if "target" not in r][job]
    return {
        r["target"][2:]: r for r in rows if "target" in r and r["id"].startswith(prefix)
    }


def _reasons(lines: list[str], job: int) -> dict[str, str]:
    return {name: r["summary"].rsplit("reason: ", 1)[1]
            for name, r in _task_rows(lines, job).items()}


def test_a_failed_operation_leaves_its_instance_as_unfurl_does(project, invoke):
    project.write((CASE / "failures.yaml").read_text())
    result = invoke("deploy", "--approve", "--jobexitcode", "never")
    assert result.exit_code == 0, result.output
    ours, theirs = _ours(project), _theirs(CASE / "1-deploy")
    assert ours == theirs
    # done: {modified: true, success: false} -> error, created; a Shell exit without
    # `modified` -> unknown, not created; done: {modified: false} -> still pending
    assert ours["tmod"]["readyState"] == {"local": "error", "state": "creating"}
    assert ours["tsaid"]["readyState"] == {"local": "unknown", "state": "creating"}
    assert ours["tsaid"]["created"] is None
    assert ours["tunmod"]["readyState"] == {"local": "pending", "state": "creating"}
    assert ours["smod"]["created"] == (0, "0004")
    # every failed task's row is `error`; its summary names the instance's new status
    unfurl_rows = _task_rows((CASE / "1-deploy" / "jobs.tsv").read_text().splitlines(), 0)
    our_rows = _task_rows(project.jobs_tsv(), 0)
    for name in ("tmod", "tsaid", "tunmod", "smod"):
        assert our_rows[name]["status"] == unfurl_rows[name]["status"] == "error"
        status = unfurl_rows[name]["summary"].split("status ", 1)[1].split(")")[0]
        assert f"status {status})" in our_rows[name]["summary"]


def test_the_next_deploy_repairs_with_unfurls_reasons(project, invoke):
    project.write((CASE / "failures.yaml").read_text())
    invoke("deploy", "--approve")
    plan = invoke("plan")
    assert "tsaid (missing)" in plan.output and "tmod (error)" in plan.output
    assert "tunmod (add)" in plan.output
    invoke("deploy", "--approve")
    unfurl_lines = (CASE / "2-deploy" / "jobs.tsv").read_text().splitlines()
    assert _reasons(project.jobs_tsv(), 1) == _reasons(unfurl_lines, 1) == {
        "tmod": "error", "tsaid": "missing", "tunmod": "add", "smod": "error"}
    assert _ours(project) == _theirs(CASE / "2-deploy")


def test_undeploy_leaves_what_a_failed_operation_did_not_create(project, invoke):
    project.write((CASE / "failures.yaml").read_text())
    invoke("deploy", "--approve")
    invoke("deploy", "--approve")
    result = invoke("undeploy", "--approve")
    assert result.exit_code == 0, result.output
    # (the delete tasks run in parallel here, so their task numbers may be swapped)
    def jobs_only(instances: dict[str, dict]) -> dict[str, dict]:
        return {name: {**r, "lastConfigChange": (r["lastConfigChange"] or (None,))[0]}
                for name, r in instances.items()}
    assert jobs_only(_ours(project)) == jobs_only(_theirs(CASE / "3-undeploy"))
    assert "tsaid: skipped: instance wasn't created by this ensemble" in result.output
    assert project.local("tsaid") == "unknown" and project.local("tmod") == "absent"


def test_a_task_after_a_failed_one_on_its_instance_ends_it_error(project, invoke):
    """Unfurl blocks configure after a failed create with an explicit error: the instance
    ends ``error``, ``created`` by the blocked task, which has its own row."""
    project.write((UNFURL / "13-fidelity" / "failcreate.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 64
    step = UNFURL / "13-fidelity" / "failcreate" / "1-deploy"
    assert _ours(project) == _theirs(step)
    assert _ours(project)["fc"]["created"] == (0, "0002")
    theirs = [{k: r[k] for k in ("status", "operation", "digestKeys", "digestValue")}
              for r in _rows((step / "jobs.tsv").read_text().splitlines()) if "target" in r]
    ours = [{k: r[k] for k in ("status", "operation", "digestKeys", "digestValue")}
            for r in _rows(project.jobs_tsv()) if "target" in r]
    assert ours == theirs
    assert _rows(project.jobs_tsv())[0]["summary"] == _rows(
        (step / "jobs.tsv").read_text().splitlines())[0]["summary"]


def test_a_failing_check_leaves_its_instance_unknown(project, invoke):
    project.write("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            topology_template:
              node_templates:
                sick:
                  type: tosca.nodes.Root
                  interfaces:
                    Standard: {create: echo up}
                    Install: {check: "false"}
        """)
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("check", "--approve")
    assert project.local("sick") == "unknown" and project.state("sick") == "created"
    row = _task_rows(project.jobs_tsv(), 1)["sick"]
    assert row["status"] == "error" and "status unknown)" in row["summary"]
    assert "1 changed" in result.output


def test_a_step_after_one_its_hosts_failure_blocked_is_recorded_as_unfurl_does(
        project, invoke):
    """The host's create fails: the hosted instance's create is blocked (a row, status
    error, its state ``creating``), then its configure, blocked by that recorded step, ends
    it ``error`` and ``created``; what requires it is ``effective: error``; and the next
    deploy repairs that dependent too (reason error), as Unfurl 1.2.0 (unfurl-cases 304)."""
    case = UNFURL.parent / "unfurl-cases" / "304-s3-blocked-by-failed-host"
    project.write((case / "ensemble.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 64
    rows = [(r.get("target"), r.get("operation"), r["status"]) for r in _rows(project.jobs_tsv())]
    assert rows[1:] == [("::vm", "create", "error"), ("::service", "create", "error"),
                        ("::service", "configure", "error"), ("::sidecar", "configure", "ok")]
    ours = _ours(project)
    assert ours["service"]["readyState"] == {"local": "error", "state": "creating"}
    assert ours["service"]["created"] == (0, "0003")
    assert ours["sidecar"]["readyState"]["effective"] == "error"
    invoke("deploy", "--approve")
    again = [(r.get("target"), r.get("operation"), r.get("status"))
             for r in _rows(project.jobs_tsv())[6:]]
    assert ("::sidecar", "configure", "ok") in again and ("::service", "create", "error") in again


def test_a_failure_that_does_not_say_what_it_changed_leaves_its_instance_unknown(
        project, invoke):
    """As Unfurl 1.2.0 (unfurl-cases 260, 261): a command that cannot start (a list whose
    first item is not an executable) and one whose ``done`` says ``success: false`` without
    ``modified`` leave their instance ``unknown``, not created, as a command exiting
    non-zero does; ``done: {success: false, modified: true}`` makes it ``error``."""
    project.write(ensemble_yaml("""\
        missing:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create:
                implementation: {className: Shell}
                inputs: {command: [no-such-tool-for-unfurl-lite, --version]}
        denied:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create:
                implementation: {className: Shell}
                inputs: {command: echo ran, done: {success: false}}
        broke:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create:
                implementation: {className: Shell}
                inputs: {command: echo ran, done: {success: false, modified: true}}
        """))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    ours = _ours(project)
    for name in ("missing", "denied"):
        assert ours[name]["readyState"] == {"local": "unknown", "state": "creating"}, name
        assert ours[name]["created"] is None
    assert ours["broke"]["readyState"]["local"] == "error"
    assert ours["broke"]["created"] == (0, "0003")
    assert "3 changed" in result.output
