"""`unfurl run`: an ad hoc command or operation is recorded as a job, shows what it printed,
and leaves its instances' status, readyState and lastConfigChange alone ("custom and ad hoc
workflows do not affect the change history of the topology")."""

from __future__ import annotations

import json

from tests.conftest import REFERENCE, Invoke, Project


def deployed(project: Project, invoke: Invoke) -> dict:
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    return project.status()


def test_a_failing_adhoc_command_leaves_the_instance_as_it_was(
    project: Project, invoke: Invoke
) -> None:
    before = deployed(project, invoke)
    result = invoke("run", "--approve", "--instance", "db", "--", "exit 3")
    assert result.exit_code == 64  # the job failed (--jobexitcode error)
    assert project.status() == before  # status, readyState, lastConfigChange, created
    assert project.local("db") == "ok" and project.state("db") == "created"
    last = project.jobs_tsv()[-2:]
    assert "\tstatus=error\t" in last[0]
    assert "operation=run" in last[1] and "status=error" in last[1]
    assert project.commits()[0].startswith("Updating status for job")  # recorded as a job
    plan = invoke("plan")
    assert "repair" not in plan.output and "nothing to do" in plan.output
    status = invoke("status")
    assert "error" not in status.output.split("Last job")[0]


def test_a_successful_adhoc_command_changes_no_instance_record(
    project: Project, invoke: Invoke
) -> None:
    before = deployed(project, invoke)
    assert invoke("run", "--approve", "--", "true").exit_code == 0
    assert project.status() == before
    assert "workflow: run" in project.ensemble.read_text()  # lastJob is the run


def test_an_adhoc_operation_leaves_the_instance_as_it_was(
    project: Project, invoke: Invoke
) -> None:
    before = deployed(project, invoke)
    text = project.ensemble.read_text().replace('"echo configuring app"', '"exit 5"')
    project.write(text)
    result = invoke("run", "--approve", "--instance", "app", "--operation", "configure")
    assert result.exit_code == 64
    assert project.status() == before


def test_jobexitcode_never_still_exits_0_for_a_failing_adhoc_command(
    project: Project, invoke: Invoke
) -> None:
    deployed(project, invoke)
    result = invoke("run", "--approve", "--jobexitcode", "never", "--instance", "db", "--",
                    "exit 3")
    assert result.exit_code == 0


def test_the_commands_output_is_shown_on_the_console(project: Project, invoke: Invoke) -> None:
    deployed(project, invoke)
    result = invoke("run", "--approve", "--instance", "db", "--",
                    "echo hello from db; echo warning here >&2; exit 2")
    assert result.exit_code == 64
    out = result.stdout
    assert "db: Install.run output (exit code 2):\nhello from db\nstderr:\nwarning here\n" in out
    assert out.index("hello from db") < out.index("run failed")
    ok = invoke("run", "--approve", "--", "echo hi")
    assert "db: Install.run output:\nhi\n" in ok.stdout
    assert "app: Install.run output:\nhi\n" in ok.stdout


def test_the_commands_output_is_in_the_json_result(project: Project, invoke: Invoke) -> None:
    deployed(project, invoke)
    result = invoke("run", "--approve", "--json", "--instance", "db", "--", "echo hi")
    task = json.loads(result.stdout)["tasks"][0]
    assert task["output"] == {"returncode": 0, "stdout": "hi\n", "stderr": ""}


def test_a_secret_printed_by_an_adhoc_operation_is_redacted_on_the_console(
    project: Project, invoke: Invoke, monkeypatch
) -> None:
    monkeypatch.setenv("ADHOC_SECRET", "s3cret-adhoc-42")
    project.write("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            topology_template:
              inputs:
                pw:
                  type: unfurl.datatypes.Sensitive
                  default: {eval: {get_env: ADHOC_SECRET}}
              node_templates:
                db:
                  type: tosca.nodes.Root
                  interfaces:
                    Standard:
                      operations:
                        create: {implementation: {className: Shell}, inputs: {command: "true"}}
                        configure:
                          implementation: {className: Shell}
                          inputs:
                            command: "echo pw={{ TOPOLOGY.inputs.pw }}"
        """)
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("run", "--approve", "--instance", "db", "--operation", "configure")
    assert result.exit_code == 0
    assert "pw=<<REDACTED>>" in result.stdout
    assert "s3cret-adhoc-42" not in result.output


def test_run_on_a_template_never_deployed_is_refused_and_writes_nothing(
    project: Project, invoke: Invoke
) -> None:
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    commits = project.commits()
    result = invoke("run", "--approve", "--instance", "db", "--", "echo hi")
    assert result.exit_code == 1
    assert "no instance 'db' yet" in result.output and "deploy it first" in result.output
    assert "Traceback" not in result.output
    assert project.commits() == commits and not (project.root / "jobs").exists()
