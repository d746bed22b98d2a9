"""Cloudify's update as the seed describes it: removed node instances are uninstalled as
the uninstall workflow does (dependents first, with their unlink), added ones installed."""

from __future__ import annotations

import copy

from tests.plan.test_workflows import deployed, node, ok, ran, rel_op, respec


def _link(target: str) -> dict:
    return {"node": target, "relationship": {
        "type": "cloudify.relationships.connected_to",
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


def _greeting_ensemble(greeting: str) -> str:
    wait = "while [ ! -e marks/go ]; do sleep 0.05; done"
    return f"""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      inputs:
        greeting: {{type: string, default: {greeting}}}
      node_templates:
        a:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure: 'echo started >> marks/a.start; {wait}'
        b:
          type: tosca.nodes.Root
          requirements:
            - dependency: a
          interfaces:
            Standard:
              operations:
                configure:
                  implementation: {{className: Shell}}
                  inputs:
                    command: {{concat: ["echo ", {{get_input: greeting}}, " >> marks/b.out"]}}
"""


def test_a_cancelled_job_resumes_after_a_deployment_update_with_the_new_inputs(project, invoke):
    """Seed: "Update stored operations with new inputs. This affects canceled executions,
    which can be resumed after the deployment update finishes, and use the new inputs."""
    import threading

    from tests.execution_helpers import wait_for
    from unfurl_lite import api
    from unfurl_lite.run.signals import JobControl

    marks = project.root / "marks"
    marks.mkdir()
    project.write("jobs/*.log\nmarks/\n", name=".gitignore")
    project.write(_greeting_ensemble("hello"))
    control = JobControl()
    request = api.JobRequest(ensemble=project.ensemble, workflow="deploy",
                             options=api.JobOptions())
    job = threading.Thread(target=lambda: api.run_job(request, cancel=control))
    job.start()
    wait_for(lambda: (marks / "a.start").exists())
    control.cancel()
    (marks / "go").write_text("")
    job.join(timeout=60)
    assert not (marks / "b.out").exists()  # b never ran: the job was cancelled
    assert "cancelled" in invoke("history").output
    edited = project.ensemble.read_text().replace("default: hello", "default: bonjour")
    project.write(edited)  # the deployment update: new inputs, the status kept
    ok(invoke("update", "--approve"))
    result = ok(invoke("resume"))
    assert "runs with the new inputs" in result.output
    assert (marks / "b.out").read_text() == "bonjour\n"
    assert (marks / "a.start").read_text() == "started\n"  # what was done is not run again
    assert project.local("a") == project.local("b") == "ok"


def test_a_failed_job_is_not_resumed_on_a_changed_spec(project, invoke):
    project.write("jobs/*.log\nmarks/\n", name=".gitignore")
    (project.root / "marks").mkdir()
    text = _greeting_ensemble("hello").replace("echo started >> marks/a.start; while",
                                                "exit 1; while")
    project.write(text)
    assert invoke("deploy", "--approve").exit_code == 64
    project.write(project.ensemble.read_text().replace("default: hello", "default: bonjour"))
    refused = invoke("resume")
    assert refused.exit_code == 1
    assert "spec changed" in refused.output and "only a cancelled job" in refused.output


def test_a_removed_instance_a_failed_stop_left_stopping_is_stopped_again(project, invoke):
    app = node()
    app["interfaces"]["Standard"]["operations"]["stop"] += " && test ! -e stuck"
    deployed(project, invoke, {"app": app, "other": node()})
    (project.root / "stuck").write_text("")
    assert invoke("stop", "--node-ids", "app", "--approve").exit_code == 64
    assert project.status()["app"]["readyState"]["state"] == "stopping"
    (project.root / "stuck").unlink()
    respec(project, {"other": node()})
    (project.root / "ops.log").unlink()
    ok(invoke("update", "--approve"))
    assert ran(project) == ["app stop", "app delete"]
    assert set(project.status()) == {"other"}
