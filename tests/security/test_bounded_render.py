"""Bounded, whatever the input: file() reads only regular files, sized before reading;
format widths and precisions are sized before anything is built; rendering stops at the
job's render budget and when the job is cancelled; the loader refuses documents with too
many keys, list items or anchors before parsing them."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ensemble_yaml, run_unfurl
from tests.execution_helpers import run_measured, start_unfurl, wait_for
from unfurl_lite.errors import ExpressionError, RenderCancelled, RenderTimeout
from unfurl_lite.expressions import limits
from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.sandbox import render_template


def _ctx(root: Path | None = None, allow_outside: bool = False) -> EvalContext:
    ctx = EvalContext(self_view={}, inputs={})
    ctx.project_root = root
    ctx.allow_outside_paths = allow_outside
    return ctx


def test_file_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    with open(tmp_path / "sparse", "wb") as sparse:
        sparse.truncate(2 * 1024**3)  # 2 GB that takes no room: refused by its size
    (tmp_path / "link").symlink_to(tmp_path / "pipe")
    (tmp_path / "ok.txt").write_text("fine")
    cases = {"pipe": "a FIFO", "dir": "a directory", "link": "a FIFO",
             "sparse": "larger than 1000000 bytes (2147483648 bytes)",
             "/dev/zero": "a character device", "/dev/null": "a character device"}
    for name, why in cases.items():
        with pytest.raises(ExpressionError) as refused:
            render_template(f"{{{{ file({name!r}) }}}}", _ctx(tmp_path, allow_outside=True))
        assert why in refused.value.message, name
    assert render_template("{{ file('ok.txt') }}", _ctx(tmp_path)) == "fine"


def test_a_job_reading_a_fifo_ends_with_a_clean_error(project) -> None:
    """Today's hang: nothing ever writes to the pipe. The job must end on its own."""
    os.mkfifo(project.root / "pipe")
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        "        create:\n          implementation: Shell\n"
        "          inputs:\n            command: \"echo {{ file('pipe') }}\"\n"))
    done = run_unfurl(project.root, "deploy", "--approve", timeout=120)
    assert done.returncode == 64
    assert "is a FIFO (named pipe), not a regular file" in done.stdout + done.stderr


def _unblock(pipe: Path) -> None:
    """End a read that waits on ``pipe`` (it then reads nothing, and the test fails on its
    message instead of hanging); nothing happens when nobody reads it."""
    with contextlib.suppress(OSError):
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.parametrize("read", [
    "{eval: {file: pipe}, select: contents}", "\"{{ lookup('file', 'pipe') }}\"",
    "{eval: {lookup: {file: pipe}}}", "\"{{ 'pipe' | file }}\"",
    "{eval: {template: {path: pipe}}}"])
def test_every_way_of_reading_a_file_refuses_a_fifo(project, invoke, read) -> None:
    """file() and each of its other spellings (the eval function, lookup, the filter, a
    template read from a path) end with an error naming the FIFO, instead of waiting for
    a writer that never comes."""
    os.mkfifo(project.root / "pipe")
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        "        create:\n          implementation: Shell\n"
        f"          inputs:\n            text: {read}\n"
        "            command: echo {{ inputs.text }} > ran.txt\n"))
    watchdog = threading.Timer(60, _unblock, [project.root / "pipe"])  # were it to hang
    watchdog.daemon = True
    watchdog.start()
    try:
        done = invoke("deploy", "--approve")
    finally:
        watchdog.cancel()
    assert done.exit_code in (1, 64), done.output
    assert "FIFO" in done.output, done.output
    assert not (project.root / "ran.txt").exists()


def test_an_include_of_a_fifo_never_hangs(project) -> None:
    os.mkfifo(project.root / "pipe.yaml")
    project.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  +include: pipe.yaml\n")
    done = run_unfurl(project.root, "validate", timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("template", [
    "{{ '{:>999999999}'.format(1) }}",
    "{{ '{0:>{1}}'.format(1, 999999) ~ '{0:>{1}}'.format(1, 999999) }}",
    "{{ '{:{w}}'.format(1, w=999999999) }}",
    "{{ '{x:>{w}}'.format_map({'x': 1, 'w': 999999999}) }}",
    "{{ '{:.999999999f}'.format(1.5) }}",
    "{{ '{:>900000}{:>900000}'.format(1, 2) }}",
    "{{ ('{:>999999999}' | safe).format(1) }}",
    "{{ '%*d' % (999999999, 1) }}",
    "{{ '%.*f' % (999999999, 1.0) }}",
    "{{ '%*d%*d' % (900000, 1, 900000, 1) }}",
    "{{ '%0999999999d' % 1 }}",
    "{{ '%*d' | format(999999999, 1) }}",
    "{{ '%*d' | format(900000, 1) ~ '%*d' | format(900000, 1) }}",
])
def test_format_widths_are_bounded_before_anything_is_built(template: str) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ExpressionError) as refused:
        render_template(template, _ctx())
    assert "too large" in refused.value.message
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100  # nothing near the width was ever built


@pytest.mark.parametrize(("template", "rendered"), [
    ("{{ '{:>5}|{:<3}|{:.2f}'.format(7, 'ab', 3.14159) }}", "    7|ab |3.14"),
    ("{{ '{a}-{b:>3}'.format_map({'a': 1, 'b': 2}) }}", "1-  2"),
    ("{{ '%5d|%-3s|%.1f' % (7, 'x', 2.25) }}", "    7|x  |2.2"),
    ("{{ '%*d' % (4, 1) }}", "   1"),
    ("{{ '%(a)3s' % {'a': 1} }}", "  1"),
    ("{{ '%5s' | format('x') }}", "    x"),
])
def test_ordinary_formatting_still_works(template: str, rendered: str) -> None:
    assert render_template(template, _ctx()) == rendered


HOSTILE = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"


def test_the_render_budget_is_per_job_not_per_task() -> None:
    """Six hostile templates in a row: the first spends the job's budget, the others are
    refused at once (they would each have taken the per-task limit)."""
    messages = []
    with limits.render_budget():
        for _ in range(6):
            with pytest.raises(ExpressionError) as stopped:
                render_template(HOSTILE, _ctx())
            messages.append(stopped.value.message)
        assert limits.budget.get() is not None and limits.budget.get().left <= 0
    assert all("render budget" in m or "rendering took longer" in m for m in messages)
    assert sum("render budget" in m for m in messages) >= 5
    assert render_template("{{ 1 + 1 }}", _ctx()) == "2"  # outside the job: a fresh budget


def test_an_operation_timeout_shorter_than_the_budget_stops_the_render() -> None:
    ctx = _ctx()
    ctx.time_limit, ctx.deadline = 0.2, None
    import time

    ctx.deadline = time.monotonic() + ctx.time_limit
    with limits.render_budget(), pytest.raises(ExpressionError) as stopped:
        render_template(HOSTILE, ctx)
    assert "took longer than 0.2 s" in stopped.value.message


def test_cancelling_the_job_stops_a_render() -> None:
    ctx = _ctx()
    ctx.cancel = threading.Event()
    threading.Timer(0.3, ctx.cancel.set).start()  # the render never ends on its own
    with pytest.raises(RenderCancelled):
        render_template(HOSTILE, ctx)


def catches_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler (Linux's /proc): a job installs
    one just before it renders and runs, where the plain interpreter has none."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


@pytest.mark.slow
def test_sigterm_while_a_template_renders_cancels_the_job(project) -> None:
    """The render phase renders every task before the first runs (as Unfurl 1.2.0): the
    plan is printed, then the hostile template renders for up to the operation's
    timeout, and SIGTERM then cancels the job."""
    project.write(ensemble_yaml(
        "app:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        "        create:\n          implementation: Shell\n          timeout: 120\n"
        f"          inputs:\n            command: \"echo {HOSTILE} > ran.txt\"\n"))
    process = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: catches_sigterm(process.pid), process)  # the job's handlers are in
    process.terminate()
    out, err = process.communicate(timeout=120)
    assert "cancelled while a template rendered" in out + err, out + err
    assert "Traceback" not in out + err
    assert not (project.root / "ran.txt").exists()


LOADER_BOMBS = {
    "keys-flow": lambda: "metadata: {" + ", ".join(f"k{i}: 1" for i in range(1_000_000)) + "}\n",
    "keys-json": lambda: "metadata: {" + ",".join(f'"k{i}":1' for i in range(1_000_000)) + "}\n",
    "keys-block": lambda: "metadata:\n" + "".join(f"  k{i}: 1\n" for i in range(1_000_000)),
    "anchors": lambda: "metadata:\n" + "".join(f"  - &a{i} x\n" for i in range(100_000)),
    "items": lambda: "metadata: [" + ",".join("1" for _ in range(2_000_000)) + "]\n",
    "block-items": lambda: "metadata:\n" + "  -\n" * 2_000_000,
}
_HEAD = textwrap.dedent("""\
    apiVersion: unfurl/v1alpha1
    kind: Ensemble
    spec:
      service_template:
        topology_template:
          node_templates: {}
    """)


@pytest.mark.slow
@pytest.mark.parametrize("bomb", list(LOADER_BOMBS))
def test_the_loader_refuses_huge_documents_early_in_bounded_memory(project, bomb) -> None:
    project.write(_HEAD + LOADER_BOMBS[bomb](), commit=False)
    code, output, peak = run_measured(project.root, "validate")
    assert code == 1
    assert "refused before parsing" in output, output[-500:]
    assert ("anchors" in output) == (bomb == "anchors")
    assert peak < 300 * 1024  # KB: it never parsed the document


def _as_template(source: str) -> Any:
    """A function whose lines the render tracer watches, as it watches a template's."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<template>", "exec"), namespace)
    return namespace["run"]


WAITS = "def run(wait):\n    for _ in range(5):\n        wait(0.05)\n    return 'done'\n"


def test_without_a_timeout_a_render_is_limited_in_cpu_time_not_wall_time() -> None:
    """On a loaded machine an ordinary template waits for a core: that wait is not the
    template's work, and must not fail it; a template that computes is still stopped."""
    import time

    with limits.render_limits(None, 0.1):
        assert _as_template(WAITS)(time.sleep) == "done"  # 0.25 s of wall, no CPU to speak of
    with pytest.raises(RenderTimeout) as stopped, limits.render_limits(None, 0.1):
        _as_template("def run():\n    while True:\n        pass\n")()
    assert "0.1 s of CPU time" in stopped.value.message


def test_an_operations_timeout_is_wall_time() -> None:
    import time

    with pytest.raises(RenderTimeout) as stopped, \
            limits.render_limits(time.monotonic() + 0.1, 0.1):
        _as_template(WAITS)(time.sleep)
    assert "took longer than 0.1 s (the operation's timeout)" in stopped.value.message
