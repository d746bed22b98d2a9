"""Cloudify's heal as the seed describes it, sentence by sentence: health from check_status
(now, or the last one recorded), heal operations, and a reinstall that re-runs the
relationship operations (preconfigure, postconfigure, establish) on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import InvokeIn, git
from tests.plan.test_cloudify_fidelity import REINSTALL, failing_if, of, with_op
from tests.plan.test_workflows import deployed, node, ok, op, ran, rel_op, reset


def _relationships(tmp_path: Path, invoke_in: InvokeIn) -> Path:
    project = tmp_path / "rel"
    ok(invoke_in(tmp_path, "init", str(project), "--from", "relationships"))
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "T")
    ok(invoke_in(project, "deploy", "--approve"))
    (project / "events.log").unlink()
    return project


@pytest.mark.parametrize("how", [
    ("heal", "app"), ("heal", "app", "--force-reinstall"), ("heal",),
    ("heal", "app", "--no-check-status"), ("update", "--workflow-id", "heal"),
    ("heal", "app", "-p", "force_reinstall=true"),
])
def test_heal_reinstall_re_establishes_relationships(tmp_path, invoke_in, how):
    """The issue's repro: the bundled relationships example, deploy, heal app: app has no
    check_status, so it is reinstalled, and the reinstall re-runs its relationship
    operations after its own start."""
    project = _relationships(tmp_path, invoke_in)
    ok(invoke_in(project, *how, "--approve"))
    events = (project / "events.log").read_text().splitlines()
    app = [e for e in events if e.startswith("app")]
    assert app == [
        "app stopped", "app: disconnected from db", "app deleted", "app created",
        "app: configuring connection to db", "app configured", "app started",
        "app: connected to db",
    ], events


def seed_blueprint() -> dict:
    """The seed's example: webserver_host (check fails, heal passes), webserver (check and
    heal fail), module (in webserver, connected to database), database (check and heal
    fail), floating_ip (check passes; webserver_host is connected to it)."""
    def link(target: str) -> dict:
        ops = ("pre_configure_source", "post_configure_source", "add_target", "remove_target")
        return {"node": target, "relationship": {
            "type": "cloudify.relationships.connected_to",
            "interfaces": {"Configure": {"operations": {n: rel_op(n) for n in ops}}}}}

    def checked(passes: bool, heal: bool | None, **kw) -> dict:
        body = node(**kw)
        with_op(body, "Validation", "check_status",
                op("check_status") + ("" if passes else " && false"))
        if heal is not None:
            with_op(body, "Lifecycle", "heal", op("heal") + ("" if heal else " && false"))
        return body

    return {
        "floating_ip": checked(True, None),
        "webserver_host": checked(False, True, requirements=[{"ip": link("floating_ip")}]),
        "webserver": checked(False, False, requirements=[{"host": "webserver_host"}]),
        "database": checked(False, False),
        "module": node(requirements=[{"host": "webserver"}, {"database": link("database")}]),
    }


def test_the_seeds_heal_example(project, invoke):
    deployed(project, invoke, seed_blueprint())
    ok(invoke("heal", "--approve"))
    lines = ran(project)
    checks = [line for line in lines if line.endswith("check_status")]
    assert sorted(checks) == sorted(f"{n} check_status" for n in (
        "floating_ip", "webserver_host", "webserver", "database"))  # module declares none
    # 1. webserver_host fails check_status, so it is healed (not reinstalled)
    assert "webserver_host heal" in lines and "webserver_host delete" not in lines
    # 2. webserver fails check and heal: reinstalled, with module (contained in it)
    for name in ("webserver", "module"):
        assert f"{name} delete" in lines and f"{name} start" in lines
    assert "module heal" not in lines
    # 3. database fails check and heal: reinstalled, module's relationship re-established
    assert "database heal" in lines and "database create" in lines
    assert lines.index("module->database remove_target") < lines.index("database stop")
    assert lines.index("database start") < lines.index("module->database add_target")
    for step in ("pre_configure_source", "post_configure_source", "add_target"):
        assert f"module->database {step}" in lines
    # 4. floating_ip passes: neither healed nor reinstalled, relationships not re-established
    assert [line for line in lines if "floating_ip" in line] == ["floating_ip check_status"]
    assert project.local("webserver_host") == "ok" and project.local("database") == "ok"


def test_a_passing_check_is_not_healed_whatever_the_recorded_status(project, invoke):
    app = node(Lifecycle=("heal",))
    with_op(app, "Validation", "check_status", failing_if("check_status", "sick"))
    with_op(app, "Install", "check", f"{op('check')} && false")
    deployed(project, invoke, {"app": app})
    invoke("check", "--approve")  # Unfurl's check fails: app is recorded unknown
    assert project.local("app") != "ok"
    reset(project)
    ok(invoke("heal", "--approve"))
    assert ran(project) == ["app check_status"]
    assert project.local("app") == "ok"


def test_no_check_status_uses_the_last_recorded_check(project, invoke):
    app = node()
    with_op(app, "Validation", "check_status", failing_if("check_status", "sick"))
    deployed(project, invoke, {"app": app, "db": node()})
    # never checked: not healthy, so reinstalled
    ok(invoke("heal", "app", "--no-check-status", "--approve"))
    assert ran(project) == of("app", ["stop", "delete", "create", "configure", "start"])
    reset(project)
    ok(invoke("heal", "app", "--approve"))  # its check passes: recorded
    assert ran(project) == ["app check_status"]
    reset(project)
    ok(invoke("heal", "app", "--no-check-status", "--approve"))
    assert ran(project) == []  # the last check passed: healthy, nothing runs
    (project.root / "sick").write_text("")
    ok(invoke("heal", "app", "--approve"))  # fails now, and is reinstalled
    (project.root / "sick").unlink()
    reset(project)
    result = ok(invoke("heal", "app", "--no-check-status", "--approve"))
    assert "last check_status failed" in result.output
    assert ran(project)[-1] == "app start"


def test_heal_of_an_instance_whose_host_died_reinstalls_the_host(project, invoke):
    """Item 13: the host declares no check_status, so it is not healthy: heal web_1
    reinstalls the dead host with everything on it instead of failing on web_1's create."""
    host = node()
    host["interfaces"]["Standard"]["operations"]["create"] = (
        f"{op('create')} && mkdir -p vm && touch vm/{{{{ SELF.name }}}}")
    web = node(requirements=[{"host": "host"}])
    web["interfaces"]["Standard"]["operations"]["create"] = (
        f"{op('create')} && test -e vm/{{{{ HOST.name }}}}")
    with_op(web, "Validation", "check_status", f"{op('check_status')} && test -e vm/host")
    deployed(project, invoke, {"host": host, "web": web})
    (project.root / "vm" / "host").unlink()  # the host died
    result = ok(invoke("heal", "web", "--approve"))
    lines = ran(project)
    assert lines[0] == "web check_status"
    assert lines[1:] == [*of("web", ["stop", "delete"]), *of("host", ["stop", "delete"]),
                         *of("host", ["create", "configure", "start"]),
                         *of("web", ["create", "configure", "start"])], result.output
    assert project.local("web") == project.local("host") == "ok"


def test_no_allow_reinstall_refuses_at_once_when_surely_needed(project, invoke):
    deployed(project, invoke, {"app": node()})
    result = invoke("heal", "--no-allow-reinstall", "--approve")
    assert result.exit_code == 1
    assert "allow_reinstall is false" in result.output and "app" in result.output
    assert ran(project) == []


def test_heal_of_a_dependency_re_establishes_its_dependents_outside_the_scope(project, invoke):
    """Reinstalling db (no check): app, outside the scope, lets go of it first and links
    again after (unlink before db's stop, preconfigure/postconfigure/establish after)."""
    link = {"node": "db", "relationship": {
        "type": "cloudify.relationships.connected_to",
        "interfaces": {"Configure": {"operations": {n: rel_op(n) for n in (
            "pre_configure_target", "post_configure_source", "add_source", "remove_target")}}}}}
    deployed(project, invoke, {"db": node(), "app": node(requirements=[{"database": link}])})
    ok(invoke("heal", "db", "--approve"))
    assert ran(project) == [
        "app->db remove_target", *of("db", ["stop", "delete", "create", "configure", "start"]),
        "app->db pre_configure_target", "app->db post_configure_source", "app->db add_source",
    ]


def test_diagnose_value_is_shown_and_a_fully_healthy_heal_only_checks(project, invoke):
    """Seed: diagnose_value is for human-readable messages; if every instance declares a
    check_status that succeeds, heal only runs those and exits."""
    app = node()
    with_op(app, "Validation", "check_status", op("check_status"))
    deployed(project, invoke, {"app": app})
    result = ok(invoke("heal", "--diagnose-value", "disk full", "--approve"))
    assert "diagnosis: disk full" in result.output
    assert ran(project) == ["app check_status"]


def test_a_heal_after_a_failed_stop_leaves_its_instances_started(project, invoke):
    """A stop that failed leaves its instance ``stopping``; the heal that finds it healthy
    (its check_status passes) or heals it (its heal runs) ends it ok *and* started, as
    `unfurl status` should say, not ok and still ``stopping``."""
    app = with_op(node(), "Validation", "check_status", op("check_status"))
    svc = with_op(node(Lifecycle=("heal",)), "Validation", "check_status",
                  failing_if("check_status", "sick"))
    for body in (app, svc):
        with_op(body, "Standard", "stop", failing_if("stop", "stuck"))
    deployed(project, invoke, {"app": app, "svc": svc})
    (project.root / "stuck").write_text("")
    assert invoke("stop", "--no-run-by-dependency-order", "--approve").exit_code == 64
    assert {n: project.status()[n]["readyState"]["state"] for n in ("app", "svc")} == {
        "app": "stopping", "svc": "stopping"}
    (project.root / "stuck").unlink()
    (project.root / "sick").write_text("")
    reset(project)
    ok(invoke("heal", "--approve"))
    assert sorted(ran(project)) == ["app check_status", "svc check_status", "svc heal"]
    assert {n: project.status()[n]["readyState"] for n in ("app", "svc")} == {
        "app": {"local": "ok", "state": "started"}, "svc": {"local": "ok", "state": "started"}}


def test_a_reinstall_after_a_failed_stop_stops_it_again(project, invoke):
    """The reinstall's uninstall is the uninstall workflow's: stop runs whatever the node
    state, so an instance a failed stop left ``stopping`` is stopped before its delete."""
    app = with_op(node(), "Validation", "check_status", failing_if("check_status", "sick"))
    with_op(app, "Standard", "stop", failing_if("stop", "stuck"))
    deployed(project, invoke, {"app": app})
    (project.root / "stuck").write_text("")
    assert invoke("stop", "--approve").exit_code == 64
    (project.root / "stuck").unlink()
    (project.root / "sick").write_text("")
    reset(project)
    ok(invoke("heal", "--approve"))
    assert ran(project) == of("app", ["check_status", *REINSTALL])


def test_deploy_establishes_what_a_failed_heal_left_unlinked(project, invoke):
    """A heal whose reinstall of web failed at create unlinked lb from web and left lb's
    add_target blocked; the next deploy recreates web and links lb to it again (lb itself,
    started, runs nothing), leaving the relationship ok."""
    web = node(standard=("create", "start", "delete"))
    web["interfaces"]["Standard"]["operations"]["create"] = (
        f"{op('create')} && test ! -e fail-{{{{ SELF.name }}}}")
    link = {"node": "web", "relationship": {
        "type": "cloudify.relationships.connected_to",
        "interfaces": {"Configure": {"operations": {
            n: rel_op(n) for n in ("add_target", "remove_target")}}}}}
    deployed(project, invoke, {"web": web, "lb": node(requirements=[{"backend": link}])})
    (project.root / "fail-web").write_text("")
    assert invoke("heal", "web", "--approve").exit_code != 0
    assert "lb->web add_target" not in ran(project)
    (project.root / "fail-web").unlink()
    reset(project)
    result = ok(invoke("deploy", "--approve"))
    assert "nothing to run" not in result.output
    assert ran(project) == ["web create", "web start", "lb->web add_target"]
    backend = project.status()["lb"]["requirements"][0]["backend"]
    assert backend["readyState"]["local"] == "ok"
    reset(project)
    ok(invoke("deploy", "--approve"))  # linked: nothing left to do
    assert ran(project) == []
