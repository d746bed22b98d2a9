"""Issue 18 item 10: a changed environment variable an operation's inputs read reconfigures
on the next deploy, as in Unfurl 1.2.0, and ``plan`` says why; the implementation's
``environment`` takes no part, as in Unfurl. The variables stay secrets: their digests are
keyed with the clone's own key in ``.git/`` (never committed). And ``primary`` as Unfurl
reads it. Checked against Unfurl 1.2.0's runs in tests/data/unfurl120/17-env-digest."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.conftest import Project, git, run_in_process

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "17-env-digest"

ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      inputs:
        region:
          type: string
          default: {eval: {get_env: HC_REGION}}
      node_templates:
        viainput:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure:
                implementation: Shell
                inputs:
                  command: "echo {{ inputs.y }}"
                  y: {eval: {get_env: HC_TOKEN}}
        viatopology:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure:
                implementation: Shell
                inputs:
                  command: "echo {{ TOPOLOGY.inputs.region }}"
        viaenv:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              configure:
                implementation:
                  className: Shell
                  environment:
                    BAR: {eval: {get_env: HC_OTHER}}
                inputs:
                  command: "echo bar=$BAR"
"""

SECRET = "tok-5f3a9c2e71"


def env(token: str = SECRET, region: str = "eu-west-9", other: str = "o1") -> dict[str, str]:
    return {"HC_TOKEN": token, "HC_REGION": region, "HC_OTHER": other}


def unfurl_console(step: str) -> str:
    return (DATA / "envdigest" / step / "console.txt").read_text()


@pytest.fixture
def deployed(project: Project) -> Project:
    project.write(ENSEMBLE)
    result = run_in_process(project.root, "deploy", "--approve", env=env())
    assert result.returncode == 0, result.stdout + result.stderr
    return project


def test_a_changed_variable_read_by_an_input_reconfigures_and_plan_says_why(deployed):
    assert "operation configure (reason: reconfigure)" in unfurl_console("6-plan-evar4")
    same = run_in_process(deployed.root, "plan", env=env())
    assert "reconfigure" not in same.stdout and "already ok" in same.stdout
    plan = run_in_process(deployed.root, "plan", env=env(token="tok-rotated-000"))
    assert plan.returncode == 0
    assert ("viainput: reconfigure: the inputs of Standard.configure changed since it last "
            "ran") in plan.stdout
    assert "they read the environment variables HC_TOKEN" in plan.stdout
    assert "viatopology: skipped: already ok" in plan.stdout
    commits = deployed.commits()
    result = run_in_process(deployed.root, "deploy", "--approve", env=env(token="tok-rotated-000"))
    assert result.returncode == 0 and len(deployed.commits()) == len(commits) + 1
    last = deployed.jobs_tsv()[-1]
    assert "target=::viainput" in last and "reason: reconfigure" in last
    assert "digestKeys=command,y" in last  # as Unfurl's row: its inputs, the variable's too
    again = run_in_process(deployed.root, "deploy", "--approve", env=env(token="tok-rotated-000"))
    assert "Nothing to do." in again.stdout


def test_a_topology_input_read_from_the_environment_reconfigures_what_read_it(deployed):
    assert "operation configure (reason: reconfigure)" in unfurl_console("7-plan-evar5")
    plan = run_in_process(deployed.root, "plan", env=env(region="ap-south-7"))
    assert "viatopology: reconfigure" in plan.stdout and "HC_REGION" in plan.stdout
    assert "viainput: skipped: already ok" in plan.stdout


def test_the_implementations_environment_takes_no_part_as_in_unfurl(deployed):
    assert "Nothing to do." in unfurl_console("5-plan-evar3")  # environment: {BAR: get_env}
    assert "Nothing to do." in unfurl_console("3-plan-evar1")
    assert "Nothing to do." in unfurl_console("4-plan-evar2")
    plan = run_in_process(deployed.root, "plan", env=env(other="o2"))
    assert "reconfigure" not in plan.stdout


def test_variables_are_digested_with_the_clones_key_never_in_plain(deployed):
    records = "".join(
        p.read_text() for p in deployed.root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    )
    assert SECRET not in records
    plain = hashlib.sha1(f"echo {SECRET}{SECRET}".encode()).hexdigest()
    assert plain not in records  # Unfurl's digest of the plain value is not what we record
    key = deployed.root / ".git" / "unfurl-lite-digest-key"
    assert key.exists() and key.stat().st_mode & 0o077 == 0
    assert "unfurl-lite-digest-key" not in git(deployed.root, "ls-files")
    assert git(deployed.root, "status", "--porcelain").strip() == ""


def test_a_fresh_clone_has_its_own_key(deployed, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(deployed.root), str(clone))
    plan = run_in_process(clone, "plan", env=env())
    # the recorded digest was keyed with the other clone's key: reconfigure once
    assert "viainput: reconfigure" in plan.stdout
    assert (clone / ".git" / "unfurl-lite-digest-key").read_bytes() != (
        deployed.root / ".git" / "unfurl-lite-digest-key").read_bytes()


@pytest.mark.parametrize("scenario", ["primary1", "primary3", "primary6"])
def test_primary_naming_no_configurator_is_refused_by_name(project, invoke, scenario):
    project.write((DATA / f"{scenario}.yaml").read_text())
    result = invoke("validate")
    assert result.exit_code == 1
    assert "`primary: " in result.output and "is not supported" in result.output
    assert "implementation: COMMAND" in result.output
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 1 and project.commits() == before


def test_primary_naming_a_configurator_runs_it_as_unfurl_does(project, invoke):
    project.write((DATA / "primary5.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    assert "got: from-template" in (
        DATA / "primary5" / "1-deploy" / "ensemble.after.yaml").read_text()
    assert project.status()["p"]["attributes"] == {"got": "from-template"}


@pytest.mark.parametrize("scenario", ["primary2", "primary4"])
def test_a_command_as_the_implementation_runs_as_in_unfurl(project, invoke, scenario):
    project.write((DATA / f"{scenario}.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0 and project.local("p") == "ok"
    assert "form-command" in (DATA / scenario / "1-deploy" / "console.txt").read_text()


def test_an_input_the_operation_never_reads_takes_no_part(project, invoke):
    """Unfurl digests the inputs an operation read (15-native-types: `lst` and `padded`,
    never read, are not in digestKeys=command,num): changing one does not reconfigure."""
    tsv = (DATA.parent / "15-native-types" / "native" / "1-deploy" / "jobs.tsv").read_text()
    assert "digestKeys=command,num\t" in tsv
    project.write(ENSEMBLE.replace('                  y: {eval: {get_env: HC_TOKEN}}\n',
                                   '                  y: {eval: {get_env: HC_TOKEN}}\n'
                                   '                  unused: one\n'))
    assert run_in_process(project.root, "deploy", "--approve", env=env()).returncode == 0
    project.write(project.ensemble.read_text().replace("unused: one", "unused: two"))
    plan = run_in_process(project.root, "plan", env=env())
    assert "reconfigure" not in plan.stdout
    project.write(project.ensemble.read_text().replace('"echo {{ inputs.y }}"',
                                                       '"echo {{ inputs.y }} {{ inputs.unused }}"'))
    plan = run_in_process(project.root, "plan", env=env())
    assert "viainput: reconfigure" in plan.stdout  # now it reads it


def test_accessed_inputs_follow_unfurls_configurators():
    """The inputs a configurator resolves, and those its templates read, take part (in the
    order they are declared, as Unfurl's digestKeys of tests/data/unfurl-cases/01 list
    them); cwd, resultTemplate and unread inputs do not, nor yet one only a resultTemplate
    reads (it is resolved when the resultTemplate reaches it, after the run: unfurl-cases
    206); a Python operation reads all."""
    from unfurl_lite.expressions.expr import EvalContext
    from unfurl_lite.expressions.reads import operation_reads

    def read(raw: dict, kind: str) -> tuple[str, ...]:
        return operation_reads(raw, None, kind, EvalContext(self_view={}, inputs={})).inputs

    raw = {"x": 1, "command": "echo {{ inputs.x }} {{ inputs['z'] }}", "z": 2, "cwd": "/tmp",
           "dryrun": "--check", "unused": 3, "resultTemplate": "{{ inputs.w }}", "w": 4}
    assert set(read(raw, "Shell")) == {"command", "x", "z", "dryrun"}
    assert read(raw, "Shell") == ("x", "command", "z", "dryrun")
    assert read({"run": "{{ inputs.a }}", "a": 1, "b": 2}, "Template") == ("run", "a")
    assert read(raw, "Python") == tuple(raw)  # a Python operation gets them all


def test_lookup_env_in_a_template_is_read_and_reconfigures_as_in_unfurl(project):
    """Unfurl's `{{ lookup('env', 'EVAR5') }}` (its viatemplate node) reconfigures when the
    variable changes; here it reads as `get_env` (the variable must be declared)."""
    assert "operation configure (reason: reconfigure)" in unfurl_console("7-plan-evar5")
    project.write(ENSEMBLE.replace('"echo {{ TOPOLOGY.inputs.region }}"',
                                   "\"echo {{ lookup('env', 'HC_REGION') }}\""))
    result = run_in_process(project.root, "deploy", "--approve", env=env())
    assert result.returncode == 0, result.stdout + result.stderr
    plan = run_in_process(project.root, "plan", env=env(region="ap-south-7"))
    assert "viatopology: reconfigure" in plan.stdout and "HC_REGION" in plan.stdout
    assert "eu-west-9" not in "".join(p.read_text() for p in (project.root / "jobs").glob("*"))


def test_other_lookup_plugins_are_refused_at_validate(project, invoke):
    project.write(ENSEMBLE.replace('"echo {{ TOPOLOGY.inputs.region }}"',
                                   "\"echo {{ lookup('pipe', 'date') }}\""))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "Ansible's lookup plugin 'pipe' is not supported" in result.output
