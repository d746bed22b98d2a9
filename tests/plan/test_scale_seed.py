"""Cloudify's scale as the seed describes it: a failed scale out rolls back (the connected
nodes unlink before the new instances are deleted), and resuming it scales out again."""

from __future__ import annotations

from tests.plan.test_workflows import deployed, node, ok, op, ran, rel_op, reset


def _web_and_lb() -> dict:
    web = node(standard=("create", "start", "delete"))
    web["interfaces"]["Standard"]["operations"]["start"] = (
        f"{op('start')} && test ! -e fail-{{{{ SELF.name }}}}")
    web["capabilities"] = {"scalable": {"properties": {
        "default_instances": 1, "min_instances": 1, "max_instances": 5}}}
    link = {"node": "web", "relationship": {
        "type": "tosca.relationships.ConnectsTo",
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
