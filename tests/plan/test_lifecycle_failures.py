"""One rule for a failed operation inside any workflow that keeps history (run/status.py
``in_lifecycle``, Unfurl 1.2.0's deploy rule): the operation's failure leaves its instance
as deploy's would (``unknown`` when it did not say what it changed), and a later lifecycle
step on the same instance that the failure blocks ends it ``error``, with its own jobs.tsv
line. Scale out is tests/plan/test_scale_seed.py; here restart, stop, heal and update, each
in a real repository, with the order the seeds' documents give Cloudify's built-in
workflows (restart: every stop first, then every start; heal: check_status, heal, then a
reinstall when heal fails; update: the update operation, then a reinstall when it fails).
"""

from __future__ import annotations

from tests.plan.test_workflows import LOG, ensemble, ok, ran, reset, respec
from unfurl_lite.load.jobslog import parse_tsv_line


def failing_op(name: str) -> str:
    """Logs "<instance> <op>", and fails while a file ``fail-<instance>-<op>`` exists."""
    return (f'echo "{{{{ SELF.name }}}} {name}" >> {LOG} && '
            f"test ! -e fail-{{{{ SELF.name }}}}-{name}")


def two_tier(**extra: tuple[str, ...]) -> dict:
    def node(requirements: list | None = None) -> dict:
        body: dict = {"type": "tosca.nodes.Root", "interfaces": {"Standard": {
            "operations": {n: failing_op(n) for n in
                           ("create", "configure", "start", "stop", "delete")}}}}
        for interface, names in extra.items():
            body["interfaces"][interface.replace("_", ".")] = {
                "operations": {n: failing_op(n) for n in names}}
        if requirements:
            body["requirements"] = requirements
        return body
    return {"db": node(), "app": node([{"dependency": "db"}])}


def deploy(project, invoke, templates: dict) -> None:
    project.write(f"jobs/*.log\n{LOG}\nfail-*\n", name=".gitignore")
    project.write(ensemble(templates))
    ok(invoke("deploy", "--approve"))
    reset(project)


def fail(project, *what: str) -> None:
    for name in what:
        (project.root / f"fail-{name}").write_text("")


def job_rows(project) -> list[tuple[str, str, str]]:
    """(target, operation, status) of the last job's task rows."""
    rows = [parse_tsv_line(line) for line in project.jobs_tsv()]
    last = [i for i, r in enumerate(rows) if "target" not in r][-1]
    return [(r["target"], r["operation"], r["status"]) for r in rows[last + 1:]]


def test_restart_a_failed_stop_blocks_every_start_and_ends_its_instance_error(
        project, invoke):
    deploy(project, invoke, two_tier())
    fail(project, "app-stop")
    result = invoke("restart", "--approve")
    assert result.exit_code == 64, result.output
    assert ran(project) == ["app stop"]  # no start before every stop: none at all
    assert (project.local("app"), project.state("app")) == ("error", "stopping")
    assert (project.local("db"), project.state("db")) == ("ok", "started")
    # the blocked start is the step that ends app error, recorded as deploy records it
    assert job_rows(project) == [("::app", "stop", "error"), ("::app", "start", "error")]


def test_stop_a_failed_stop_leaves_its_instance_unknown_and_its_dependency_running(
        project, invoke):
    deploy(project, invoke, two_tier())
    fail(project, "app-stop")
    result = invoke("stop", "--approve")
    assert result.exit_code == 64, result.output
    assert ran(project) == ["app stop"]
    # no later step of its own: the failure that said nothing leaves it unknown
    assert (project.local("app"), project.state("app")) == ("unknown", "stopping")
    assert (project.local("db"), project.state("db")) == ("ok", "started")
    assert job_rows(project) == [("::app", "stop", "error")]


def test_heal_a_failed_configure_in_the_reinstall_ends_the_instance_error(project, invoke):
    deploy(project, invoke, two_tier(cloudify_interfaces_validation=("check_status",),
                                     cloudify_interfaces_lifecycle=("heal",)))
    fail(project, "app-check_status", "app-heal", "app-configure")
    result = invoke("heal", "--approve")
    assert result.exit_code == 64, result.output
    lines = ran(project)  # the two check_status run side by side, in either order
    assert sorted(lines[:2]) == ["app check_status", "db check_status"]
    assert lines[2:] == ["app heal", "app stop", "app delete", "app create", "app configure"]
    assert (project.local("app"), project.state("app")) == ("error", "configuring")
    assert (project.local("db"), project.state("db")) == ("ok", "started")
    assert job_rows(project)[-2:] == [("::app", "configure", "error"),
                                      ("::app", "start", "error")]


def test_update_a_failed_configure_in_the_reinstall_ends_the_instance_error(project, invoke):
    templates = two_tier(cloudify_interfaces_lifecycle=("update",))
    deploy(project, invoke, templates)
    operations = templates["app"]["interfaces"]["Standard"]["operations"]
    operations["configure"] = operations["configure"].replace("configure\"", "configure v2\"")
    respec(project, templates)  # the configure command changed: app drifted
    fail(project, "app-update", "app-configure")
    result = invoke("update", "--approve")
    assert result.exit_code == 64, result.output
    assert ran(project) == ["app update", "app stop", "app delete", "app create",
                            "app configure v2"]
    assert (project.local("app"), project.state("app")) == ("error", "configuring")
    assert (project.local("db"), project.state("db")) == ("ok", "started")
    assert job_rows(project)[-2:] == [("::app", "configure", "error"),
                                      ("::app", "start", "error")]
