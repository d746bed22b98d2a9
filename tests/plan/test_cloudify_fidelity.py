"""Cloudify's update, heal, uninstall and -p/--parameters as the seed documents define them.
Every operation appends "<instance> <operation>" to ops.log (see test_workflows), so each
test compares what ran, and in what order, with the seed's pseudo-code."""

from __future__ import annotations

import json

from tests.plan.test_workflows import LOG, deployed, node, ok, op, ran, reset, respec


def failing_if(name: str, marker: str) -> str:
    """An operation that logs itself, then fails while the file ``marker`` exists."""
    return f"{op(name)} && test ! -e {marker}"


def with_op(body: dict, interface: str, name: str, command: str) -> dict:
    body["interfaces"].setdefault(interface, {"operations": {}})["operations"][name] = command
    return body


REINSTALL = ["stop", "delete", "create", "configure", "start"]


def of(name: str, ops: list[str]) -> list[str]:
    return [f"{name} {o}" for o in ops]


# ---------------------------------------------------------------------------------- update


def drift_app(update_ops: tuple[str, ...] = ()) -> dict:
    body = node(Lifecycle=update_ops) if update_ops else node()
    return with_op(body, "Lifecycle", "check_drift", failing_if("check_drift", "drift"))


def test_update_with_passing_drift_check_does_nothing_else(project, invoke):
    deployed(project, invoke, {"app": drift_app()})
    ok(invoke("update", "--approve"))
    assert ran(project) == ["app check_drift"]
    assert project.local("app") == "ok"


def test_update_drift_runs_update_operations(project, invoke):
    deployed(project, invoke, {"app": drift_app(("update", "update_config", "update_apply"))})
    (project.root / "drift").write_text("")
    ok(invoke("update", "--approve"))
    assert ran(project) == of("app", ["check_drift", "update", "update_config", "update_apply"])
    assert project.local("app") == "ok"


def test_update_drift_without_update_operations_reinstalls(project, invoke):
    deployed(project, invoke, {"app": drift_app()})
    (project.root / "drift").write_text("")
    ok(invoke("update", "--approve"))
    assert ran(project) == of("app", ["check_drift", *REINSTALL])
    assert project.local("app") == "ok"


def test_update_drift_and_a_changed_instance_are_both_reinstalled(project, invoke):
    templates = {"db": node(), "app": drift_app()}
    templates["app"]["requirements"] = [{"dependency": "db"}]
    deployed(project, invoke, templates)
    (project.root / "drift").write_text("")
    templates["db"]["interfaces"]["Standard"]["operations"]["configure"] = op("configure") + " #2"
    respec(project, templates)
    ok(invoke("update", "--approve"))
    lines = ran(project)
    assert lines[0] == "app check_drift"
    # uninstall dependents first, then install dependencies first: one part never left undone
    assert lines[1:] == [
        "app stop", "app delete", "db stop", "db delete",
        "db create", "db configure", "db start", "app create", "app configure", "app start",
    ]  # fmt: skip
    assert project.local("app") == project.local("db") == "ok"


def test_update_failed_update_operation_is_reinstalled(project, invoke):
    app = drift_app(("update",))
    with_op(app, "Lifecycle", "update", failing_if("update", "drift"))
    deployed(project, invoke, {"app": app})
    (project.root / "drift").write_text("")
    (project.root / "drift").write_text("")
    ok(invoke("update", "--approve"))
    assert ran(project) == of("app", ["check_drift", "update", *REINSTALL])
    reset(project)
    result = invoke("update", "--approve", "--skip-reinstall")
    assert result.exit_code == 64, result.output
    assert ran(project) == of("app", ["check_drift", "update"])


def test_update_heals_first_unless_skip_heal(project, invoke):
    app = drift_app(("update",))
    with_op(app, "Validation", "check_status", failing_if("check_status", "sick"))
    deployed(project, invoke, {"app": app})
    (project.root / "drift").write_text("")
    (project.root / "sick").write_text("")
    ok(invoke("update", "--approve"))
    # unhealthy: no longer considered for update, reinstalled instead
    assert ran(project) == of("app", ["check_drift", "check_status", *REINSTALL])
    reset(project)
    ok(invoke("update", "--approve", "--skip-heal"))
    assert ran(project) == of("app", ["check_drift", "update"])


def test_update_skip_drift_check_and_parameters(project, invoke):
    deployed(project, invoke, {"app": drift_app()})
    (project.root / "drift").write_text("")
    ok(invoke("update", "--approve", "--skip-drift-check"))
    assert ran(project) == []
    ok(invoke("update", "--approve", "-p", "skip_drift_check=true"))
    assert ran(project) == []
    preview = ok(invoke("update", "-p", "preview=true"))
    assert ran(project) == [] and "check_drift" in preview.output


def test_update_workflow_id_runs_that_workflow_instead(project, invoke):
    templates = {"app": drift_app()}
    deployed(project, invoke, templates)
    templates["cache"] = node(standard=("create",))
    respec(project, templates)
    ok(invoke("update", "--approve", "--workflow-id", "install"))
    assert ran(project) == ["cache create"]
    result = invoke("update", "--approve", "-p", "workflow_id=instal")
    assert result.exit_code == 2 and "did you mean 'install'" in result.output


# ------------------------------------------------------------------------------------ heal


def healing(heal_fails: bool) -> dict:
    body = node(Lifecycle=("preheal", "heal", "postheal"))
    with_op(body, "Validation", "check_status", failing_if("check_status", "sick"))
    if heal_fails:
        with_op(body, "Lifecycle", "heal", f"{op('heal')} && false")
    return body


def test_heal_error_in_heal_operations_leads_to_reinstall(project, invoke):
    deployed(project, invoke, {"app": healing(heal_fails=True)})
    (project.root / "sick").write_text("")
    result = ok(invoke("heal", "--approve"))
    assert ran(project) == of("app", ["check_status", "preheal", "heal", *REINSTALL])
    assert "postheal" not in "\n".join(ran(project)), result.output
    assert project.local("app") == "ok"


def test_heal_passing_heal_operations_do_not_reinstall(project, invoke):
    deployed(project, invoke, {"app": healing(heal_fails=False)})
    (project.root / "sick").write_text("")
    ok(invoke("heal", "--approve"))
    assert ran(project) == of("app", ["check_status", "preheal", "heal", "postheal"])


def test_heal_failed_reinstall_fails_the_job(project, invoke):
    app = healing(heal_fails=True)
    with_op(app, "Standard", "create", failing_if("create", "sick"))
    deployed(project, invoke, {"app": app})
    (project.root / "sick").write_text("")
    result = invoke("heal", "--approve")
    assert result.exit_code == 64, result.output
    assert ran(project)[-1] == "app create"


def test_heal_without_reinstall_runs_heal_and_fails_only_if_needed(project, invoke):
    deployed(project, invoke, {"app": healing(heal_fails=False)})
    (project.root / "sick").write_text("")
    ok(invoke("heal", "--no-allow-reinstall", "--approve"))
    assert ran(project) == of("app", ["check_status", "preheal", "heal", "postheal"])
    reset(project)
    with_op(healing(False), "Lifecycle", "heal", f"{op('heal')} && false")
    respec(project, {"app": healing(heal_fails=True)})
    result = invoke("heal", "-p", "allow_reinstall=false", "--approve")
    assert result.exit_code == 64, result.output
    assert ran(project) == of("app", ["check_status", "preheal", "heal"])
    assert "would have to be reinstalled" in result.output


def test_heal_on_a_scaled_template_reinstalls_the_host_without_a_check(project, invoke):
    """The seed: an instance that declares no check_status is not healthy, so healing
    web_1 reinstalls its host and what the host contains (the other host's web stays)."""
    web = node(requirements=[{"host": "host"}])
    web["capabilities"] = {"scalable": {"properties": {"default_instances": 2}}}
    host = node()
    host["capabilities"] = {"scalable": {"properties": {"default_instances": 2}}}
    deployed(project, invoke, {"host": host, "web": web})
    hosted = {n: r.get("hostedOn") for n, r in project.status().items() if n.startswith("web")}
    victim = sorted(hosted)[-1]
    ok(invoke("heal", victim, "--approve"))
    ran_on = {line.split()[0] for line in ran(project)}
    host_of_victim = hosted[victim]
    assert ran_on == {host_of_victim, *(w for w, h in hosted.items() if h == host_of_victim)}
    assert len(ran_on) == 3  # the host and its two webs; the other host and its webs stay
    lines = ran(project)
    for web in ran_on - {host_of_victim}:  # uninstall contained first, install host first
        assert lines.index(f"{web} delete") < lines.index(f"{host_of_victim} stop")
        assert lines.index(f"{host_of_victim} start") < lines.index(f"{web} create")


# ------------------------------------------------------------------------------- uninstall


def test_uninstall_leaves_no_instance_ok_on_a_deleted_host(project, invoke):
    templates = {"host": node(), "app": node(standard=("create",), requirements=[{"host": "host"}])}
    deployed(project, invoke, templates)
    ok(invoke("uninstall", "--approve"))
    assert ran(project) == ["host stop", "host delete"]
    assert project.local("app") == project.local("host") == "absent"
    assert project.state("app") == "deleted"


# ----------------------------------------------------------------------------- parameters


def test_parameters_the_cloudify_way(project, invoke):
    templates = {
        "db": node(standard=("create",), Custom=("ping",)),
        "web": node(standard=("create",), Custom=("ping",), requirements=[{"dependency": "db"}]),
    }
    ping = 'echo "web ping {{ inputs.x | default("") }}" >> '  # x: only when given
    with_op(templates["web"], "Custom", "ping", ping + LOG)
    deployed(project, invoke, templates)
    ok(invoke(
        "execute-operation", "-p", "operation=Custom.ping", "-p", "node_ids=[web]",
        "-p", 'operation_kwargs={"x": 1}', "--approve",
    ))  # fmt: skip
    assert ran(project) == ["web ping 1"]
    reset(project)
    params = "node_ids: [db, web]\nrun_by_dependency_order: true\n"
    (project.root / "params.yaml").write_text(params)
    ok(invoke("execute-operation", "Custom.ping", "--parameters", "params.yaml", "--approve"))
    assert ran(project) == ["db ping", "web ping "]
    (project.root / "params.json").write_text(json.dumps({"node_instance_ids": ["db"]}))
    reset(project)
    ok(invoke("stop", "--parameters", "params.json", "--approve"))
    result = invoke("execute-operation", "Custom.ping", "-p", "node_id=[db]", "--approve")
    assert result.exit_code == 2 and "did you mean 'node_ids'" in result.output
    result = invoke("heal", "-p", "allow_reinstal=false", "--approve")
    assert result.exit_code == 2 and "did you mean 'allow_reinstall'" in result.output
    result = invoke("scale", "-p", "delta=two", "-p", "scalable_entity_name=web", "--approve")
    assert result.exit_code == 2 and "delta: expected an integer" in result.output
    result = invoke("uninstall", "-p", "ignore_failure=true", "-p", "skip_x=1", "--approve")
    assert result.exit_code == 2 and "unknown parameter 'skip_x'" in result.output
    assert ran(project) == []


def test_scale_with_parameters(project, invoke):
    deployed(project, invoke, {"worker": node(standard=("create",))})
    ok(invoke("scale", "-p", "scalable_entity_name=worker", "-p", "delta=1", "--approve"))
    assert ran(project) == ["worker_1 create"]


# ----------------------------------------------------------------------- execute-operation


def test_execute_operation_runs_on_instances_not_created_yet(project, invoke):
    templates = {
        "db": node(standard=("create",), Custom=("ping",)),
        "web": node(standard=("create",), Custom=("ping",)),
    }
    project.write(f"jobs/*.log\n{LOG}\n", name=".gitignore")
    from tests.plan.test_workflows import ensemble

    project.write(ensemble(templates))
    ok(invoke("deploy", "--approve", "-i", "db"))
    reset(project)
    result = ok(invoke("execute-operation", "Custom.ping", "--approve"))
    assert sorted(ran(project)) == ["db ping", "web ping"]
    assert "web: not created yet" in result.output
    assert project.local("web") != "ok"


# -------------------------------------------------------------------------------- validate


def test_cloudify_agent_and_relationship_syntax_refused_by_name(project, invoke):
    from tests.plan.test_workflows import ensemble

    db = node(standard=("create",))
    db["interfaces"]["cloudify.interfaces.monitoring_agent"] = {"operations": {"install": "true"}}
    app = node(standard=("create",), requirements=[{"dependency": {
        "node": "db",
        "relationship": {"type": "tosca.relationships.DependsOn",
                         "source_interfaces": {"Configure": {"add_target": "true"}}},
    }}])
    project.write(ensemble({"db": db, "app": app}))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "'cloudify.interfaces.monitoring_agent' is not supported" in result.output
    assert "'source_interfaces' is not supported" in result.output
    app = node(standard=("create",))
    app["relationships"] = [{"type": "cloudify.relationships.connected_to", "target": "db"}]
    project.write(ensemble({"db": node(standard=("create",)), "app": app}))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "Cloudify's `relationships:` list (on 'app') is not supported" in result.output
    assert "unknown key 'relationships'" not in result.output


# ----------------------------------------------------------------------------------- scale


def test_scale_rollback_uninstalls_in_uninstall_order_only_what_was_created(project, invoke):
    vm = node()
    app = node(requirements=[{"host": "vm"}])
    with_op(app, "Standard", "configure", failing_if("configure", "broken"))
    deployed(project, invoke, {"vm": vm, "app": app})
    (project.root / "broken").write_text("")
    result = invoke("scale", "vm", "--approve")
    assert result.exit_code == 64, result.output
    lines = ran(project)
    assert lines == [
        "vm_1 create", "vm_1 configure", "vm_1 start", "app_1 create", "app_1 configure",
        "app_1 stop", "app_1 delete", "vm_1 stop", "vm_1 delete",  # contained first
    ]  # fmt: skip
    assert set(project.status()) == {"vm", "app"}
    reset(project)
    (project.root / "broken").unlink()
    vm_fails = node()
    with_op(vm_fails, "Standard", "configure", failing_if("configure", "broken"))
    respec(project, {"vm": vm_fails, "app": app})
    (project.root / "broken").write_text("")
    result = invoke("scale", "vm", "--approve")
    assert result.exit_code == 64, result.output
    # app_1 was never created (blocked): nothing of it is uninstalled
    assert ran(project) == ["vm_1 create", "vm_1 configure", "vm_1 stop", "vm_1 delete"]
    assert set(project.status()) == {"vm", "app"}


def test_scale_in_aborts_when_no_more_would_remain_than_are_excluded(project, invoke):
    """The seed: "If the amount of nodes remaining would be equal to or less than the
    number of excluded nodes, the operation will abort" (Cloudify's code: only less)."""
    worker = node(standard=("create", "delete"))
    worker["capabilities"] = {"scalable": {"properties": {"default_instances": 3}}}
    deployed(project, invoke, {"worker": worker})
    names = sorted(project.status())
    for delta, excluded in (("-2", names[:2]), ("-1", names[:2]), ("-2", names[:1])):
        result = invoke("scale", "worker", "--delta", delta, "--exclude-instances",
                        ",".join(excluded), "--approve")
        assert result.exit_code == 1, result.output
        assert "not more than the" in result.output
    assert ran(project) == []
    ok(invoke("scale", "worker", "--delta", "-1", "-p", f"exclude_instances={names[:1]}",
              "--approve"))
    assert ran(project) == [f"{names[2]} delete"]


def test_scale_compute_is_ignored_for_a_group(project, invoke):
    from tests.plan.test_workflows import ensemble_data, yaml_text

    doc = ensemble_data({"vm": node(standard=("create",)),
                         "app": node(standard=("create",), requirements=[{"host": "vm"}])})
    topology = doc["spec"]["service_template"]["topology_template"]
    topology["groups"] = {"apps": {"type": "tosca.groups.Root", "members": ["app"]}}
    topology["policies"] = [{"scale_apps": {"type": "cloudify.policies.scaling",
                                            "targets": ["apps"]}}]
    project.write(f"jobs/*.log\n{LOG}\n", name=".gitignore")
    project.write(yaml_text(doc))
    ok(invoke("deploy", "--approve"))
    reset(project)
    ok(invoke("scale", "apps", "--scale-compute", "--approve"))
    assert ran(project) == ["app_1 create"]  # the group alone: vm not scaled


def test_contained_template_gets_one_instance_per_host_instance(project, invoke):
    vm = node(standard=("create", "delete"))
    vm["capabilities"] = {"scalable": {"properties": {"default_instances": 2}}}
    app = node(standard=("create", "delete"), requirements=[{"host": "vm"}])
    deployed(project, invoke, {"vm": vm, "app": app})
    status = project.status()
    apps = sorted(n for n in status if n.startswith("app"))
    assert apps == ["app", "app_1"]
    assert {status[a]["hostedOn"] for a in apps} == {"vm", "vm_1"}
    host_of_app1 = status["app_1"]["hostedOn"]
    ok(invoke("heal", host_of_app1, "--approve"))
    # the host and what it contains, nothing of the other host
    assert ran(project) == ["app_1 delete", f"{host_of_app1} delete",
                            f"{host_of_app1} create", "app_1 create"]
    reset(project)
    ok(invoke("scale", "vm", "--delta", "-1", "--include-instances", host_of_app1, "--approve"))
    assert ran(project) == ["app_1 delete", f"{host_of_app1} delete"]
    assert sorted(project.status()) == sorted({"app", "vm", "vm_1", "app_1"}
                                              - {"app_1", host_of_app1})
