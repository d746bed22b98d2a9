"""Cloudify's scale as the seed describes it: a failed scale out rolls back (the connected
nodes unlink before the new instances are deleted), and resuming it scales out again."""

from __future__ import annotations

from tests.plan.test_workflows import (
    LOG,
    deployed,
    ensemble,
    node,
    ok,
    op,
    ran,
    rel_op,
    reset,
)


def _web_and_lb() -> dict:
    web = node(standard=("create", "start", "delete"))
    web["interfaces"]["Standard"]["operations"]["start"] = (
        f"{op('start')} && test ! -e fail-{{{{ SELF.name }}}}")
    web["capabilities"] = {"scalable": {"properties": {
        "default_instances": 1, "min_instances": 1, "max_instances": 5}}}
    link = {"node": "web", "relationship": {
        "type": "cloudify.relationships.connected_to",
        "interfaces": {"Configure": {"operations": {
            n: rel_op(n) for n in ("add_target", "remove_target")}}}}}
    return {"web": web, "lb": node(standard=("create",), requirements=[{"backend": link}])}


def test_rollback_unlinks_connected_nodes_before_deleting_new_instances(project, invoke):
    deployed(project, invoke, _web_and_lb())
    (project.root / "fail-web_2").write_text("")
    result = invoke("scale", "web", "--delta", "2", "--approve")
    assert result.exit_code == 64, result.output
    lines = ran(project)
    assert "lb->web_1 add_target" in lines and "lb->web_2 add_target" not in lines
    # web_1 was linked: lb lets go of it before it is deleted; web_2 never was linked
    assert lines.index("lb->web_1 remove_target") < lines.index("web_1 delete")
    assert "lb->web_2 remove_target" not in lines and "web_2 delete" in lines
    assert set(project.status()) == {"web", "lb"}


def test_resume_after_a_rollback_scales_out_again(project, invoke):
    deployed(project, invoke, _web_and_lb())
    (project.root / "fail-web_2").write_text("")
    assert invoke("scale", "web", "--delta", "2", "--approve").exit_code == 64
    again = invoke("resume")  # still failing: rolled back again, a failed job, no traceback
    assert again.exit_code == 64, again.output
    assert "Traceback" not in again.output
    (project.root / "fail-web_2").unlink()
    reset(project)
    result = ok(invoke("resume"))
    lines = ran(project)
    assert sorted(lines) == sorted([
        *(f"web_{n} {o}" for n in (1, 2) for o in ("create", "start")),
        "lb->web_1 add_target", "lb->web_2 add_target"]), result.output
    assert {n: project.local(n) for n in project.status()} == {
        "web": "ok", "lb": "ok", "web_1": "ok", "web_2": "ok"}
    jobs = [line for line in project.jobs_tsv() if line.split("\t")[0].endswith("0000")]
    assert len(jobs) == 4  # deploy, the scale and two resumes: no "interrupted" job
    assert not any("interrupted" in line for line in jobs)


def _group_ensemble(project, default: int = 2) -> None:
    from tests.plan.test_workflows import LOG, ensemble_data, yaml_text

    doc = ensemble_data({"vm": node(standard=("create", "delete")),
                         "ip": node(standard=("create", "delete")),
                         "db": node(standard=("create",))})
    topology = doc["spec"]["service_template"]["topology_template"]
    topology["groups"] = {"pair": {"type": "tosca.groups.Root", "members": ["vm", "ip"]}}
    topology["policies"] = [{"scale_pair": {
        "type": "cloudify.policies.scaling", "targets": ["pair"],
        "properties": {"default_instances": default, "max_instances": 5}}}]
    project.write(f"jobs/*.log\n{LOG}\n", name=".gitignore")
    project.write(yaml_text(doc))


def _groups(project) -> dict[str, str]:
    return {n: (r.get("scalingGroups") or {}).get("pair") for n, r in project.status().items()
            if r["template"] in ("vm", "ip")}


def test_a_scaling_group_deploys_its_default_group_instances(project, invoke):
    _group_ensemble(project)
    ok(invoke("deploy", "--approve"))
    assert _groups(project) == {"vm": "pair", "ip": "pair", "vm_1": "pair_1", "ip_1": "pair_1"}
    assert "db_1" not in project.status()  # not a member: one instance


def test_group_instances_scale_out_and_in_whole(project, invoke):
    _group_ensemble(project, default=1)
    ok(invoke("deploy", "--approve"))
    reset(project)
    ok(invoke("scale", "pair", "--delta", "2", "--approve"))  # delta counts group instances
    assert sorted(ran(project)) == sorted(f"{t}_{n} create" for t in ("vm", "ip") for n in (1, 2))
    # scaling the member template alone breaks the pairing by name: vm_1 goes, ip_1 stays
    ok(invoke("scale", "vm", "--delta", "-1", "--include-instances", "vm_1", "--approve"))
    reset(project)
    ok(invoke("scale", "pair", "--approve"))
    groups = _groups(project)
    new = {n for n in groups if groups[n] == "pair_3"}
    assert new == {"vm_1", "ip_3"}, groups
    reset(project)
    # include one member: its whole group instance goes, not the other member of that name
    ok(invoke("scale", "pair", "--delta", "-1", "--include-instances", "vm_1", "--approve"))
    assert sorted(ran(project)) == ["ip_3 delete", "vm_1 delete"]
    assert "ip_1" in project.status()
    reset(project)
    # exclude by a member or by the group instance's id: the newest other one goes
    ok(invoke("scale", "pair", "--delta", "-1", "-p", "exclude_instances=[ip_2]", "--approve"))
    assert sorted(ran(project)) == ["ip_1 delete"]  # pair_1 had lost its vm already


def test_group_inclusions_and_exclusions_are_checked_as_the_seed_says(project, invoke):
    _group_ensemble(project, default=3)
    ok(invoke("deploy", "--approve"))
    reset(project)
    cases = {
        ("--include-instances", "vm_9"): "no group instances or their members of pair",
        ("--include-instances", "vm_1", "--exclude-instances", "ip_1"): "both included",
        ("--exclude-instances", "vm,ip_1"): "not more than the 2 excluded",
        ("--exclude-instances", "pair,pair_2"): "not more than the 2 excluded",
    }
    for args, message in cases.items():
        result = invoke("scale", "pair", "--delta", "-1", *args, "--approve")
        assert result.exit_code == 1 and message in result.output, (args, result.output)
    up = invoke("scale", "pair", "--include-instances", "vm", "--approve")
    assert up.exit_code == 1 and "only apply when scaling in" in up.output
    assert ran(project) == []
    ok(invoke("scale", "pair", "--delta", "-1", "--exclude-instances", "vm_2", "--approve"))
    assert sorted(ran(project)) == ["ip_1 delete", "vm_1 delete"]


def test_scaling_in_again_after_a_failed_stop_stops_before_deleting(project, invoke):
    """The seed's scale in runs the uninstall operations (stop, delete) on each removed
    instance: a scale in whose stop failed left the instance ``stopping``; the next scale in
    stops it again, as Cloudify's uninstall does, rather than deleting what still runs."""
    worker = node()
    worker["interfaces"]["Standard"]["operations"]["stop"] = (
        f"{op('stop')} && test ! -e stuck")
    worker["capabilities"] = {"scalable": {"properties": {
        "default_instances": 2, "max_instances": 5}}}
    deployed(project, invoke, {"worker": worker})
    (project.root / "stuck").write_text("")
    reset(project)
    assert invoke("scale", "worker", "--delta", "-1", "--approve").exit_code == 64
    assert project.status()["worker_1"]["readyState"]["state"] == "stopping"
    (project.root / "stuck").unlink()
    reset(project)
    ok(invoke("scale", "worker", "--delta", "-1", "--approve"))
    assert ran(project) == ["worker_1 stop", "worker_1 delete"]
    assert sorted(project.status()) == ["worker"]


def test_a_failed_configure_leaves_the_new_instance_error_in_scale_as_in_deploy(
        project, invoke):
    """One rule for deploy and scale out (Unfurl 1.2.0's): the start a failed configure
    blocks ends the instance ``error``; the configure alone would leave it ``unknown``."""
    web = node(standard=("create", "configure", "start", "delete"))
    web["interfaces"]["Standard"]["operations"]["configure"] = (
        f"{op('configure')} && test ! -e fail-{{{{ SELF.name }}}}")
    web["capabilities"] = {"scalable": {"properties": {
        "default_instances": 1, "min_instances": 1, "max_instances": 5}}}
    (project.root / "fail-web").write_text("")
    project.write(f"jobs/*.log\n{LOG}\n", name=".gitignore")
    project.write(ensemble({"web": web}))
    assert invoke("deploy", "--approve").exit_code != 0
    assert (project.local("web"), project.status()["web"]["readyState"]["state"]) == (
        "error", "configuring")
    (project.root / "fail-web").unlink()
    ok(invoke("deploy", "--approve"))
    (project.root / "fail-web_1").write_text("")
    result = invoke("scale", "web", "--delta", "1", "--no-rollback-if-failed", "--approve")
    assert result.exit_code == 64, result.output
    assert (project.local("web_1"), project.status()["web_1"]["readyState"]["state"]) == (
        "error", "configuring")
    blocked = [line for line in project.jobs_tsv() if "operation=start" in line][-1]
    assert "status=error" in blocked and "target=::web_1" in blocked
