"""The render phase (run/render_phase.py), as Unfurl 1.2.0 renders a job's tasks before it
runs the first: a render error aborts the job before anything runs and nothing is
recorded; a task that reads a live value of another instance a task of the job changes
waits for it, and in deploy never runs when that instance did not end operational
(tests/data/unfurl-cases/158, 159 and 191-196 hold Unfurl's runs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SERVICE_HEAD, examples

HEAD = SERVICE_HEAD + """\
    types:
      nodes.Test:
        derived_from: tosca.nodes.Root
        attributes:
          attr:
            type: string
            required: false
        properties:
          prop:
            type: string
            default: declared
    topology_template:
      node_templates:
"""


def _node(name: str, run: str, type_: str = "tosca:Root", extra: str = "") -> str:
    return (f"        {name}:\n          type: {type_}\n          interfaces:\n"
            f"            Standard:\n              configure:\n"
            f"                implementation: Template\n                inputs:\n"
            f"                  run: {run!r}\n{extra}")


def _sets(attribute: str, value: str, status: str = "ok") -> str:
    return (f"                  done:\n                    status: {status}\n"
            f"                  resultTemplate:\n                    attributes:\n"
            f"                      {attribute}: {value}\n")


FINE = _node("fine", "fine")


@pytest.mark.parametrize("run", [
    "{{ NODES.writer.nosuch }}",  # an attribute nobody declares or sets
    "{{ SELF.ip }}",  # its own, which no task of the job sets (refused before it plans)
    "{{ (NODES.writer.prop | int) / 0 }}",  # arithmetic that fails on a declared property
    "{{ 'x' | from_json }}",  # a filter that fails on a constant
])
def test_a_render_error_aborts_the_job_before_anything_runs(project, invoke, run):
    project.write(HEAD + FINE + _node("writer", "w", "nodes.Test") + _node("reader", run))
    commits = project.commits()
    result = invoke("deploy", "--approve", "--jobexitcode", "error")
    assert result.exit_code == 64, result.output
    assert "Aborting job" in result.output and "reader Standard.configure" in result.output
    assert project.commits() == commits  # nothing committed...
    assert project.jobs_tsv() == []  # ...nor recorded
    assert not (project.root / "jobs").exists()
    assert "status" not in project.ensemble.read_text()


def test_an_aborted_job_exits_as_its_jobexitcode_says(project, invoke):
    project.write(HEAD + FINE + _node("reader", "{{ NODES.fine.nosuch }}"))
    result = invoke("deploy", "--approve", "--jobexitcode", "never")
    assert result.exit_code == 0, result.output
    assert "Aborting job" in result.output
    assert project.jobs_tsv() == []


def test_a_task_waits_for_the_instance_whose_attribute_it_reads(project, invoke):
    """The reader is first in plan order; it runs (and is numbered) after the writer,
    and sees the value the writer's resultTemplate set."""
    project.write(HEAD + _node("reader", "{{ NODES.writer.attr }}", extra=_sets(
        "seen", "'{{ inputs.run }}'")) + FINE + _node("writer", "w", "nodes.Test",
                                                      _sets("attr", "set-by-writer")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    status = project.status()
    assert status["reader"]["attributes"] == {"seen": "set-by-writer"}
    order = [line.split("\t")[3] for line in project.jobs_tsv()[1:]]
    assert order == ["target=::fine", "target=::writer", "target=::reader"]


def test_a_waiting_task_never_runs_when_its_dependency_is_not_operational(project, invoke):
    project.write(HEAD + _node("reader", "{{ NODES.writer.attr }}") + FINE
                  + _node("writer", "w", "nodes.Test", "                  done:\n"
                          "                    status: error\n"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64, result.output
    assert "non-operational dependencies: ['::writer::attr']" in result.output
    rows = {line.split("\t")[3]: line.split("\t")[2] for line in project.jobs_tsv()[1:]}
    assert rows == {"target=::fine": "status=ok", "target=::writer": "status=ok",
                    "target=::reader": "status=error"}  # recorded, as Unfurl
    assert project.status()["reader"]["readyState"] == {"local": "pending"}
    assert "created" not in project.status()["reader"]
    # as Unfurl: the declared attribute its render read is the writer's own, null as it is
    assert project.status()["writer"]["attributes"] == {"attr": None}


def test_declared_attributes_a_task_reads_are_recorded_null_too(project, invoke):
    """As Unfurl 1.2.0: a declared attribute a task read, of its own instance or of one
    no task of the job changes, is recorded even while it is null."""
    project.write(HEAD + _node("selfreader", "{{ SELF.attr }}", "nodes.Test")
                  + _node("otherreader", "{{ NODES.idle.attr }}")
                  + "        idle:\n          type: nodes.Test\n")
    assert invoke("deploy", "--approve").exit_code == 0
    status = project.status()
    assert status["selfreader"]["attributes"] == {"attr": None}
    assert status["idle"]["attributes"] == {"attr": None}
    assert "attributes" not in status["otherreader"]


def test_a_declared_property_is_not_waited_for(project, invoke):
    """A declared property is not live: the reader renders with it at once, in plan
    order, even though the instance it reads has a task in the job."""
    project.write(HEAD + _node("reader", "{{ NODES.writer.prop }}", extra=_sets(
        "seen", "'{{ inputs.run }}'")) + _node("writer", "w", "nodes.Test"))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    order = [line.split("\t")[3] for line in project.jobs_tsv()[1:]]
    assert order == ["target=::reader", "target=::writer"]
    assert project.status()["reader"]["attributes"] == {"seen": "declared"}


def _deletes(name: str, run: str) -> str:
    return (_node(name, "up") + "              delete:\n                implementation: "
            f"Template\n                inputs:\n                  run: {run!r}\n")


def test_undeploy_leaves_out_what_it_cannot_render(project, invoke, caplog):
    """As Unfurl: the delete that cannot render never runs (the instance stays), the
    others do, and the job is not aborted (case 195)."""
    project.write(HEAD + _deletes("stays", "{{ SELF.nosuch }}") + _deletes("goes", "bye"))
    assert invoke("deploy", "--approve").exit_code == 0
    rows = len(project.jobs_tsv())
    result = invoke("undeploy", "--approve", "--jobexitcode", "error")
    assert result.exit_code == 0, result.output
    assert "Aborting job" not in result.output
    assert "stays delete: not run: its inputs cannot be rendered" in caplog.text
    added = [line.split("\t")[3] for line in project.jobs_tsv()[rows + 1:]]
    assert added == ["target=::goes"]
    assert project.local("stays") == "ok" and project.local("goes") == "absent"


# -- the order a plan takes when tasks wait (waiting_plan), over random plans


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[tuple[int, str, tuple[int, ...]]], dict[int, str]]:
    """Tasks (number, target, after) in an order that respects ``after``, and waits."""
    count = draw(st.integers(2, 9))
    targets = [f"n{draw(st.integers(0, 4))}" for _ in range(count)]
    tasks = []
    for number in range(1, count + 1):
        after = tuple(sorted(draw(st.sets(st.integers(1, number - 1), max_size=2))
                             if number > 1 else ()))
        tasks.append((number, targets[number - 1], after))
    waits = draw(st.dictionaries(st.integers(1, count), st.sampled_from(targets), max_size=3))
    return tasks, waits


@settings(max_examples=examples(200))
@given(plans())
def test_a_waiting_plan_keeps_every_order_and_waits_where_it_can(drawn):
    from unfurl_lite.model.entities import Implementation, Operation
    from unfurl_lite.plan.tasks import Plan, Task
    from unfurl_lite.run.render_phase import waiting_plan

    tasks, waits = drawn
    op = Operation("Standard", "configure", Implementation("Template"))
    plan = Plan("deploy", [Task(n, t, t, op, "add", "deploy", after=a) for n, t, a in tasks])
    values = {n: (f"::{t}::attr",) for n, t in waits.items()}
    out = waiting_plan(plan, values)
    numbers = [t.number for t in out.tasks]
    assert sorted(numbers) == [n for n, _, _ in tasks]  # the same tasks
    place = {n: i for i, n in enumerate(numbers)}
    waiting = {plan.tasks[n - 1].target for n in waits}
    for task in out.tasks:
        # an order is dropped only to break a deadlock, as Unfurl does: a task of an
        # instance another waits on no longer follows the waiting instance's tasks
        dropped = set(plan.tasks[task.number - 1].after) - set(task.after)
        assert all(plan.tasks[b - 1].target in waiting for b in dropped)
        assert all(place[b] < place[task.number] for b in task.after)  # order kept
        if task.number in waits:
            assert task.waits_on == values[task.number]
            for other in out.tasks:  # after every task of what it waits for, but a cycle
                if other.target == waits[task.number] and other.number != task.number \
                        and other.number not in task.after:
                    assert other.number in _followers_of(out, task.number)
    first_waiting = min((place[n] for n in waits), default=len(numbers))
    assert all(n not in waits for n in numbers[:first_waiting])


def _followers_of(plan, number: int) -> set[int]:
    """Every task that (transitively) follows ``number`` in ``plan``."""
    found, todo = set(), [number]
    while todo:
        current = todo.pop()
        for task in plan.tasks:
            if current in task.after and task.number not in found:
                found.add(task.number)
                todo.append(task.number)
    return found


def test_an_instance_whose_requirement_waits_on_it_goes_first():
    """Unfurl's heuristic (tests/test_plan.py): my_server requires my_block_storage, whose
    create reads my_server's public_address: my_server's create no longer waits for the
    storage's, which waits for it instead (unfurl-cases 198)."""
    from unfurl_lite.model.entities import Implementation, Operation
    from unfurl_lite.plan.tasks import Plan, Task
    from unfurl_lite.run.render_phase import waiting_plan

    op = Operation("Standard", "create", Implementation("Template"))
    plan = Plan("deploy", [Task(1, "storage", "storage", op, "add", "deploy"),
                           Task(2, "server", "server", op, "add", "deploy", after=(1,)),
                           Task(3, "storage", "storage", op, "add", "deploy", after=(1, 2))])
    out = waiting_plan(plan, {1: ("::server::public_address",)})
    assert [(t.number, t.after) for t in out.tasks] == [(2, ()), (1, (2,)), (3, (1, 2))]


def _shell(name: str, *operations: tuple[str, str, str]) -> str:
    """A node of ``nodes.Test`` whose Standard operations run Shell commands:
    (operation, command, further input lines at the inputs' indent)."""
    ops = "".join(
        f"              {op}:\n                implementation: {{className: Shell}}\n"
        f"                inputs:\n                  command: {command}\n{extra}"
        for op, command, extra in operations)
    return (f"        {name}:\n          type: nodes.Test\n          interfaces:\n"
            f"            Standard:\n{ops}")


def test_a_templated_task_is_rendered_once(project, invoke, monkeypatch, tmp_path):
    """The render phase's render is the one the task runs with, and what the digest says
    it read comes from the same evaluation: an input that makes a temporary file makes
    one (it made three: the render phase's, the run's and the digest's; and five more
    while the job planned the next deploy to remember it, a plan that renders inputs for
    their digests and so is never remembered: planning it stops there now)."""
    from unfurl_lite.expressions import files

    temps = tmp_path / "temps"
    temps.mkdir()
    monkeypatch.setattr(files, "_TEMP", [temps])
    project.write(HEAD + _shell("a", (
        "configure", "'cat {{ inputs.note }} > seen-{{ SELF.prop }}'",
        "                  note: {eval: {tempfile: hello}}\n")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert len(list(temps.iterdir())) == 1
    assert (project.root / "seen-declared").read_text() == "hello"
    [job] = project.root.glob("jobs/job*.yaml")
    assert "digestKeys: command,note,::a::prop" in job.read_text()


SHADOWS = ("                  resultTemplate:\n                    attributes:\n"
           "                      prop: changed\n")


@pytest.mark.parametrize(("create", "configure"), [
    # create sets the attribute that now shadows the property configure's render read
    (("'true'", SHADOWS), "'echo {{ SELF.prop }} > seen'"),
    # what a file holds is not among the values read: an earlier task may write it
    (("'echo changed > x'", ""), "\"echo {{ lookup('file', 'x') }} > seen\""),
])
def test_a_task_whose_render_an_earlier_task_changed_renders_again(
    project, invoke, create, configure
):
    """configure was rendered before create ran: it runs with what it reads as it is when
    it starts."""
    (project.root / "x").write_text("old")
    project.write(HEAD + _shell("a", ("create", *create), ("configure", configure, "")))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert (project.root / "seen").read_text().strip() == "changed"
