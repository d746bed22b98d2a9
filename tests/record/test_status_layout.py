"""The status layout both ways: instances hosted on another are nested under their host's
record, as Unfurl 1.2.0 writes them (captured in tests/data/unfurl120/13-structure-and-layout)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import unfurl120

DATA = Path(__file__).parent.parent / "data" / "unfurl120"
HOSTED = DATA / "13-structure-and-layout"
UNFURL = unfurl120()
NEEDS_UNFURL120 = pytest.mark.skipif(
    not UNFURL.exists(), reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def tree(instances: dict) -> dict:
    """The nesting and readyState of a status section, without changeIds."""
    return {
        name: {
            "readyState": record["readyState"],
            **({"instances": tree(record["instances"])} if "instances" in record else {}),
        }
        for name, record in (instances or {}).items()
    }


def status_tree(path: Path) -> dict:
    return tree(load(path)["status"]["instances"])


def test_deploy_writes_hosted_instances_under_their_host_as_unfurl(project, invoke):
    project.write((HOSTED / "hosted.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    assert status_tree(project.ensemble) == status_tree(
        HOSTED / "hosted" / "1-deploy" / "ensemble.after.yaml"
    )
    assert invoke("undeploy", "--approve").exit_code == 0
    assert status_tree(project.ensemble) == status_tree(
        HOSTED / "hosted" / "3-undeploy" / "ensemble.after.yaml"
    )


def test_what_unfurl_deployed_nested_is_already_ok(project, invoke):
    project.write((HOSTED / "hosted" / "1-deploy" / "ensemble.after.yaml").read_text())
    before = project.commits()
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.commits() == before  # nothing to do: web and app were read, not re-created
    result = invoke("status")
    assert result.exit_code == 0
    for name in ("server", "app", "web", "db"):
        assert re.search(rf"\b{name}\b.*\bok\b", result.output), result.output


def test_unfurls_blocked_hosted_instance_keeps_its_status(project, invoke):
    project.write(
        (DATA / "02b-failing-create-host-blocked" / "1-deploy" / "ensemble.after.yaml").read_text()
    )
    from unfurl_lite.load.loader import load_ensemble

    ensemble = load_ensemble(project.ensemble)
    app = ensemble.instances["app"]
    assert (str(app.status), str(app.state)) == ("pending", "configuring")
    assert str(ensemble.instances["db"].state) == "creating"


def test_a_flat_layout_from_older_versions_loads_and_is_rewritten_nested(project, invoke):
    project.write((HOSTED / "hosted.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    doc = load(project.ensemble)
    doc["status"]["instances"] = project.status()  # flat: every instance at the top
    yaml = YAML()
    with project.ensemble.open("w") as f:
        yaml.dump(doc, f)
    project.write(project.ensemble.read_text())
    assert set(load(project.ensemble)["status"]["instances"]) == {"server", "app", "web", "db"}
    assert invoke("deploy", "--approve").exit_code == 0  # nothing to do: all ok
    assert set(load(project.ensemble)["status"]["instances"]) == {"server", "app", "web", "db"}
    assert invoke("deploy", "--approve", "--force").exit_code == 0
    assert status_tree(project.ensemble) == status_tree(
        HOSTED / "hosted" / "1-deploy" / "ensemble.after.yaml"
    )


def unfurl(project, *args):
    proc = subprocess.run(
        [str(UNFURL), "--home", "", *args],
        cwd=project.root, capture_output=True, text=True, timeout=120,
    )
    return proc.returncode, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


@pytest.mark.unfurl120
@NEEDS_UNFURL120
def test_unfurl_reads_our_nested_layout(project, invoke):
    project.write((HOSTED / "hosted.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    code, out = unfurl(project, "status", "ensemble.yaml")
    assert code == 0, out
    for name, state in (("server", "created"), ("app", "configured"), ("web", "configured")):
        assert f"NodeInstance('{name}') ok {state}" in out, out
    assert invoke("undeploy", "--approve").exit_code == 0
    code, out = unfurl(project, "status", "ensemble.yaml")
    assert "NodeInstance('server') absent deleted" in out, out


@pytest.mark.unfurl120
@NEEDS_UNFURL120
def test_we_read_unfurls_nested_layout(project, invoke):
    project.write((HOSTED / "hosted.yaml").read_text())
    code, out = unfurl(project, "deploy", "--approve", "--dirty=ok", "--commit", "ensemble.yaml")
    assert code == 0, out
    assert status_tree(project.ensemble) == status_tree(
        HOSTED / "hosted" / "1-deploy" / "ensemble.after.yaml"
    )
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.commits() == before
    # Unfurl leaves its ensemble.yaml.lock deleted in the work tree
    assert invoke("undeploy", "--approve", "--dirty=ok").exit_code == 0
    assert status_tree(project.ensemble) == status_tree(
        HOSTED / "hosted" / "3-undeploy" / "ensemble.after.yaml"
    )


RELATIONSHIP = DATA / "10-relationship-ops"


def requirements_of(path_or_status, name: str = "app") -> list:
    instances = (
        load(path_or_status)["status"]["instances"]
        if isinstance(path_or_status, Path) else path_or_status
    )
    return instances[name].get("requirements")


def without_change_ids(entries: list) -> list:
    return [
        {req: {k: v for k, v in record.items() if k not in ("lastConfigChange", "created")}
         for req, record in entry.items()}
        for entry in entries
    ]


def test_relationship_instances_are_recorded_under_their_source_as_unfurl(project, invoke):
    project.write((RELATIONSHIP / "1-deploy" / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    ours = requirements_of(project.status())
    assert without_change_ids(ours) == without_change_ids(
        requirements_of(RELATIONSHIP / "1-deploy" / "ensemble.after.yaml")
    )
    rows = [line.split("\t") for line in project.jobs_tsv()[1:]]
    relationship_rows = [r for r in rows if "operation=pre_configure_source" in r]
    assert relationship_rows[0][3] == "target=::app::.requirements::[.name=db]"
    summary = relationship_rows[0][-1]
    assert "on instance db (type tosca.relationships.ConnectsTo, status ok)" in summary
    app = project.status()["app"]
    configure = next(r[0] for r in rows if "operation=configure" in r)
    assert app["lastConfigChange"] == app["created"] == configure  # as Unfurl: not a link's
    assert ours[0]["db"]["created"] == relationship_rows[0][0]

    assert invoke("undeploy", "--approve").exit_code == 0
    assert without_change_ids(requirements_of(project.status())) == without_change_ids(
        requirements_of(RELATIONSHIP / "2-undeploy" / "ensemble.after.yaml")
    )
    assert status_tree(project.ensemble) == status_tree(
        RELATIONSHIP / "2-undeploy" / "ensemble.after.yaml"
    )  # app's effective status is error once its link is absent, as in Unfurl
    last = project.jobs_tsv()[-1].split("\t")
    assert last[3] == "target=::app::.requirements::[.name=db]"
    assert last[1] == f"previousId={ours[0]['db']['lastConfigChange']}"


def test_we_continue_from_unfurls_relationship_instances(project, invoke):
    after = RELATIONSHIP / "1-deploy" / "ensemble.after.yaml"
    project.write(after.read_text())
    before = project.commits()
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.commits() == before  # nothing to do
    assert invoke("undeploy", "--approve").exit_code == 0
    last = project.jobs_tsv()[-1].split("\t")
    # remove_target chains from the relationship instance's own last change, as in Unfurl
    recorded = requirements_of(after)[0]["db"]["lastConfigChange"]
    assert last[1] == f"previousId={recorded}"
    assert without_change_ids(requirements_of(project.status())) == without_change_ids(
        requirements_of(RELATIONSHIP / "2-undeploy" / "ensemble.after.yaml")
    )


@pytest.mark.unfurl120
@NEEDS_UNFURL120
def test_unfurl_reads_our_relationship_instances(project, invoke):
    project.write((RELATIONSHIP / "1-deploy" / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    assert invoke("undeploy", "--approve").exit_code == 0
    code, out = unfurl(project, "status", "ensemble.yaml")
    assert code == 0, out
    assert "NodeInstance('app') error configured" in out, out
    assert "RelationshipInstance('db') absent configured" in out, out
