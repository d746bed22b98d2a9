"""Cloudify's built-in workflows on small ensembles; each operation appends
"<instance> <operation>" to ops.log, so the tests read what ran and in what order."""

from __future__ import annotations

import yaml

LOG = "ops.log"


def op(name: str) -> str:
    return f'echo "{{{{ SELF.name }}}} {name}" >> {LOG}'


def rel_op(name: str) -> str:
    return f'echo "{{{{ SOURCE.name }}}}->{{{{ TARGET.name }}}} {name}" >> {LOG}'


#: A node type that declares the Custom interface (TOSCA: a template may only assign
#: operations to interfaces its type declares).
PINGED = {"example.Pinged": {"derived_from": "tosca.nodes.Root",
                             "interfaces": {"Custom": {"type": "example.interfaces.Custom"}}}}


def ensemble(templates: dict, types: dict | None = None) -> str:
    return yaml_text(ensemble_data(templates, types))


def ensemble_data(templates: dict, types: dict | None = None) -> dict:
    doc: dict = {
        "apiVersion": "unfurl/v1alpha1",
        "kind": "Ensemble",
        "spec": {"service_template": {"topology_template": {"node_templates": templates}}},
    }
    if any("Custom" in (t.get("interfaces") or {}) for t in templates.values()):
        types = {**PINGED, **(types or {})}
        # the type declares the operations the templates give it (Unfurl 1.2.0 refuses
        # any other: load/interface_checks.py)
        used = {str(op) for t in templates.values()
                for op in (((t.get("interfaces") or {}).get("Custom") or {})
                           .get("operations") or {})}
        doc["spec"]["service_template"]["interface_types"] = {
            "example.interfaces.Custom": {"derived_from": "tosca.interfaces.Root",
                                         "operations": {op: {} for op in sorted(used)}}}
    if types:
        doc["spec"]["service_template"]["node_types"] = types
    return doc


def yaml_text(doc: dict) -> str:
    """Block-style YAML, the layout users write (so a job rewrites only the status
    sections, as it does for them)."""
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000)


def node(
    *, requirements=None, standard=("create", "configure", "start", "stop", "delete"), **interfaces
) -> dict:
    body: dict = {"type": "example.Pinged" if "Custom" in interfaces else "tosca.nodes.Root",
                  "interfaces": {}}
    if standard:
        body["interfaces"]["Standard"] = {"operations": {n: op(n) for n in standard}}
    for iface, names in interfaces.items():
        body["interfaces"][iface] = {"operations": {n: op(n) for n in names}}
    if requirements:
        body["requirements"] = requirements
    return body


def respec(project, templates: dict) -> None:
    """Change the spec, keeping the recorded status (as a user editing the file would)."""
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(project.ensemble.read_text())
    doc["spec"] = ensemble_data(templates)["spec"]
    project.write(yaml_text(doc))


def ran(project) -> list[str]:
    path = project.root / LOG
    return path.read_text().splitlines() if path.exists() else []


def in_order(lines: list[str], *expected: str) -> bool:
    return [line for line in lines if line in expected] == list(expected)


def planned_ops(plan_text: str, unconditional: bool = False) -> list[str]:
    """ "<instance> <operation>" for each task of a printed plan (pass-throughs left out;
    with ``unconditional``, also the guarded tasks that run only if something fails)."""
    found, target = [], ""
    for line in plan_text.splitlines():
        if line.startswith("  ") and not line.startswith("    ") and " (" in line:
            target = line.split()[0]
        elif unconditional and "(only if" in line:
            continue
        elif line.startswith("    ") and "(no operation" not in line:
            name = line.split(". ", 1)[1].split(" [")[0].rsplit(".", 1)[-1]
            found.append(f"{target} {name}")
    return found


def reset(project) -> None:
    (project.root / LOG).unlink(missing_ok=True)


def ok(result):
    assert result.exit_code == 0, result.output
    return result


THREE_TIER = {
    "db": node(),
    "app": node(requirements=[{"dependency": "db"}]),
    "web": node(requirements=[{"dependency": "app"}]),
}


def deployed(project, invoke, templates, types=None) -> None:
    project.write(f"jobs/*.log\n{LOG}\n", name=".gitignore")
    project.write(ensemble(templates, types))
    ok(invoke("deploy", "--approve"))
    reset(project)


def test_install_runs_cloudify_lifecycle_in_seed_order(project, invoke):
    templates = {
        "db": node(
            standard=(),
            Validation=("create", "delete"),
            Lifecycle=(
                "precreate",
                "create",
                "configure",
                "start",
                "poststart",
                "prestop",
                "stop",
                "delete",
                "postdelete",
            ),
            Monitoring=("start", "stop"),
        ),
        "app": {
            **node(standard=("create", "configure", "start")),
            "requirements": [
                {
                    "db": {
                        "node": "db",
                        "relationship": {
                            "type": "cloudify.relationships.connected_to",
                            "interfaces": {
                                "Configure": {
                                    "operations": {
                                        n: rel_op(n)
                                        for n in (
                                            "pre_configure_source",
                                            "pre_configure_target",
                                            "post_configure_source",
                                            "add_target",
                                            "remove_target",
                                        )
                                    }
                                }
                            },
                        },
                    }
                }
            ],
        },
    }
    project.write(f"jobs/*.log\n{LOG}\n", name=".gitignore")
    project.write(ensemble(templates))
    ok(invoke("install", "--approve"))
    assert ran(project) == [
        "db create",
        "db precreate",
        "db create",
        "db configure",
        "db start",
        "db poststart",
        "db start",
        "app create",
        "app->db pre_configure_source",
        "app->db pre_configure_target",
        "app configure",
        "app->db post_configure_source",
        "app start",
        "app->db add_target",
    ]
    reset(project)
    ok(invoke("uninstall", "--approve"))
    assert ran(project) == [
        "app->db remove_target",
        "db delete",
        "db stop",
        "db prestop",
        "db stop",
        "db delete",
        "db postdelete",
    ]


def test_undeploy_deletes_what_a_failing_instance_depends_on(project, invoke):
    """As Unfurl 1.2.0 (tests/data/unfurl-cases/256): an instance's delete waits on its own
    failed stop, while what it only depends on is deleted all the same."""
    templates = dict(THREE_TIER)
    templates["app"] = node(requirements=[{"dependency": "db"}])
    templates["app"]["interfaces"]["Standard"]["operations"]["stop"] = "exit 3"
    deployed(project, invoke, templates)
    invoke("undeploy", "--approve")
    assert "app delete" not in ran(project)
    assert ran(project)[-2:] == ["db stop", "db delete"]


def test_uninstall_ignore_failure_continues_past_a_failing_node(project, invoke):
    templates = dict(THREE_TIER)
    templates["app"] = node(requirements=[{"dependency": "db"}])
    templates["app"]["interfaces"]["Standard"]["operations"]["stop"] = "exit 3"
    deployed(project, invoke, templates)
    result = invoke("undeploy", "--approve", "--ignore-failure")
    assert result.exit_code == 0, result.output
    assert ran(project)[-3:] == ["app delete", "db stop", "db delete"]
    assert project.local("db") == "absent"
    assert project.local("app") == "absent"


def test_execute_operation_filters_intersect_and_keep_indirect_order(project, invoke):
    templates = {
        "db": node(standard=("create", "configure", "start"), Custom=("ping",)),
        "app": node(standard=("create",), requirements=[{"dependency": "db"}]),
        "web": node(standard=("create",), Custom=("ping",), requirements=[{"dependency": "app"}]),
    }
    templates["web"]["type"] = "example.Web"
    deployed(project, invoke, templates, {"example.Web": {"derived_from": "example.Pinged"}})
    ok(
        invoke(
            "execute-operation",
            "Custom.ping",
            "--node-ids",
            "db,web",
            "--approve",
            "--run-by-dependency-order",
            "--operation-kwargs",
            '{"extra": 1}',
        )
    )
    assert ran(project) == ["db ping", "web ping"]
    reset(project)
    ok(
        invoke(
            "execute-operation",
            "Custom.ping",
            "--node-ids",
            "db,web",
            "--node-instance-ids",
            "web",
            "--approve",
        )
    )
    assert ran(project) == ["web ping"]
    reset(project)
    ok(
        invoke(
            "execute-operation",
            "Custom.ping",
            "--type-names",
            "tosca.nodes.Root",
            "--node-ids",
            "db,web",
            "--approve",
        )
    )
    assert sorted(ran(project)) == ["db ping", "web ping"]
    reset(project)
    ok(invoke("execute-operation", "Custom.ping", "--type-names", "example.Web", "--approve"))
    assert ran(project) == ["web ping"]
    result = invoke("execute-operation", "Custom.ping", "--approve")
    assert result.exit_code == 1 and "has no operation 'Custom.ping'" in result.output
    result = invoke("execute-operation", "Custom.ping", "--node-ids", "nope", "--approve")
    assert result.exit_code == 1 and "no node template named 'nope'" in result.output


def test_execute_operation_indirect_dependency_is_in_the_plan(project, invoke):
    templates = {
        "db": node(standard=("create",), Custom=("ping",)),
        "app": node(standard=("create",), requirements=[{"dependency": "db"}]),
        "web": node(standard=("create",), Custom=("ping",), requirements=[{"dependency": "app"}]),
    }
    deployed(project, invoke, templates)
    result = ok(
        invoke(
            "execute-operation",
            "Custom.ping",
            "--run-by-dependency-order",
            "--node-ids",
            "db,web",
            "--dryrun",
            "--approve",
        )
    )
    assert "2. Custom.ping [run] after 1" in result.output
    result = ok(
        invoke("execute-operation", "Custom.ping", "--node-ids", "db,web", "--dryrun", "--approve")
    )
    assert "after" not in result.output.split("Plan for")[1].split("\n\n")[0]


def test_stop_start_restart_order_and_states(project, invoke):
    deployed(project, invoke, THREE_TIER)
    ok(invoke("stop", "--approve"))
    assert ran(project) == ["web stop", "app stop", "db stop"]
    assert project.state("db") == "stopped" and project.local("db") == "pending"
    reset(project)
    ok(invoke("deploy", "--approve"))  # deploy brings a stopped instance back: start only
    assert ran(project) == ["db start", "app start", "web start"]
    assert project.local("web") == "ok" and project.state("web") == "started"
    reset(project)
    ok(invoke("restart", "--approve"))
    assert ran(project) == ["web stop", "app stop", "db stop", "db start", "app start", "web start"]
    reset(project)
    ok(invoke("start", "--node-ids", "app", "--approve"))
    assert ran(project) == ["app start"]
    assert project.commits()[0].startswith("Updating status for job A")


HOSTED = {
    "host": node(Validation=("check_status",)),
    "server": node(requirements=[{"host": "host"}]),
    "module": node(requirements=[{"host": "server"}, {"dependency": "db"}]),
    "db": node(),
    "other_host": node(),
    "other": node(requirements=[{"host": "other_host"}]),
}


def test_heal_reinstalls_only_the_failing_hosts_subgraph(project, invoke):
    templates = dict(HOSTED)
    deployed(project, invoke, templates)
    (project.root / "sick").write_text("")
    templates["host"] = node(Validation=("check_status",))
    templates["host"]["interfaces"]["Validation"]["operations"]["check_status"] = "test ! -e sick"
    respec(project, templates)
    ok(invoke("heal", "module", "--approve"))
    lines = ran(project)
    assert lines == [
        "module stop",
        "module delete",
        "server stop",
        "server delete",
        "host stop",
        "host delete",
        "host create",
        "host configure",
        "host start",
        "server create",
        "server configure",
        "server start",
        "module create",
        "module configure",
        "module start",
    ]
    assert not any(line.startswith(("db", "other")) for line in lines)


def test_heal_with_heal_operation_and_healthy_check(project, invoke):
    templates = {
        "host": node(Validation=("check_status",), Lifecycle=("heal",)),
        "server": node(requirements=[{"host": "host"}], Validation=("check_status",)),
    }
    templates["server"]["interfaces"]["Validation"]["operations"]["check_status"] = (
        f"{op('check_status')} && test ! -e sick")
    deployed(project, invoke, templates)
    ok(invoke("heal", "server", "--approve"))
    assert sorted(ran(project)) == ["host check_status", "server check_status"]
    reset(project)
    # the seed: without check_status, the most recent check results decide: both passed
    result = ok(invoke("heal", "server", "--no-check-status", "--approve"))
    assert ran(project) == [], result.output
    (project.root / "sick").write_text("")
    ok(invoke("heal", "server", "--approve"))  # records server's failing check, reinstalls it
    (project.root / "sick").unlink()
    reset(project)
    # its last check failed (the reinstall ran no check since): not healthy, whatever its status
    result = invoke("heal", "server", "--no-check-status", "--no-allow-reinstall", "--approve")
    assert result.exit_code == 1, result.output
    assert "would have to be reinstalled: server" in result.output
    ok(invoke("heal", "server", "--approve"))  # passes now
    reset(project)
    ok(invoke("heal", "server", "--no-check-status", "--no-allow-reinstall", "--approve"))
    assert ran(project) == []


def test_scale_out_and_in_with_relationships(project, invoke):
    link = {
        "type": "cloudify.relationships.connected_to",
        "interfaces": {
            "Configure": {"operations": {n: rel_op(n) for n in ("add_target", "remove_target")}}
        },
    }
    templates = {
        "worker": {
            **node(),
            "capabilities": {
                "scalable": {
                    "properties": {"default_instances": 1, "min_instances": 1, "max_instances": 3}
                }
            },
        },
        "lb": node(requirements=[{"backend": {"node": "worker", "relationship": link}}]),
    }
    deployed(project, invoke, templates)
    ok(invoke("scale", "worker", "--delta", "2", "--approve"))
    lines = ran(project)
    assert sorted(lines) == sorted(
        [f"worker_{n} {o}" for n in (1, 2) for o in ("create", "configure", "start")]
        + ["lb->worker_1 add_target", "lb->worker_2 add_target"]
    )
    for n in (1, 2):
        assert in_order(
            lines,
            f"worker_{n} create",
            f"worker_{n} configure",
            f"worker_{n} start",
            f"lb->worker_{n} add_target",
        )
    assert set(project.status()) == {"worker", "worker_1", "worker_2", "lb"}
    result = invoke("scale", "worker", "--approve")
    assert result.exit_code == 1 and "cannot scale to 4" in result.output
    reset(project)
    ok(invoke("scale", "worker", "--delta", "-1", "--exclude-instances", "worker_2", "--approve"))
    assert ran(project) == ["lb->worker_1 remove_target", "worker_1 stop", "worker_1 delete"]
    assert set(project.status()) == {"worker", "worker_2", "lb"}
    reset(project)
    ok(invoke("deploy", "--approve"))  # the count survives a reload: nothing comes back
    assert ran(project) == []


def test_scale_out_rolls_back_on_failure(project, invoke):
    templates = {"worker": node()}
    templates["worker"]["interfaces"]["Standard"]["operations"]["start"] = (
        'test "{{ SELF.name }}" = worker'
    )
    deployed(project, invoke, templates)
    result = invoke("scale", "worker", "--approve")
    assert result.exit_code != 0
    assert ran(project) == [
        "worker_1 create",
        "worker_1 configure",
        "worker_1 stop",
        "worker_1 delete",
    ]
    assert set(project.status()) == {"worker"}


def test_scale_compute_scales_host_with_what_it_hosts(project, invoke):
    templates = {
        "vm": node(),
        "app": node(requirements=[{"host": "vm"}]),
    }
    deployed(project, invoke, templates)
    ok(invoke("scale", "app", "--scale-compute", "--approve"))
    assert ran(project) == [
        "vm_1 create",
        "vm_1 configure",
        "vm_1 start",
        "app_1 create",
        "app_1 configure",
        "app_1 start",
    ]
    assert project.status()["app_1"]["hostedOn"] == "vm_1"


def test_update_preview_matches_update(project, invoke):
    templates = {
        "db": node(),
        "app": node(requirements=[{"dependency": "db"}], Lifecycle=("update",)),
        "old": node(),
    }
    deployed(project, invoke, templates)
    templates["app"]["interfaces"]["Standard"]["operations"]["configure"] = (
        op("configure") + " # v2"
    )
    templates["db"]["interfaces"]["Standard"]["operations"]["configure"] = op("configure") + " # v2"
    del templates["old"]
    templates["cache"] = node(standard=("create",))
    respec(project, templates)
    preview = ok(invoke("update", "--preview"))
    assert ran(project) == []
    planned = planned_ops(preview.output, unconditional=True)
    ok(invoke("update", "--approve"))
    lines = ran(project)
    assert sorted(lines) == sorted(
        [
            "old stop",  # removed from the spec: uninstalled as its last commit defined it
            "old delete",
            "cache create",
            "app update",
            "db stop",
            "db delete",
            "db create",
            "db configure",
            "db start",
        ]
    )
    assert in_order(lines, "db stop", "db delete", "db create", "db configure", "db start")
    assert in_order(lines, "old stop", "old delete")
    assert sorted(planned) == sorted(lines)  # the preview is what update then did
    assert "old" not in project.status()
    reset(project)
    again = ok(invoke("update", "--preview"))
    assert "nothing to do" in again.output
