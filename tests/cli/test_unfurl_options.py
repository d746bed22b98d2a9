"""Unfurl 1.2.0's job options through the command line, on real git projects: what each
does to a job, and that an option Unfurl has but unfurl-lite does not build is refused by
name (exit 1), never taken for a typo (click's exit 2) nor accepted and ignored."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Project, ensemble_yaml, run_in_process
from unfurl_lite.cli.commands.unfurl_options import (
    NOTHING_TO_TURN_OFF,
    REFUSED,
    REFUSED_BY_COMMAND,
    REFUSED_GLOBALLY,
)

APP = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  inputs:
    domain: example.com
  service_template:
    node_types:
      acme.App:
        derived_from: tosca.nodes.Root
        properties:
          release: {type: string}
          port: {type: integer}
    topology_template:
      inputs:
        domain: {type: string}
        count: {type: integer, default: 1}
      outputs:
        domain: {value: {get_input: domain}}
        count: {value: {get_input: count}}
      node_templates:
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo db
              delete: echo db gone
        app:
          type: acme.App
          properties:
            release: one
            port: 8080
          requirements:
            - dependency: db
          interfaces:
            Standard:
              configure: echo "release {{ SELF.release }} for {{ TOPOLOGY.inputs.domain }}"
              delete: echo app gone
"""

JOB = ("--approve", "--dirty=ok")


def deploy(project: Project, *args: str) -> tuple[int, str]:
    proc = run_in_process(project.root, "deploy", *JOB, *args)
    return proc.returncode, proc.stdout + proc.stderr


def edit(project: Project, old: str, new: str) -> None:
    """Change the spec, keeping the status the jobs recorded in the same file."""
    text = project.ensemble.read_text()
    assert old in text
    project.write(text.replace(old, new, 1))


def operations(project: Project) -> list[tuple[str, str]]:
    rows = []
    for line in project.jobs_tsv():
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "target" in fields:
            rows.append((fields["target"].removeprefix("::"), fields["operation"]))
    return rows


@pytest.mark.parametrize(
    ("command", "option"),
    [(c, o) for c, options in REFUSED_BY_COMMAND.items() for o in options],
)
def test_unfurls_unsupported_options_are_refused_by_name(
    project: Project, command: str, option: str
) -> None:
    project.write(ensemble_yaml("a:\n  type: tosca.nodes.Root\n"))
    args = [option, "x"] if REFUSED[option][0] else [option]
    proc = run_in_process(project.root, command, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"Unfurl's option {option} is not supported" in proc.stderr
    assert "No such option" not in proc.stderr
    assert project.jobs_tsv() == []


@pytest.mark.parametrize("option", REFUSED_GLOBALLY)
def test_unfurls_own_options_are_refused_by_name(project: Project, option: str) -> None:
    """``unfurl --home PATH deploy``: Unfurl's options before the command, the same way."""
    project.write(ensemble_yaml("a:\n  type: tosca.nodes.Root\n"))
    proc = run_in_process(project.root, option, "x", "deploy", *JOB)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"Unfurl's option {option} is not supported" in proc.stderr
    assert "No such option" not in proc.stderr
    assert project.jobs_tsv() == []


def test_unfurls_no_home_and_the_flags_turning_off_what_is_not_here_run_the_job(
    project: Project,
) -> None:
    """``unfurl --home '' deploy`` (Unfurl's docs run it so) and ``--no-runtime``,
    ``--skip-upstream-check``, ``--no-version-check``: nothing to turn off here, the job
    runs as without them."""
    project.write(APP)
    proc = run_in_process(project.root, "--home", "", *NOTHING_TO_TURN_OFF, "deploy", *JOB)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert operations(project) == [("db", "create"), ("app", "configure")]


def test_a_misspelled_option_is_still_a_usage_error(project: Project) -> None:
    project.write(APP)
    proc = run_in_process(project.root, "deploy", "--pruen")
    assert proc.returncode == 2
    assert "No such option" in proc.stderr


def test_var_sets_topology_inputs_for_one_job(project: Project) -> None:
    project.write(APP)
    code, out = deploy(project, "--var", "input_domain", "example.org",
                       "--var", "input_count", "3")
    assert code == 0, out
    recorded = project.status()
    assert "release one for example.org" in out or recorded["app"]["readyState"]["local"] == "ok"
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(project.ensemble.read_text())
    assert doc["status"]["outputs"] == {"domain": "example.org", "count": 3}  # YAML-typed
    assert doc["spec"]["inputs"] == {"domain": "example.com"}  # never written back
    # another value is a change to what configure read: it is reconfigured
    code, out = deploy(project, "--var", "input_domain", "example.net")
    assert code == 0, out
    assert operations(project)[-1] == ("app", "configure")


def test_var_gives_a_required_input_the_file_leaves_without_a_value(project: Project) -> None:
    """As Unfurl 1.2.0 (tests/test_remote_vars.py): a topology input with no default and no
    value in the file is required, and ``--var input_NAME`` gives it; without it the
    ensemble is refused, also after a job loaded it with the value (nothing cached)."""
    project.write(APP.replace("domain: {type: string}", "domain: {type: string}\n"
                              "        region: {type: string}").replace(
        "        count: {value: {get_input: count}}",
        "        count: {value: {get_input: count}}\n        region: {value: {get_input: region}}"))
    proc = run_in_process(project.root, "plan", "--var", "input_region", "eu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code, out = deploy(project, "--var", "input_region", "eu")
    assert code == 0, out
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(project.ensemble.read_text())
    assert doc["status"]["outputs"]["region"] == "eu"
    for command in (["validate"], ["plan"], ["deploy", *JOB]):
        proc = run_in_process(project.root, *command)
        assert proc.returncode == 1, command
        assert "topology input 'region' is required" in proc.stdout + proc.stderr


def test_var_other_than_an_input_is_refused_by_name(project: Project) -> None:
    project.write(APP)
    code, out = deploy(project, "--var", "ENVIRONMENT", "prod")
    assert code == 1
    assert "--var ENVIRONMENT: only input_NAME variables are supported" in out


def test_query_and_output(project: Project) -> None:
    project.write(APP)
    proc = run_in_process(project.root, "deploy", *JOB, "--query", "::app::port",
                          "--output", "none")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("Query: ::app::port\nResult:\n8080")
    assert "Job " not in proc.stdout + proc.stderr  # --output none: no summary
    proc = run_in_process(project.root, "deploy", *JOB, "--query", "::app::release")
    assert "Nothing to do." in proc.stdout  # nothing to run: still answered
    assert proc.stdout.rstrip().endswith("Query: ::app::release\nResult:\none")
    code, out = deploy(project, "--query", "::nothing::here", "--force", "--output", "json")
    assert code == 0, out
    document = json.loads(out[out.index("{"):])
    assert document["query"] == "::nothing::here" and document["result"] is None


def test_change_detection(project: Project) -> None:
    project.write(APP)
    assert deploy(project)[0] == 0
    edit(project, "release: one", "release: two")
    before = len(operations(project))
    assert deploy(project, "--change-detection", "skip")[0] == 0
    assert len(operations(project)) == before  # skip: not compared
    assert deploy(project, "--change-detection", "evaluate")[0] == 0
    assert operations(project)[before:] == [("app", "configure")]


def test_template_prune_and_force_on_the_command_line(project: Project) -> None:
    project.write(APP)
    code, out = deploy(project, "--template", "db")
    assert code == 0, out
    assert operations(project) == [("db", "create")]
    assert set(project.status()) == {"db"}
    assert deploy(project)[0] == 0
    code, out = deploy(project, "--template", "db", "--prune")
    assert code == 0, out
    assert operations(project)[-1] == ("app", "delete")
    # as Unfurl (unfurl-cases 110): a pruned delete ends no workflow, the status stays
    assert (project.local("app"), project.state("app")) == ("ok", "deleted")
    assert deploy(project)[0] == 0
    edit(project, "          requirements:", "          directives: [protected]\n"
                                                 "          requirements:")
    proc = run_in_process(project.root, "undeploy", *JOB)
    assert proc.returncode == 0, proc.stderr
    assert project.local("db") == "ok"  # the protected app keeps what it needs
    proc = run_in_process(project.root, "undeploy", *JOB, "--force")
    assert proc.returncode == 0, proc.stderr
    assert project.local("db") == "absent" and project.local("app") == "ok"


def test_undeploy_deletes_a_pruned_instance_again(project: Project) -> None:
    """Unfurl 1.2.0 (unfurl-cases 110): --prune's delete leaves the instance ``ok`` in
    state ``deleted`` and its lastConfigChange as it was; undeploy deletes it again."""
    project.write(APP)
    assert deploy(project)[0] == 0
    before = project.status()["app"]["lastConfigChange"]
    assert deploy(project, "--template", "db", "--prune")[0] == 0
    assert project.status()["app"]["lastConfigChange"] == before
    proc = run_in_process(project.root, "undeploy", *JOB)
    assert proc.returncode == 0, proc.stderr
    assert operations(project)[-2:] == [("app", "delete"), ("db", "delete")]
    assert [op for op in operations(project) if op == ("app", "delete")] == [("app", "delete")] * 2
    assert project.local("app") == "absent"


def test_deploy_check_records_what_the_check_found(project: Project) -> None:
    project.write(ensemble_yaml("""\
        found:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              create: echo must not run
            Install:
              check:
                implementation: Template
                inputs:
                  done:
                    status: ok
        """))
    code, out = deploy(project, "--check")
    assert code == 0, out
    assert operations(project) == [("found", "check")]
    assert project.local("found") == "ok"
    assert "created" not in project.status()["found"]  # the check found it: not created here


#: every option of Unfurl 1.2.0's job commands (`unfurl COMMAND --help`, 1.2.0+3ea02871)
UNFURL_JOB_OPTIONS = {
    "deploy": "--approve --change-detection --check --commit --destroyunmanaged --dirty "
              "--dryrun --force --instance --jobexitcode --message --output --prune --push "
              "--query --repair --skip-new --starttime --template --trace --upgrade "
              "--use-environment --var",
    "undeploy": "--approve --commit --destroyunmanaged --dirty --dryrun --force --instance "
                "--jobexitcode --message --output --push --query --starttime --template "
                "--trace --use-environment --var",
    "check": "--change-detection --commit --dirty --dryrun --force --instance --jobexitcode "
             "--message --output --push --query --skip-new --starttime --template --trace "
             "--use-environment --var",
    "discover": "--approve --commit --dirty --dryrun --force --instance --jobexitcode "
                "--message --output --push --query --starttime --template --trace "
                "--use-environment --var",
    "plan": "--change-detection --check --destroyunmanaged --force --instance --output "
            "--prune --query --repair --skip-new --starttime --template --trace --upgrade "
            "--use-environment --var --workflow",
    "run": "--approve --commit --dirty --dryrun --host --instance --jobexitcode --message "
           "--module --operation --output --push --query --save --starttime --trace "
           "--use-environment --var",
}
UNFURL_JOB_OPTIONS["teardown"] = UNFURL_JOB_OPTIONS["undeploy"]
UNFURL_JOB_OPTIONS["stop"] = ("--approve --commit --dirty --dryrun --force --instance "
                              "--jobexitcode --message --output --push --query --starttime "
                              "--template --trace --use-environment --var")
#: a value for each of those options that takes one
VALUES = {"--change-detection": ("skip",), "--dirty": ("ok",), "--instance": ("x",),
          "--jobexitcode": ("error",), "--message": ("m",), "--output": ("text",),
          "--query": ("::x",), "--repair": ("error",), "--starttime": ("1",),
          "--template": ("x",), "--trace": ("1",), "--use-environment": ("x",),
          "--var": ("a", "b"), "--workflow": ("deploy",), "--host": ("x",),
          "--module": ("x",), "--operation": ("x",)}


@pytest.mark.parametrize("command", sorted(UNFURL_JOB_OPTIONS))
def test_every_option_of_unfurls_job_commands_is_known(invoke, command: str) -> None:
    """Built or refused by name, never click's "No such option" (issue 28 §4): each is
    parsed (``--help`` then answers before anything runs)."""
    unknown = []
    for option in UNFURL_JOB_OPTIONS[command].split():
        result = invoke(command, option, *VALUES.get(option, ()), "--help")
        if result.exit_code == 2 and "No such option" in result.output:
            unknown.append(option)
    assert unknown == []


def test_teardown_is_undeploy(project: Project) -> None:
    project.write(ensemble_yaml("a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
                                "      create: echo a\n      delete: echo a gone\n"))
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0
    proc = run_in_process(project.root, "teardown", "--approve")
    assert proc.returncode == 0, proc.stderr
    assert project.local("a") == "absent"
    assert operations(project)[-1] == ("a", "delete")


def test_stop_takes_the_ensemble_as_its_argument_as_unfurl(project: Project) -> None:
    project.write(ensemble_yaml("a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
                                "      create: echo a\n      stop: echo a stopped\n"))
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0
    proc = run_in_process(project.root, "stop", "--approve", "ensemble.yaml")
    assert proc.returncode == 0, proc.stderr
    assert operations(project)[-1] == ("a", "stop")
    assert project.state("a") == "stopped"
    # as Unfurl 1.2.0 (tests/test_undeploy.py test_stop; unfurl-cases 430): the task's
    # reason is `stop`, the instance `pending`, and undeploy leaves it: it does not exist
    assert "reason: stop" in project.jobs_tsv()[-1]
    assert project.local("a") == "pending"
    proc = run_in_process(project.root, "undeploy", "--approve")
    assert proc.returncode == 0, proc.stderr
    assert operations(project)[-1] == ("a", "stop")
    assert project.state("a") == "stopped"


def test_a_job_with_nothing_to_do_gives_a_jobs_json_keys(project: Project) -> None:
    """A script reads one shape whether or not the job found work (``--output json``)."""
    project.write(ensemble_yaml("a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
                                "      create: echo a\n"))
    ran = run_in_process(project.root, "deploy", "--approve", "--output", "json")
    idle = run_in_process(project.root, "deploy", "--approve", "--output", "json")
    assert ran.returncode == idle.returncode == 0, ran.stderr + idle.stderr
    job, nothing = json.loads(ran.stdout), json.loads(idle.stdout)
    assert set(nothing) == set(job) - {"renderErrors", "instances"}  # the model not loaded
    assert nothing["summary"] == "nothing to do" and nothing["tasks"] == []
    assert nothing["counts"]["tasks"] == 0 and nothing["status"] == "ok"
