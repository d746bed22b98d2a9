"""Issue 18: operations and status rules as Unfurl 1.2.0 runs them, checked against what
Unfurl 1.2.0 printed and wrote for the same ensembles (tests/data/unfurl120/13-fidelity)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Project, safe_load
from unfurl_lite.security import environment as openv

UNFURL = Path(__file__).parent.parent / "data" / "unfurl120" / "13-fidelity"


def fields(row: str) -> dict[str, str]:
    return dict(f.partition("=")[::2] for f in row.split("\t")[1:])


def theirs(step: str) -> dict:
    doc = safe_load((UNFURL / step / "ensemble.after.yaml").read_text())
    return (doc.get("status") or {}).get("instances") or {}


def their_rows(step: str) -> dict[str, dict[str, str]]:
    lines = (UNFURL / step / "jobs.tsv").read_text().splitlines()
    return {fields(r)["target"][2:]: fields(r) for r in lines if "target=::" in r}


def our_rows(project: Project) -> dict[str, dict[str, str]]:
    return {fields(r)["target"][2:]: fields(r) for r in project.jobs_tsv() if "target=::" in r}


def _recorded_tasks(project: Project) -> list[dict]:
    """Every task of every journal, as a reader folds it (its events inlined or not)."""
    from unfurl_lite.record.journal import read_journal

    return [task for path in sorted((project.root / "jobs").glob("journal*.yaml"))
            for task in read_journal(path).tasks]


def task_stdout(project: Project, target: str) -> str:
    for task in _recorded_tasks(project):
        if task["target"] == target and task.get("result"):
            return task["result"]["outputs"].get("stdout", "")
    return ""


def all_stdout(project: Project) -> list[str]:
    return [task["result"]["outputs"].get("stdout", "")
            for task in _recorded_tasks(project) if task.get("result")]


def their_rows_all(step: str) -> list[dict[str, str]]:
    lines = (UNFURL / step / "jobs.tsv").read_text().splitlines()
    return [fields(r) for r in lines if "target=::" in r]


def ready(instances: dict, name: str) -> dict:
    return dict(instances[name]["readyState"])


# ---------------------------------------------------------------- item 1: environment, timeout


def test_implementation_environment_is_rendered_and_given_to_the_command(project, invoke):
    project.write((UNFURL / "env-timeout.yaml").read_text())
    invoke("deploy", "--approve")
    console = (UNFURL / "env-timeout" / "1-deploy" / "console.txt").read_text()
    assert "FOO=hello-world BAR=plain" in console  # what Unfurl's command printed
    assert task_stdout(project, "envnode") == "FOO=hello-world BAR=plain\n"
    assert ready(project.status(), "envnode") == ready(theirs("env-timeout/1-deploy"), "envnode")


def test_implementation_timeout_kills_the_operation_and_records_it_as_unfurl(project, invoke):
    project.write((UNFURL / "env-timeout.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "timed out after 1 s" in result.output
    unfurl = theirs("env-timeout/1-deploy")
    ours = project.status()
    assert ready(ours, "slow") == ready(unfurl, "slow") == {"local": "unknown", "state": "creating"}
    assert "created" not in ours["slow"] and "created" not in unfurl["slow"]
    unfurl_row = their_rows("env-timeout/1-deploy")["slow"]
    assert our_rows(project)["slow"]["status"] == unfurl_row["status"] == "error"
    assert "1 failed" in result.output and "0 unknown" in result.output


def test_environment_rules_add_copy_remove_and_prepend():
    base = {"PATH": "/usr/bin", "HOME": "/root", "LC_ALL": "C"}
    caller = {"SECRET_TOKEN": "t", "EXTRA": "e", "PATH": "/usr/bin", "KEEP_1": "1", "KEEP_2": "2"}
    env = openv.apply_rules(
        {"A": "1", "+EXTRA": None, "+MISSING": "dflt", "+KEEP_*": None, "-LC_*": None,
         "^PATH": "/opt/bin", "B": None},
        base,
        caller,
    )
    assert env == {"PATH": "/opt/bin:/usr/bin", "HOME": "/root", "A": "1", "EXTRA": "e",
                   "MISSING": "dflt", "KEEP_1": "1", "KEEP_2": "2"}
    assert "SECRET_TOKEN" not in env  # the allow-list holds unless a rule names a variable
    assert openv.apply_rules({"-!HOME": None}, base, caller) == {"HOME": "/root"}


def test_environment_value_from_a_secret_is_redacted_in_records(project, invoke):
    project.write("""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            topology_template:
              node_templates:
                n:
                  type: tosca.nodes.Root
                  interfaces:
                    Standard:
                      configure:
                        implementation:
                          className: Shell
                          environment:
                            TOKEN:
                              eval:
                                sensitive: s3cr3t-value
                        inputs:
                          command: echo "token=$TOKEN"
        """)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    recorded = "".join(p.read_text() for p in (project.root / "jobs").glob("*.yaml"))
    assert "s3cr3t-value" not in recorded and "token=" in recorded


# ------------------------------------------------------------------------- item 9: status rules


def test_instances_without_operations_stay_pending_and_nothing_is_recorded(project, invoke):
    project.write((UNFURL / "noop.yaml").read_text())
    commits = project.commits()
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    # Unfurl: "Nothing to do.", no status written, no commit
    assert "Nothing to do." in (UNFURL / "noop" / "1-deploy" / "console.txt").read_text()
    assert theirs("noop/1-deploy") == {}
    assert "Nothing to do." in result.output
    assert project.status() == {} and project.commits() == commits
    assert project.jobs_tsv() == []


def test_instance_without_operations_takes_effective_status_from_dependencies(project, invoke):
    project.write((UNFURL / "noop2.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    unfurl, ours = theirs("noop2/1-deploy"), project.status()
    for name in ("bare", "uses_bare"):
        assert ready(ours, name) == ready(unfurl, name)
    assert ready(ours, "bare") == {"local": "pending", "effective": "ok"}
    commits = project.commits()
    result = invoke("deploy", "--approve")  # Unfurl: nothing to do the second time
    assert "Nothing to do." in (UNFURL / "noop2" / "2-deploy" / "console.txt").read_text()
    assert "Nothing to do." in result.output and project.commits() == commits


def test_failed_create_leaves_node_state_creating_as_unfurl(project, invoke):
    project.write((UNFURL / "failcreate.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 64
    unfurl = ready(theirs("failcreate/1-deploy"), "fc")
    assert ready(project.status(), "fc") == unfurl == {"local": "error", "state": "creating"}
    # the next deploy repairs it from the start of its lifecycle
    project.write(project.ensemble.read_text().replace("exit 3", "echo fixed"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "Standard.create [error]" in result.output  # Unfurl's reason (16-failure-status)
    assert ready(project.status(), "fc") == {"local": "ok", "state": "configured"}


def test_template_operations_record_created_as_unfurl(project, invoke):
    project.write((UNFURL / "tmpl2.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    unfurl, ours = theirs("tmpl2/1-deploy"), project.status()
    for name in ("trunonly", "tnothing", "tunmod"):
        assert ready(ours, name) == ready(unfurl, name)
        assert ("created" in ours[name]) == ("created" in unfurl[name]) is True
        assert ours[name]["created"] == ours[name]["lastConfigChange"]


def test_dryrun_of_an_operation_without_a_dryrun_form_fails_the_task(project, invoke):
    project.write((UNFURL / "tmpl-dry.yaml").read_text())
    commits = project.commits()
    result = invoke("deploy", "--approve", "--dryrun")
    console = (UNFURL / "tmpl-dry" / "1-dryrun" / "console.txt").read_text()
    assert console.count("could not run: dry run not supported") == 2  # t (Template) and s
    assert "t: Standard.create failed: could not run: dry run not supported" in result.output
    assert "s: Standard.configure failed: could not run: dry run not supported" in result.output
    assert "sd: Standard.configure succeeded" in result.output  # has a dryrun form
    assert "2 failed" in result.output and result.exit_code == 64
    assert project.commits() == commits and project.status() == {}


# ------------------------------------------------------------------- item 10: change detection


def test_deploy_reconfigures_when_the_inputs_digest_changed_as_unfurl(project, invoke):
    project.write((UNFURL / "digest.yaml").read_text().replace(
        "y:\n                    get_env: DGVAR", "y: two"))
    assert invoke("deploy", "--approve").exit_code == 0
    commits = project.commits()
    same = invoke("deploy", "--approve")  # Unfurl: "Nothing to do." (digest unchanged)
    assert "Nothing to do." in (UNFURL / "digest" / "2-deploy-same" / "console.txt").read_text()
    assert "Nothing to do." in same.output and project.commits() == commits

    project.write(project.ensemble.read_text().replace("x: 1", "x: 2"))
    unfurl_plan = (UNFURL / "digest" / "5-plan-input-changed" / "console.txt").read_text()
    assert "- operation configure (reason: reconfigure)" in unfurl_plan
    plan = invoke("plan")
    assert "1. Standard.configure [reconfigure]" in plan.output
    assert "the inputs of Standard.configure changed since it last ran" in plan.output
    planned = invoke("plan", "--json")
    assert [t["reason"] for t in json.loads(planned.stdout)["tasks"]] == ["reconfigure"]

    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    row = fields(project.jobs_tsv()[-1])
    unfurl_row = their_rows("digest/6-deploy-input-changed")["dg"]
    assert row["operation"] == unfurl_row["operation"] == "configure"
    assert row["summary"].endswith("reason: reconfigure") and unfurl_row["summary"].endswith(
        "reason: reconfigure")
    assert row["digestKeys"] == "command,x,y" == unfurl_row["digestKeys"]
    assert ready(project.status(), "dg") == ready(theirs("digest/6-deploy-input-changed"), "dg")
    assert "Nothing to do." in invoke("deploy", "--approve").output  # recorded: in line again


# ------------------------------------------------------------------ item 2: interfaces defaults


def test_interface_defaults_give_every_operation_its_implementation_and_inputs(project, invoke):
    project.write((UNFURL / "defaults.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    console = (UNFURL / "defaults" / "1-deploy" / "console.txt").read_text()
    printed = ["type-default dflt", "type-default own", "tmpl-default iface", "tmpl-default op"]
    assert all(f"\n{line}\n" in console for line in printed)  # what Unfurl's commands printed
    assert sorted(all_stdout(project)) == sorted(f"{line}\n" for line in printed)
    theirs_ran = sorted((r["target"], r["operation"]) for r in their_rows_all("defaults/1-deploy"))
    ours_ran = sorted((r["target"], r["operation"]) for r in (
        fields(line) for line in project.jobs_tsv() if "target=::" in line))
    assert ours_ran == theirs_ran
    unfurl = theirs("defaults/1-deploy")
    for name in ("d1", "d2"):
        assert ready(project.status(), name) == ready(unfurl, name)


def test_interface_defaults_with_an_unknown_key_is_refused_at_validate(project, invoke):
    text = (UNFURL / "defaults.yaml").read_text().replace(
        "            implementation: Shell\n", "            implementation: Shell\n"
        "            timeout: 3\n", 1)
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "timeout" in result.output and "defaults" in result.output


# ----------------------------------------------------------------- item 5: operation results


def test_result_template_instances_protected_and_readystate_as_unfurl(project, invoke):
    project.write((UNFURL / "results.yaml").read_text())
    result = invoke("deploy", "--approve")
    unfurl, ours = theirs("results/1-deploy"), project.status()
    # a resultTemplate list: SELF gets attributes and `protected`, another name is created
    assert ours["maker"]["protected"] is True is unfurl["maker"]["protected"]
    answer = unfurl["maker"]["attributes"]["answer"]
    assert str(ours["maker"]["attributes"]["answer"]) == str(answer) == "42"
    for key in ("template", "attributes", "readyState", "created"):
        assert ours["child1"][key] == unfurl["child1"][key], key
    assert ours["child1"]["created"] == "::maker"
    assert ours["child1"]["lastConfigChange"] == ours["maker"]["lastConfigChange"]
    # readyState: error from a resultTemplate sets the status; a dependent through a
    # `dependency` requirement (not a host) still runs, as in Unfurl
    assert ready(ours, "sick") == ready(unfurl, "sick") == {"local": "error", "state": "created"}
    assert ready(ours, "after_sick") == ready(unfurl, "after_sick")
    assert ours["after_sick"]["readyState"]["local"] == "ok"
    assert "after_sick: Standard.create blocked" not in result.output
    # a Template's `done: {result: ...}` is what its resultTemplate sees
    assert ours["tmplres"]["attributes"] == unfurl["tmplres"]["attributes"] == {"got": "hello"}
    # an error while rendering the resultTemplate fails the task, status unknown
    assert ready(ours, "badres") == ready(unfurl, "badres")
    assert "created" not in ours["badres"] and "created" not in unfurl["badres"]
    assert our_rows(project)["badres"]["status"] == their_rows("results/1-deploy")["badres"][
        "status"] == "error"
    assert ready(ours, "childt") == ready(unfurl, "childt")  # no operation: pending, recorded


def test_protected_instance_made_by_result_template_survives_undeploy(project, invoke):
    text = (UNFURL / "results.yaml").read_text().replace(
        "                command: echo 42\n",
        "                command: echo 42\n")
    project.write(text.replace("            Standard:\n              create:\n"
                               "                implementation: Shell\n"
                               "                inputs:\n                  command: echo 42",
                               "            Standard:\n              delete: echo gone\n"
                               "              create:\n                implementation: Shell\n"
                               "                inputs:\n                  command: echo 42", 1))
    invoke("deploy", "--approve")
    assert project.status()["maker"]["protected"] is True
    result = invoke("undeploy", "--approve")
    assert "maker: skipped: protected" in result.output
    assert project.local("maker") == "ok"


# ------------------------------------------------------------------- item 4: Unfurl's filters


def test_unfurl_filters_eval_map_value_abspath_sensitive(project, invoke):
    # map_value gives each expression's results (Unfurl printed `{'a': [Result('hi'...)]}`)
    project.write((UNFURL / "filters.yaml").read_text().replace(
        " {{ {'a': {'get_input': 'greeting'}} | map_value }}",
        " {{ ({'a': {'get_input': 'greeting'}} | map_value).a[0] }}"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    # Unfurl 1.2.0 printed "echo hi files/x.txt s3cretvalue ..." for the same filters
    console = (UNFURL / "filters" / "1-deploy" / "console.txt").read_text()
    assert "echo hi files/x.txt s3cretvalue" in console
    out = all_stdout(project)[0]
    assert out == f"hi {project.root / 'files' / 'x.txt'} <<REDACTED>> hi\n"
    recorded = "".join(p.read_text() for p in (project.root / "jobs").glob("*.yaml"))
    assert "s3cretvalue" not in recorded


def test_unknown_filter_is_a_validation_error_before_any_job(project, invoke):
    text = (UNFURL / "filters.yaml").read_text().replace("| abspath", "| abspth").replace(
        "| sensitive", "| expanduser")
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "unknown filter 'abspth'" in result.output
    assert "did you mean 'abspath'" in result.output
    assert "Ansible's filter 'expanduser' is not supported" in result.output
    assert "ensemble.yaml:18:" in result.output  # the line of the template
    deploy = invoke("deploy", "--approve")
    assert deploy.exit_code == 1 and not project.jobs_tsv()


def test_filters_keep_the_sandbox_size_limits():
    from unfurl_lite.errors import ExpressionError
    from unfurl_lite.expressions.expr import EvalContext
    from unfurl_lite.expressions.sandbox import render_template

    ctx = EvalContext(self_view={}, inputs={})
    with pytest.raises(ExpressionError):
        render_template("{{ ('x' * 1000) | map_value | center(10**9) }}", ctx)


def test_template_defaults_fill_operations_its_type_only_declares(project, invoke):
    project.write((UNFURL / "defaults2.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    console = (UNFURL / "defaults2" / "1-deploy" / "console.txt").read_text()
    assert console.count("\ntmpl-defaults-on-type-ops\n") == 2
    assert all_stdout(project) == ["tmpl-defaults-on-type-ops\n"] * 2
    assert ready(project.status(), "d3") == ready(theirs("defaults2/1-deploy"), "d3")


def test_bare_get_env_input_is_evaluated_as_a_secret(project, invoke, monkeypatch):
    monkeypatch.setenv("DGVAR", "first-value")
    project.write((UNFURL / "digest.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    out = all_stdout(project)[0]
    assert "get_env" not in out and out == "1 <<REDACTED>>\n"  # Unfurl printed "1 first"
    # a value read from the environment takes part, as in Unfurl, keyed with the clone's key
    # (docs/differences-from-unfurl.md): the keys are Unfurl's, the value its own
    row = fields(project.jobs_tsv()[-1])
    assert row["digestKeys"] == "command,x,y" == their_rows("digest/1-deploy")["dg"]["digestKeys"]
    assert row["digestValue"] != their_rows("digest/1-deploy")["dg"]["digestValue"]
