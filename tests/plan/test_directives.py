"""Template directives (a node template's ``directives:`` list) as Unfurl 1.2.0 defines them.

``protected`` is compared with tests/data/unfurl120/13-structure-and-layout/directive-protected;
``dependent``, ``select``, ``discover``, ``default``, ``check`` and ``conditional`` with the runs in
tests/data/unfurl120/14-directives/ (validate, plan, deploy, deploy again, check, undeploy of
each scenario in Unfurl 1.2.0; see its README.md). ``virtual``, ``substitute`` and any other
directive are refused by name at validate.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ensemble_yaml, shell_node, unfurl120
from unfurl_lite.model.status_layout import flatten

DATA = Path(__file__).parent.parent / "data" / "unfurl120" / "13-structure-and-layout"
DIRECTIVES = Path(__file__).parent.parent / "data" / "unfurl120" / "14-directives"

#: the steps each scenario was run through in Unfurl, and the same command here
STEPS = {
    "3-deploy": ("deploy", "--approve"),
    "4-deploy-again": ("deploy", "--approve"),
    "5-check": ("check",),
    "6-undeploy": ("undeploy", "--approve"),
}


def ready(instances: dict) -> dict:
    return {name: record["readyState"] for name, record in instances.items()}


def states(instances: dict) -> dict[str, tuple[str, str | None, str | None, bool]]:
    """instance -> (local status, effective status, node state, whether it records
    ``created``)."""
    return {
        name: (r["readyState"]["local"], r["readyState"].get("effective"),
               r["readyState"].get("state"), "created" in r)
        for name, r in instances.items()
    }


def unfurl_status(step: Path) -> dict:
    doc = YAML(typ="safe").load((step / "ensemble.after.yaml").read_text())
    nested = (doc.get("status") or {}).get("instances") or {}
    return {name: record for name, (record, _) in flatten(nested).items()}


def task_rows(lines: list[str]) -> list[tuple[str, str]]:
    """(target instance, operation) of each task row of a jobs.tsv."""
    rows = []
    for line in lines:
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "target" in fields:
            rows.append((fields["target"].removeprefix("::"), fields["operation"]))
    return rows


def unfurl_tasks(scenario: str, step: str) -> list[tuple[str, str]]:
    """The task rows Unfurl's step added to jobs.tsv."""
    names = sorted(p.name for p in (DIRECTIVES / scenario).iterdir())
    before = names[names.index(step) - 1]

    def rows(name: str) -> list[str]:
        path = DIRECTIVES / scenario / name / "jobs.tsv"
        return path.read_text().splitlines() if path.exists() else []

    return task_rows(rows(step)[len(rows(before)):])


def unfurl_plan(scenario: str) -> list[tuple[str, str]]:
    """(instance, operation) of each line of Unfurl's ``plan`` output."""
    text = (DIRECTIVES / scenario / "2-plan" / "console.txt").read_text()
    planned, node = [], ""
    for line in text.splitlines():
        if match := re.match(r'Node "([^"]+)"', line):
            node = match[1]
        elif match := re.match(r"- operation (\w+)", line):
            planned.append((node, match[1]))
    return planned


def lite_plan(output: str) -> list[tuple[str, str]]:
    planned, node = [], ""
    for line in output.splitlines():
        if match := re.match(r"  (\S+) \(", line):
            node = match[1]
        elif match := re.match(r"    \d+\. \w+\.(\w+) ", line):
            planned.append((node, match[1]))
    return planned


SCENARIOS = ["dependent", "dependent-created", "select", "discover", "discover-ok", "default",
             "default-only", "default-unmatched", "check", "check-ok"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_directive_runs_as_in_unfurl(project, invoke, scenario):
    """Each step gives the instances, statuses, node states and task rows Unfurl's did."""
    project.write((DIRECTIVES / f"{scenario}.yaml").read_text())
    assert invoke("validate").exit_code == 0
    plan = invoke("plan")
    assert plan.exit_code == 0, plan.output
    assert sorted(lite_plan(plan.output)) == sorted(unfurl_plan(scenario))
    for step, command in STEPS.items():
        before = project.jobs_tsv()
        result = invoke(*command)
        theirs = DIRECTIVES / scenario / step
        assert result.exit_code == int((theirs / "exitcode.txt").read_text()), result.output
        assert states(project.status()) == states(unfurl_status(theirs)), (step, result.output)
        assert task_rows(project.jobs_tsv()[len(before):]) == unfurl_tasks(scenario, step), step


def test_dependent_template_is_never_instantiated_by_a_plan(project, invoke):
    project.write((DIRECTIVES / "dependent.yaml").read_text())
    result = invoke("plan")
    assert 'db: skipped: its template has the "dependent" directive' in result.output
    assert invoke("deploy", "--approve").exit_code == 0
    assert set(project.status()) == {"app"}
    assert invoke("check").exit_code == 0
    assert set(project.status()) == {"app"}


def test_dependent_instance_an_operation_recorded_is_deployed_as_usual(project, invoke):
    """A ``dependent`` template's instance that exists (here recorded pending) is planned."""
    text = (DIRECTIVES / "dependent.yaml").read_text() + (
        "status:\n  instances:\n    db:\n      template: db\n      readyState: {local: pending}\n"
    )
    project.write(text)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.local("db") == "ok" and "orphan" not in project.status()


def test_undeploy_leaves_an_instance_another_operation_created(project, invoke):
    """Unfurl: "creation and deletion is managed by another instance" (``created: ::NAME``)."""
    project.write((DIRECTIVES / "dependent-created.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.status()["managed"]["created"] == "::installer"
    result = invoke("undeploy", "--approve")
    assert "managed: skipped: creation and deletion is managed by another instance " \
           "::installer" in result.output
    assert not any("deleting worker" in line for line in project.jobs_tsv())


def test_select_template_is_not_found_without_external_ensembles(project, invoke):
    project.write((DIRECTIVES / "select.yaml").read_text())
    result = invoke("plan")
    assert "could not find external instance for template external" in result.output


def test_default_template_only_used_when_nothing_else_matches(project, invoke):
    project.write((DIRECTIVES / "default.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0
    assert set(project.status()) == {"real_db", "app"}
    assert 'fallback_db: skipped: a template with the "default" directive' in result.output
    # asked for by name, it is deployed (Unfurl: a filtered job requires what it names)
    assert invoke("deploy", "--approve", "--instance", "fallback_db").exit_code == 0
    assert project.local("fallback_db") == "ok"


def test_missing_requirement_of_a_default_template_counts_only_once_it_is_required(
    project, invoke
):
    """Unfurl only warns about an unused default template's unmatched requirement."""
    text = (DIRECTIVES / "default-unmatched.yaml").read_text()
    project.write(text)
    assert invoke("validate").exit_code == 0
    project.write(text.replace(
        "        other:\n          type: tosca.nodes.Root\n",
        "        other:\n          type: tosca.nodes.Root\n"
        "          requirements: [{app: fallback_app}]\n",
    ))
    assert invoke("validate").exit_code == 0
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "node template 'fallback_app' is missing requirements: db" in result.output


def test_conditional_template_is_left_out_while_a_requirement_is_unmet(project, invoke):
    """Unfurl's ``conditional`` as its releases after 1.2.0 define it (1.2.0 ignores it and
    cannot create the job: 14-directives/README.md, a deliberate difference); once the
    requirement is met it deploys as in Unfurl 1.2.0 (conditional-met)."""
    project.write((DIRECTIVES / "conditional.yaml").read_text())
    result = invoke("validate")
    assert result.exit_code == 0 and 'jobs leave it out (its "conditional" directive)' \
        in result.output
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert 'maybe: skipped: its template has the "conditional" directive and is missing ' \
        "requirements: database" in result.output
    assert sorted(project.status()) == ["other"]
    project.write((DIRECTIVES / "conditional-met.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    theirs = YAML(typ="safe").load(
        (DIRECTIVES / "conditional-met" / "ensemble.after-deploy.yaml").read_text())
    assert ready(project.status())["maybe"] == ready(theirs["status"]["instances"])["maybe"]


def test_discover_directive_never_creates_or_deletes(project, invoke):
    project.write((DIRECTIVES / "discover-ok.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    found = project.status()["found"]
    assert found["attributes"] == {"version": "1.2.3"} and "created" not in found
    result = invoke("undeploy", "--approve")
    assert "found: skipped: instance wasn't created by this ensemble" in result.output
    assert project.local("found") == "ok"
    assert not any("deleting found" in line for line in project.jobs_tsv())


def test_discover_directive_runs_only_discover_even_when_forced(project, invoke):
    """Unfurl's deploy treats an instance it must discover as read-only, --force or not."""
    project.write((DIRECTIVES / "discover.yaml").read_text())
    result = invoke("plan", "--force")
    assert result.exit_code == 0, result.output
    assert lite_plan(result.output) == [("found", "discover"), ("app", "create")]


def test_check_directive_checks_an_ok_instance_on_every_deploy(project, invoke):
    project.write((DIRECTIVES / "check-ok.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("deploy", "--approve")
    assert "Install.check [check]" in result.output
    assert "Standard.create" not in result.output
    assert project.local("checked") == "ok"


def test_protected_directive_keeps_the_instance_on_undeploy_as_unfurl(project, invoke):
    project.write((DATA / "directive-protected.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("undeploy", "--approve")
    assert result.exit_code == 0, result.output
    assert 'instance with "protected" directive' in result.output
    theirs = YAML(typ="safe").load(
        (DATA / "directive-protected" / "2-undeploy" / "ensemble.after.yaml").read_text()
    )
    assert ready(project.status()) == ready(theirs["status"]["instances"])
    assert not any("deleting keep" in line for line in project.jobs_tsv())


@pytest.mark.parametrize(
    ("directive", "meaning"),
    [
        ("virtual", "never recorded"),
        ("substitute", "substitution_mappings"),
        ("frobnicate", ""),
    ],
)
def test_directives_not_built_are_refused_by_name(project, invoke, directive, meaning):
    node = shell_node("a", "echo hi").replace(
        "  type: tosca.nodes.Root\n", f"  type: tosca.nodes.Root\n  directives: [{directive}]\n"
    )
    project.write(ensemble_yaml(node))
    result = invoke("validate")
    assert result.exit_code == 1
    assert f"template directive {directive!r} on 'a'" in result.output
    assert "not supported" in result.output and meaning in result.output
    assert "check, conditional, default, dependent, discover, protected, select" in result.output
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 1
    assert project.commits() == before and project.jobs_tsv() == []


UNFURL = unfurl120()
NEEDS_UNFURL120 = pytest.mark.skipif(
    not UNFURL.exists(), reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0"
)


@pytest.mark.unfurl120
@NEEDS_UNFURL120
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_directives_continue_what_unfurl_deployed(project, invoke, scenario):
    """Unfurl 1.2.0 deploys; unfurl-lite's second deploy and undeploy then end as Unfurl's."""
    project.write((DIRECTIVES / f"{scenario}.yaml").read_text())
    proc = subprocess.run(
        [str(UNFURL), "--home", "", "deploy", "--approve", "--dirty=ok", "--commit",
         "ensemble.yaml"],
        cwd=project.root, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert states(project.status()) == states(unfurl_status(DIRECTIVES / scenario / "3-deploy"))
    for step in ("4-deploy-again", "6-undeploy"):
        result = invoke(*STEPS[step], "--dirty=ok")
        assert result.exit_code == 0, result.output
        theirs = states(unfurl_status(DIRECTIVES / scenario / step))
        assert states(project.status()) == theirs, (step, result.output)


CONNECTS = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    capability_types:
      ClusterEndpoint:
        derived_from: tosca.capabilities.Endpoint.Admin
    relationship_types:
      ConnectsToCluster:
        derived_from: RELATIONSHIP_PARENT
        valid_target_types: [ClusterEndpoint]
    node_types:
      Cluster:
        derived_from: tosca.nodes.Root
        capabilities:
          endpoint: {type: ClusterEndpoint}
    topology_template:
      node_templates:
        defaultCluster:
          directives: [default]
          type: Cluster
        myCluster:
          type: Cluster
        other:
          type: tosca.nodes.Root
        client:
          type: tosca.nodes.Root
          requirements:
            - connect:
                relationship:
                  type: RELATIONSHIP
          interfaces:
            Standard:
              configure: echo {{ ".requirements::connect::.target::.name" | eval }}
"""


@pytest.mark.parametrize(("parent", "relationship", "target"), [
    ("tosca.relationships.ConnectsTo", "ConnectsToCluster", "myCluster"),
    # inherited valid_target_types: the nearest type in the lineage that declares them
    ("tosca.relationships.ConnectsTo", "Child", "myCluster"),
])
def test_a_requirement_naming_only_its_relationship_matches_by_its_valid_targets(
    project, invoke, parent: str, relationship: str, target: str
) -> None:
    """As Unfurl 1.2.0 (tests/test_tosca.py test_connections): a requirement with neither
    ``node`` nor ``capability`` is matched through its relationship type's
    ``valid_target_types`` (a capability type the document derives), preferring a template
    without the ``default`` directive; ``other`` has no such capability."""
    text = CONNECTS.replace("RELATIONSHIP_PARENT", parent).replace("RELATIONSHIP", relationship)
    if relationship == "Child":
        text = text.replace("    relationship_types:\n", "    relationship_types:\n"
                            "      Child: {derived_from: ConnectsToCluster}\n")
    project.write(text)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert "defaultCluster: skipped" in result.output
    assert target in project.status()


def test_a_requirement_whose_relationship_targets_nothing_here_is_refused(project, invoke):
    """A requirement the template writes, that finds no template: refused when Unfurl 1.2.0
    loads it, in its words (probed: "No matching target template found ...")."""
    project.write(CONNECTS.replace("RELATIONSHIP_PARENT", "tosca.relationships.ConnectsTo")
                  .replace("RELATIONSHIP", "ConnectsToCluster")
                  .replace("endpoint: {type: ClusterEndpoint}",
                           "endpoint: {type: tosca.capabilities.Endpoint}"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert ('No matching target template found for requirement "connect" in node template '
            '"client"') in result.output
