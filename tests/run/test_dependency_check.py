"""What a rendered task read decides whether it runs, as Unfurl 1.2.0 checks it just before
it runs (run/render_phase.py's ``never_ran`` and ``unready_reads``), and relationship
operations rendered and reasoned as Unfurl does (tests/data/unfurl-cases/200, 279, 280
hold Unfurl's runs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SERVICE_HEAD, examples
from unfurl_lite.expressions.reads import Reads
from unfurl_lite.model.entities import Instance, NodeTemplate, Operation, Requirement, Status
from unfurl_lite.plan.tasks import Task
from unfurl_lite.run.render_phase import unready_reads

SERVER = SERVICE_HEAD + """\
    types:
      nodes.Server:
        derived_from: tosca.nodes.Root
        properties:
          port:
            type: integer
            default: 8080
        attributes:
          address:
            type: string
            required: false
    topology_template:
      node_templates:
        server:
          type: nodes.Server
          interfaces:
            Standard:
              create:
                implementation: Template
                inputs:
                  run: server
                  done:
                    status: {status}
                  resultTemplate:
                    attributes:
                      address: 10.0.0.1
"""


def _reader(name: str, run: str) -> str:
    return (f"        {name}:\n          type: tosca:Root\n          interfaces:\n"
            f"            Standard:\n              configure:\n"
            f"                implementation: Template\n                inputs:\n"
            f"                  run: {run!r}\n                  done:\n"
            f"                    status: ok\n")


def _rows(project) -> dict[str, str]:
    return {line.split("\t")[3]: line.split("\t")[2] for line in project.jobs_tsv()[1:]}


@pytest.mark.parametrize(("status", "runs"), [
    ("error", False), ("degraded", True), ("ok", True),
])
def test_a_rendered_task_does_not_run_on_a_live_value_of_an_instance_not_operational(
        project, invoke, status, runs):
    """The client waits for the server's address, which the server's create sets: it then
    renders and runs only if the server is ok or degraded. A declared property of the
    server is not live and never stops a task."""
    project.write(SERVER.format(status=status) + _reader("client", "{{ NODES.server.address }}")
                  + _reader("portonly", "{{ NODES.server.port }}"))
    result = invoke("deploy", "--approve", "--jobexitcode", "error")
    assert ("could not run: required dependencies not ready: ::server::address is error"
            in result.output) is not runs, result.output
    rows = _rows(project)
    assert rows["target=::client"] == ("status=ok" if runs else "status=error")
    assert rows["target=::portonly"] == "status=ok"


def test_an_instance_left_in_error_stops_a_task_that_did_not_wait_for_it(project, invoke):
    """The second deploy does not change the server (a created instance's create is not
    run again): the client does not wait, renders, reads the server's address, and could
    not run; recorded as Unfurl records it, with what it read in its digest."""
    project.write(SERVER.format(status="error") + _reader("client", "{{ NODES.server.address }}"))
    invoke("deploy", "--approve")
    result = invoke("deploy", "--approve", "--jobexitcode", "error")
    assert result.exit_code == 64, result.output
    assert "::server::address is error" in result.output
    job, row = (line.split("\t") for line in project.jobs_tsv()[-2:])
    assert "summary=1 tasks (0 changed, 0 ok, 0 failed, 1 blocked" in "\t".join(job)
    fields = dict(f.split("=", 1) for f in row[1:])
    assert fields["target"] == "::client" and fields["status"] == "error"
    assert fields["digestKeys"] == "run,::server::address"
    assert project.status()["client"]["readyState"] == {"local": "pending",
                                                         "state": "configuring"}


@pytest.mark.parametrize(("address", "said", "client"), [
    ("10.0.0.1", "Never ran: non-operational dependencies: ['::server::address']", "error"),
    ("10.0.0.9", "client: Standard.configure succeeded", "ok"),
])
def test_a_wait_is_over_only_when_the_value_changed(project, invoke, address, said, client):
    """``deploy --force`` runs the server's create again, which ends in error: when it sets
    the address the client's render already saw, the client's wait never ends (Unfurl
    1.2.0: "Never ran", case 282); a new address ends it, and the client, rendered, runs,
    the reason ``force`` sparing it the check of what it read (case 283)."""
    project.write(SERVER.format(status="error") + _reader("client", "{{ NODES.server.address }}"))
    invoke("deploy", "--approve")
    project.write(project.ensemble.read_text().replace(  # the spec's, not the status'
        "address: 10.0.0.1", f"address: {address}", 1))
    result = invoke("deploy", "--approve", "--force")
    assert said in result.output, result.output
    assert _rows(project)["target=::client"] == f"status={client}"


VOLUME = SERVICE_HEAD + """\
    relationship_types:
      Mount:
        derived_from: tosca.relationships.AttachesTo
        properties:
          location:
            type: string
            default: /mnt
        interfaces:
          Configure:
            operations:
              post_configure_target:
                implementation: Template
                inputs:
                  run: "mount {{ TARGET.volume_id }} on {{ SOURCE.public_address }}"
                  done:
                    status: ok
    topology_template:
      node_templates:
        app:
          type: tosca.nodes.Compute
          requirements:
            - local_storage:
                node: disk
                relationship:
                  type: Mount
          interfaces:
            Standard:
              create:
                implementation: Template
                inputs:
                  run: app
                  done:
                    status: APP
                  resultTemplate:
                    attributes:
                      public_address: 10.0.0.2
        disk:
          type: tosca.nodes.Storage.BlockStorage
          properties:
            name: disk
            size: 10 GB
          interfaces:
            Standard:
              create:
                implementation: Template
                inputs:
                  run: disk
                  done:
                    status: DISK
"""


def _volume(app: str, disk: str) -> str:
    return VOLUME.replace("status: APP", f"status: {app}").replace(
        "status: DISK", f"status: {disk}")


def test_a_relationship_operation_that_waited_in_vain_never_ran(project, invoke):
    """The relationship operation is rendered with the others and waits for the volume's
    id; the volume fails without setting it, so the operation "Never ran" (said before
    that the volume's create did not succeed), recorded as an error on its relationship
    instance."""
    project.write(_volume(app="ok", disk="error"))
    result = invoke("deploy", "--approve", "--jobexitcode", "error")
    assert result.exit_code == 64, result.output
    assert "Never ran: non-operational dependencies: ['::disk::volume_id']" in result.output
    assert "did not succeed" not in result.output
    rows = _rows(project)
    assert rows["target=::app::.requirements::[.name=local_storage]"] == "status=error"
    # as Unfurl: the declared property its render read is the volume's own from now on, null
    assert project.status()["disk"]["attributes"] == {"volume_id": None}


def test_a_relationship_operation_runs_after_what_it_reads(project, invoke):
    project.write(_volume(app="ok", disk="ok").replace(
        "                  run: disk\n", "                  run: disk\n"
        "                  resultTemplate:\n                    attributes:\n"
        "                      volume_id: vol-7\n"))
    result = invoke("deploy", "--approve", "--jobexitcode", "error")
    assert result.exit_code == 0, result.output
    targets = [line.split("\t")[3] for line in project.jobs_tsv()[1:]]
    assert targets[-1] == "target=::app::.requirements::[.name=local_storage]"


def test_a_relationship_operations_reason_is_its_relationship_instances(project, invoke):
    """The app's create ends in error: the second deploy repairs the app (reason
    ``error``), but the link was never added, so its operation's reason is ``add``."""
    project.write(_volume(app="error", disk="ok"))
    invoke("deploy", "--approve")
    plan = invoke("plan")
    line = next(x for x in plan.output.splitlines() if "post_configure_target" in x)
    assert "[add]" in line, plan.output


# -- the rule itself, over any instances, statuses and reads

STATUSES = list(Status)
_KEYS = ("attr", "prop", "undeclared")  # declared attribute, declared property, neither


@st.composite
def _worlds(draw: st.DrawFn) -> tuple[dict[str, Instance], list[str], frozenset[str]]:
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=5, unique=True))
    instances = {n: Instance(n, f"t{n}", status=draw(st.sampled_from(STATUSES)))
                 for n in names}
    reads = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(_KEYS)),
                          max_size=8))
    computed = frozenset(f"t{n}" for n in draw(st.sets(st.sampled_from(names))))
    return instances, [f"::{n}::{k}" for n, k in reads], computed


TEMPLATES = {f"t{n}": NodeTemplate(f"t{n}", "T", properties={"prop": 1},
                                   attributes={"attr": None}) for n in "abcdef"}


@settings(max_examples=examples(300))
@given(_worlds(), st.booleans(), st.sampled_from(["configure", "check", "delete"]),
       st.sampled_from(["add", "force", "run", "error"]))
def test_only_live_reads_of_other_instances_not_operational_stop_a_task(
        world, relationship, operation, reason):
    instances, exprs, computed = world
    own = next(iter(instances))
    requirement = Requirement("r", own) if relationship else None
    task = Task(1, own, f"t{own}", Operation("Standard", operation, None), reason, "deploy",
                requirement=requirement)
    why = unready_reads(task, Reads((), tuple((e, None) for e in exprs)), instances,
                        TEMPLATES, lambda: computed)
    expected = [] if operation in ("check", "delete") or reason in ("force", "run") else [
        e for e in dict.fromkeys(exprs)
        if (name := e[2:].partition("::")[0]) != (None if relationship else own)
        and instances[name].status not in (Status.ok, Status.degraded)
        and instances[name].template not in computed and not e.endswith("::prop")]
    if not expected:
        assert why is None
        return
    assert why is not None and why.startswith("could not run: required dependencies not ready: ")
    listed = why.split(": ", 2)[2].split(", ")
    assert [x.split(" is ")[0] for x in listed] == expected
    for item in listed:
        expr, _, said = item.partition(" is ")
        status = instances[expr[2:].partition("::")[0]].status
        assert said == ("not set yet" if status == Status.pending else str(status))
