"""The job engine end to end, in real git repos: order, parallelism, status rules, records."""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from tests.conftest import REFERENCE, git


def node(
    name: str, requires: list[str] = (), ops: dict[str, str] | None = None, extra: str = "",
    kind: str = "dependency",
) -> str:
    """One node template whose operations are shell commands."""
    reqs = "".join(f"\n            - {kind}: {r}" for r in requires)
    req_block = f"\n          requirements:{reqs}" if requires else ""
    op_lines = "".join(
        f"\n                {op}: {json.dumps(cmd)}" for op, cmd in (ops or {}).items()
    )
    iface = (
        f"""
          interfaces:
            Standard:
              operations:{op_lines}"""
        if ops
        else ""
    )
    return f"""
        {name}:
          type: tosca.nodes.Root{extra}{req_block}{iface}"""


def ensemble(*nodes: str) -> str:
    return (
        """apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:"""
        + "".join(nodes)
        + "\n"
    )


def stamp(name: str, op: str, sleep: float = 0, partner: str | None = None) -> str:
    """A command that records when it started and ended, for ordering assertions, and
    (clock-free) whether another operation was still running when it ended: it marks itself
    busy from start to end, so of two overlapping operations the first to end sees the
    other's mark (``log/overlaps``). With a ``partner``, it waits (at most 30 s) for the
    partner to have started instead of sleeping: two operations that run at once meet at
    once, however slow the machine, and a serial run shows up as no overlap."""
    wait = (
        f"i=0; while [ ! -e log/{partner}.met ] && [ $i -lt 300 ]; do "
        f"sleep 0.1; i=$((i+1)); done; "
        if partner else f"sleep {sleep}; "
    )
    return (
        f"echo start $(date +%s.%N) >> log/{name}.{op}; "
        f"touch log/{name}.busy; "
        + (f"touch log/{name}.met; " if partner else "")  # stays: the partner may be late
        + wait
        + f"echo end $(date +%s.%N) >> log/{name}.{op}; "
        f"if ls log | grep '[.]busy$' | grep -qvx {name}.busy; then "
        f"echo {name}.{op} >> log/overlaps; fi; "
        f"rm log/{name}.busy"
    )


def times(project, name: str, op: str) -> tuple[float, float]:
    lines = (project.root / "log" / f"{name}.{op}").read_text().split()
    return float(lines[1]), float(lines[3])


def _diamond(project, b: dict[str, str], c: dict[str, str]):
    (project.root / "log").mkdir()
    (project.root / ".gitignore").write_text("jobs/*.log\nlog/\n")
    ops = lambda n: {"create": stamp(n, "create"), "delete": stamp(n, "delete")}  # noqa: E731
    project.write(
        ensemble(
            node("a", ops=ops("a")),
            node("b", ["a"], {**ops("b"), **b}),
            node("c", ["a"], {**ops("c"), **c}),
            node("d", ["b", "c"], ops("d")),
        )
    )
    git(project.root, "add", ".gitignore")
    git(project.root, "commit", "-qm", "ignore log")
    return project


@pytest.fixture
def diamond(project):
    """b and c take a while, so running them at once would show as an overlap."""
    return _diamond(project, {"create": stamp("b", "create", 0.6)},
                    {"create": stamp("c", "create", 0.6)})


@pytest.fixture
def meeting_diamond(project):
    """b and c each wait for the other to have started: they end only if they run at once."""
    return _diamond(project, {"create": stamp("b", "create", partner="c")},
                    {"create": stamp("c", "create", partner="b")})


def test_diamond_runs_independent_branches_concurrently(meeting_diamond, invoke):
    diamond = meeting_diamond
    result = invoke("deploy", "--approve", "--jobs", "4")
    assert result.exit_code == 0, result.output
    a, b, c, d = (times(diamond, n, "create") for n in "abcd")
    assert a[1] <= b[0] and a[1] <= c[0]  # requirements first
    assert b[0] < c[1] and c[0] < b[1]  # b and c overlapped
    overlaps = (diamond.root / "log" / "overlaps").read_text().split()
    assert set(overlaps) & {"b.create", "c.create"}, overlaps
    assert d[0] >= max(b[1], c[1])
    assert all(diamond.local(n) == "ok" for n in "abcd")


def test_without_jobs_four_independent_operations_run_at_once(project, invoke):
    """--jobs defaults to twice the cores and at least 4, whatever the machine: four
    operations that each wait (at most 30 s) for all four to have started all end met."""
    (project.root / "log").mkdir()
    (project.root / ".gitignore").write_text("jobs/*.log\nlog/\n")
    meet = ("touch log/{n}.started; i=0; "
            "while [ $(ls log | grep -c '[.]started$') -lt 4 ] && [ $i -lt 300 ]; do "
            "sleep 0.1; i=$((i+1)); done; "
            "[ $(ls log | grep -c '[.]started$') -ge 4 ] && touch log/{n}.met")
    project.write(ensemble(*(node(n, ops={"create": meet.format(n=n)}) for n in "wxyz")))
    git(project.root, "add", ".gitignore")
    git(project.root, "commit", "-qm", "ignore log")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (project.root / "log").glob("*.met")) == [
        f"{n}.met" for n in "wxyz"]


def test_jobs_1_runs_one_task_at_a_time(diamond, invoke):
    result = invoke("deploy", "--approve", "--jobs", "1")
    assert result.exit_code == 0, result.output
    # each operation, as it ends, looks for another one's busy mark: no clocks compared
    # across processes
    overlaps = diamond.root / "log" / "overlaps"
    assert not overlaps.exists(), overlaps.read_text()
    assert all((diamond.root / "log" / f"{n}.create").exists() for n in "abcd")
    assert all(diamond.local(n) == "ok" for n in "abcd")


def test_second_deploy_runs_nothing_and_makes_no_commit(diamond, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    commits, lines = diamond.commits(), diamond.jobs_tsv()
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0
    assert "Nothing to do" in again.output
    assert diamond.commits() == commits and diamond.jobs_tsv() == lines


def test_undeploy_runs_in_reverse_order_and_leaves_everything_absent(diamond, invoke):
    assert invoke("deploy", "--approve").exit_code == 0
    result = invoke("undeploy", "--approve")
    assert result.exit_code == 0, result.output
    a, b, c, d = (times(diamond, n, "delete") for n in "abcd")
    assert d[1] <= b[0] and d[1] <= c[0] and max(b[1], c[1]) <= a[0]
    for name in "abcd":
        assert diamond.local(name) == "absent" and diamond.state(name) == "deleted"
    assert diamond.commits()[0].startswith("Updating status for job")


@pytest.mark.parametrize(("flag", "code"), [("error", 64), ("degraded", 64), ("never", 0)])
def test_failing_create_sets_error_blocks_what_it_hosts_and_sets_exit_code(
    project, invoke, flag, code
):
    project.write(
        ensemble(
            node("db", ops={"create": "echo boom >&2; exit 3"}),
            node("app", ["db"], ops={"create": "echo app"}, kind="host"),
            node("web", ["app"], ops={"create": "echo web"}, kind="host"),
            node("cache", ops={"create": "echo cache"}),
        )
    )
    result = invoke("deploy", "--approve", "--jobexitcode", flag)
    assert result.exit_code == code, result.output
    # as Unfurl 1.2.0 (tests/data/unfurl-cases/24-failing-create): the command did not say
    # whether it changed anything, so db is unknown, not created; what it hosts is blocked
    assert project.local("db") == "unknown" and project.state("db") == "creating"
    assert "created" not in project.status()["db"]
    assert project.local("cache") == "ok"
    assert project.local("app") == "pending" and project.local("web") == "pending"
    assert "1 failed, 2 blocked" in result.output
    assert "exit code 3: boom" in result.output
    job_line = project.jobs_tsv()[0]
    assert "status=error" in job_line
    # as Unfurl (unfurl-cases/160): the task a failed host blocked is recorded with
    # status=error and leaves its instance in its running state; web's, blocked by the
    # blocked app, did not start: no line
    app = [line for line in project.jobs_tsv() if "target=::app" in line]
    assert len(app) == 1 and "status=error" in app[0] and project.state("app") == "creating"
    assert not any("target=::web" in line for line in project.jobs_tsv())


def test_a_failed_dependency_that_is_not_a_host_only_orders_its_dependents(project, invoke):
    """As Unfurl 1.2.0 (unfurl-cases/24-failing-create): a `dependency` requirement orders
    the tasks; the dependents run, and are `effective: error` while db is not ok."""
    project.write(
        ensemble(
            node("db", ops={"create": "echo boom >&2; exit 3"}),
            node("app", ["db"], ops={"create": "echo app"}),
            node("web", ["app"], ops={"create": "echo web"}),
        )
    )
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64, result.output
    status = project.status()
    for name in ("app", "web"):
        assert status[name]["readyState"] == {"local": "ok", "state": "created",
                                               "effective": "error"}
    assert "1 failed, 0 blocked" in result.output
    ran = [line for line in project.jobs_tsv() if "target=::app" in line or "target=::web" in line]
    assert len(ran) == 2 and all("status=ok" in line for line in ran)


def test_failed_node_is_repaired_by_the_next_deploy(project, invoke):
    marker = project.root / "fixed"
    project.write(
        ensemble(
            node("db", ops={"create": f"test -e {marker}"}),
            node("app", ["db"], ops={"create": "true"}),
        )
    )
    assert invoke("deploy", "--approve").exit_code == 64
    marker.write_text("")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.local("db") == "ok" and project.local("app") == "ok"
    # Unfurl's reason for an instance a failed command left unknown: missing; app ran the
    # first time (db is only its dependency, not its host) and is not run again
    assert "[missing]" in result.output and "[add]" not in result.output
    assert "effective" not in project.status()["app"]["readyState"]


def test_undeploy_leaves_a_node_a_failed_create_did_not_create(project, invoke):
    project.write(ensemble(node("db", ops={"create": "exit 1", "delete": "true"})))
    invoke("deploy", "--approve")
    assert project.local("db") == "unknown"
    result = invoke("undeploy", "--approve")  # as Unfurl: not created by this ensemble
    assert result.exit_code == 0 and "wasn't created by this ensemble" in result.output
    assert project.local("db") == "unknown"
    assert invoke("undeploy", "--approve", "--destroy-discovered").exit_code == 0
    assert project.local("db") == "absent"


def test_undeploy_without_delete_operation_says_skipped(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    invoke("deploy", "--approve")
    result = invoke("undeploy", "--approve")
    assert "app: skipped: no delete operation" in result.output
    assert project.local("app") == "ok"
    assert project.status()["app"]["readyState"]["effective"] == "error"


def test_dryrun_runs_nothing_and_writes_nothing(project, invoke):
    project.write(ensemble(node("db", ops={"create": "touch created"})))
    before = project.commits()
    result = invoke("deploy", "--dryrun")
    # the command has no dry-run form: Unfurl 1.2.0 fails the task (tests/data/unfurl120/
    # 13-fidelity/tmpl-dry), so the job fails, and still nothing ran or was written
    assert result.exit_code == 64, result.output
    assert "could not run: dry run not supported" in result.output
    assert not (project.root / "created").exists()
    assert project.commits() == before and not project.jobs_tsv()
    assert "status" not in YAML(typ="safe").load(project.ensemble.read_text())


def test_dryrun_uses_the_commands_dryrun_form(project, invoke):
    project.write(
        ensemble(
            node("db", ops={}, extra="")
            + """
          interfaces:
            Standard:
              operations:
                create:
                  implementation: Shell
                  inputs:
                    command: "touch made%dryrun%"
                    dryrun: "-dry"
"""
        )
    )
    assert invoke("deploy", "--dryrun").exit_code == 0
    assert (project.root / "made-dry").exists() and not (project.root / "made").exists()


def test_instance_limits_the_job_to_it_and_what_it_needs(project, invoke):
    project.write(
        ensemble(
            node("db", ops={"create": "true"}),
            node("app", ["db"], ops={"create": "true"}),
            node("other", ops={"create": "true"}),
        )
    )
    result = invoke("deploy", "--approve", "--instance", "app")
    assert result.exit_code == 0, result.output
    status = project.status()
    assert set(status) == {"db", "app"}


def test_force_reruns_instances_already_ok(project, invoke):
    project.write(ensemble(node("db", ops={"create": "echo x >> count"})))
    invoke("deploy", "--approve")
    assert invoke("deploy", "--approve", "--force").exit_code == 0
    assert (project.root / "count").read_text().count("x") == 2


def test_no_approval_without_a_terminal_is_refused_clearly(project):
    from tests.conftest import run_unfurl

    project.write(ensemble(node("db", ops={"create": "touch created"})))
    proc = run_unfurl(project.root, "deploy")
    assert proc.returncode == 1
    assert "--approve" in proc.stderr and "Traceback" not in proc.stderr
    assert not (project.root / "created").exists()


def test_dirty_abort_refuses_uncommitted_changes(project, invoke):
    project.write(ensemble(node("db", ops={"create": "true"})))
    (project.root / "notes.txt").write_text("x")
    git(project.root, "add", "notes.txt")
    result = invoke("deploy", "--approve", "--dirty", "abort")
    assert result.exit_code == 1
    assert "uncommitted changes: notes.txt" in result.output
    assert invoke("deploy", "--approve", "--dirty", "ok").exit_code == 0


def test_message_and_no_commit(project, invoke):
    project.write(
        ensemble(
            node(
                "db",
                ops={"create": "true"},
            ),
            node("x", ops={"create": "true"}),
        )
    )
    invoke("deploy", "--approve", "-m", "first deploy", "--instance", "db")
    assert project.commits()[0] == "first deploy"
    invoke("deploy", "--approve", "--no-commit")
    assert project.commits()[0] == "first deploy"
    assert project.local("x") == "ok"


def test_attributes_from_result_template_are_visible_to_later_tasks(project, invoke):
    project.write(
        ensemble("""
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create:
                  implementation: Shell
                  inputs:
                    command: echo 5432
                    resultTemplate: |
                      port: {{ stdout | trim }}
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
          interfaces:
            Standard:
              operations:
                configure:
                  implementation: Shell
                  inputs:
                    command: {concat: ["echo ", {get_attribute: [db, port]}, " > out"]}
""")
    )
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["db"]["attributes"]["port"] == 5432
    assert (project.root / "out").read_text().strip() == "5432"


def test_lazy_inputs_see_attributes_and_tosca_functions(project, invoke):
    project.write("""apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  inputs:
    greeting: hello
  service_template:
    topology_template:
      inputs:
        greeting: {type: string, default: hi}
      node_templates:
        db:
          type: tosca.nodes.Root
          properties: {port: 5432}
          interfaces:
            Standard:
              operations:
                create:
                  implementation: Template
                  inputs:
                    done: {status: ok}
                    resultTemplate:
                      url: "db:{{ SELF.port }}"
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
          interfaces:
            Standard:
              operations:
                create:
                  implementation: Shell
                  inputs:
                    command:
                      concat:
                        - "echo "
                        - get_input: greeting
                        - " "
                        - get_attribute: [db, url]
                        - " "
                        - get_property: [db, port]
                        - " > out.txt"
""")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert (project.root / "out.txt").read_text().strip() == "hello db:5432 5432"


def test_records_match_unfurl_formats(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    ours = project.jobs_tsv()
    theirs = (REFERENCE / "jobs.tsv").read_text().splitlines()
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs, strict=True):
        mine_keys = [c.split("=")[0] for c in mine.split("\t")[1:]]
        ref_keys = [c.split("=")[0] for c in ref.split("\t")[1:]]
        assert mine_keys == ref_keys
    # same digests as Unfurl 1.2.0 computes for the same inputs
    assert [c for c in ours[1].split("\t") if c.startswith("digestValue")] == [
        c for c in theirs[1].split("\t") if c.startswith("digestValue")
    ]
    safe = YAML(typ="safe")
    ensemble_doc = safe.load(project.ensemble.read_text())
    ref_doc = safe.load((REFERENCE / "ensemble.after.yaml").read_text())
    assert (
        ensemble_doc["status"]["instances"]["db"].keys()
        == ref_doc["status"]["instances"]["db"].keys()
    )
    assert set(ref_doc["lastJob"]) - {"options"} <= set(ensemble_doc["lastJob"])
    changelog = project.root / ensemble_doc["lastJob"]["changelog"]
    changes = safe.load(changelog.read_text())
    ref_changes = safe.load((REFERENCE / "changes-job.yaml").read_text())
    assert changes["manifest"] == ref_changes["manifest"]
    assert [set(c) for c in changes["changes"][1:]] == [set(c) for c in ref_changes["changes"][1:]]
    jobs_dir = list((project.root / "jobs").glob("job*.yaml"))
    assert len(jobs_dir) == 1 and changelog.name == jobs_dir[0].name
    committed = git(project.root, "show", "--stat", "--format=%s", "HEAD")
    for path in ("ensemble.yaml", "jobs.tsv", "changes/", "jobs/"):
        assert path in committed


def test_comments_and_untouched_parts_survive_a_job(project, invoke):
    text = (
        (REFERENCE / "ensemble.before.yaml")
        .read_text()
        .replace("kind: Ensemble", "kind: Ensemble  # keep me")
        .replace("node_templates:", "node_templates:\n        # the database\n", 1)
    )
    project.write(text)
    assert invoke("deploy", "--approve").exit_code == 0
    saved = project.ensemble.read_text()
    assert "kind: Ensemble  # keep me" in saved and "# the database" in saved
    assert saved.index("spec:") < saved.index("status:") < saved.index("lastJob:")
