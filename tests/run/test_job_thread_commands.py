"""Commands started and watched from the job's own thread (run/executors/commands.py):
each result is the one the Shell operation's own thread gives for the same command
(output, exit code, signals, timeouts), many run at once under one ``poll``, a command
that closes its pipes early holds up nobody, a kill-cancel from another thread ends them,
a force-cancel leaves them to finish, and every future completes on the waiting thread
(spawning threads, one a slot up to the cores, start the commands: a start waits for the
new process to exec, and a start that waits holds up no other slot)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.run.executors import commands
from unfurl_lite.run.executors.local import LocalExecutor
from unfurl_lite.run.operations import shell
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.operations.processes import ProcessTable

pytestmark = pytest.mark.skipif(not commands.available(), reason="no pidfd_open here")


def request(tmp_path: Path, command: object, number: int = 1, **inputs: object) -> OperationRequest:
    return OperationRequest(task_id=f"T{number}", kind="Shell", class_name="Shell",
                            target="n", operation="Standard.create",
                            inputs={"command": command, **inputs}, cwd=str(tmp_path),
                            env={"PATH": "/usr/bin:/bin"}, number=number)


def until_done(table: commands.Commands, futures: list[Future[OperationResult]],
               rounds: int = 3000) -> None:
    """Wait in the table until every future is done (bounded: a hang fails, not stalls)."""
    for _ in range(rounds):
        if all(f.done() for f in futures):
            return
        table.wait(0.2)
    pytest.fail("the commands did not end")


def start(table: commands.Commands, req: OperationRequest) -> Future[OperationResult]:
    launch = shell.prepare(req)
    assert isinstance(launch, shell.Launch)
    argv = launch.piped_argv()
    assert argv is not None
    return table.start(req.task_id, launch, argv)


def same(a: OperationResult, b: OperationResult) -> bool:
    strip = {"duration"}
    return ({k: v for k, v in a.outputs.items() if k not in strip}
            == {k: v for k, v in b.outputs.items() if k not in strip}
            and (a.success, a.modified, a.error, a.retry) == (b.success, b.modified, b.error,
                                                               b.retry))


SCRIPTS = st.sampled_from([
    "true", "exit 3", "exit 75", "echo out; echo err >&2", "printf 'a\\r\\nb\\rc'",
    "printf '\\377\\376 caf\\303\\251'", "head -c 200000 /dev/zero | tr '\\0' x",
    "echo partial; kill -TERM $$", "echo $UNFURL_WORKER $PATH", "yes | head -n 30000 >&2",
])


@settings(max_examples=examples(24), deadline=None)
@given(scripts=st.lists(SCRIPTS, min_size=1, max_size=6), spawners=st.integers(1, 3))
def test_many_commands_at_once_give_what_the_shell_operation_gives(
        scripts: list[str], spawners: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("many")
    table = commands.Commands(ProcessTable(), spawners=spawners)
    try:
        requests = [request(folder, s, n) for n, s in enumerate(scripts)]
        futures = [start(table, r) for r in requests]
        until_done(table, futures)
        for req, future in zip(requests, futures, strict=True):
            assert same(future.result(), shell.run(req)), req.inputs
    finally:
        table.close()


def test_a_timeout_stops_the_command_as_the_shell_operation_does(tmp_path: Path) -> None:
    table = commands.Commands(ProcessTable())
    try:
        # a second, not less: the shell must have started and said "begun" when the timeout
        # stops it, in both runs, on a machine whose load puts a start behind other work
        req = request(tmp_path, "echo begun; exec sleep 30", timeout=1.0)
        future = start(table, req)
        until_done(table, [future])
        result = future.result()
        assert result.error == "timed out after 1 s" and result.outputs["timeout"] == 1.0
        assert result.outputs["returncode"] == -15 and result.outputs["stdout"] == "begun\n"
        assert same(result, shell.run(req))
    finally:
        table.close()


def test_a_command_that_closes_its_pipes_early_holds_up_nobody(tmp_path: Path) -> None:
    """Its pipes end long before it does; the other commands finish meanwhile, and its
    own result comes when it ends."""
    table = commands.Commands(ProcessTable())
    try:
        slow = start(table, request(tmp_path, "exec >&- 2>&-; while [ ! -e go ]; do "
                                    "sleep 0.01; done; exit 3", 1))
        quick = [start(table, request(tmp_path, f"echo {n}", n)) for n in range(2, 5)]
        until_done(table, quick)
        assert not slow.done()
        (tmp_path / "go").touch()
        until_done(table, [slow])
        assert slow.result().outputs["returncode"] == 3
    finally:
        table.close()


def test_a_start_that_waits_holds_up_no_other_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process may wait for a core before it becomes its command (the kernel put it
    on one another program keeps busy, and it waits there for its turn): with two slots,
    the other slot's commands start and end meanwhile; one spawning thread held every
    start behind that one, and ``--jobs 2`` ran at one at a time, or slower."""
    released = threading.Event()
    waited: list[bool] = []
    real = shell.Launch.start_piped

    def start_piped(launch: shell.Launch, argv: list[bytes]) -> object:
        if argv[-1] == b"echo held":  # released once the others ended (one spawning
            waited.append(released.wait(30))  # thread: they wait, it gives up at 30 s)
        return real(launch, argv)

    monkeypatch.setattr(shell.Launch, "start_piped", start_piped)
    table = commands.Commands(ProcessTable(), spawners=2)
    try:
        held = start(table, request(tmp_path, "echo held", 1))
        others = [start(table, request(tmp_path, f"echo {n}", n)) for n in range(2, 6)]
        until_done(table, others)
        assert [f.result().outputs["stdout"] for f in others] == ["2\n", "3\n", "4\n", "5\n"]
        released.set()
        until_done(table, [held])
        assert held.result().outputs["stdout"] == "held\n"
        assert waited == [True]  # the others ended while it waited
    finally:
        released.set()
        table.close()


def test_a_command_still_running_when_no_descriptor_can_watch_it_still_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of descriptors (``pidfd_open`` fails) for a command that closed its pipes and
    runs on: it is looked at until it ends, and its result is the same."""

    def no_descriptor(pid: int, flags: int = 0) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(commands.os, "pidfd_open", no_descriptor)
    table = commands.Commands(ProcessTable())
    try:
        slow = start(table, request(tmp_path, "exec >&- 2>&-; sleep 0.3; exit 4", 1))
        until_done(table, [slow])
        assert slow.result().outputs["returncode"] == 4
        assert slow.result().outputs["duration"] >= 0.3
    finally:
        table.close()


def test_a_kill_cancel_from_another_thread_ends_what_runs(tmp_path: Path) -> None:
    processes = ProcessTable()
    table = commands.Commands(processes)
    try:
        futures = [start(table, request(tmp_path, "echo up > up$$; exec sleep 60", n))
                   for n in range(3)]
        for _ in range(3000):  # every command has started
            if len(list(tmp_path.glob("up*"))) == 3:
                break
            table.wait(0.05)
        killer = threading.Thread(target=processes.terminate_all)
        killer.start()
        until_done(table, futures)
        killer.join()
        assert {f.result().error for f in futures} == {"killed by signal 15"}
        assert processes.task_ids() == []
    finally:
        table.close()


def test_a_force_cancel_leaves_commands_to_finish(tmp_path: Path) -> None:
    table = commands.Commands(ProcessTable())
    future = start(table, request(tmp_path, "while [ ! -e go ]; do sleep 0.01; done; "
                                  "yes | head -n 100000; echo done > out"))
    table.abandon()
    table.close()
    (tmp_path / "go").touch()
    for thread in threading.enumerate():
        if thread.name == "unfurl-abandoned":
            thread.join()
    assert (tmp_path / "out").read_text() == "done\n"  # its output was read, not cut off
    assert not future.done()  # the job no longer waits for it


def test_wake_ends_a_wait_with_nothing_done() -> None:
    table = commands.Commands(ProcessTable())
    try:
        table.wake()
        table.wait(60)  # returns at once, or the test hangs a minute
    finally:
        table.close()


def test_futures_of_other_threads_complete_on_the_waiting_thread(tmp_path: Path) -> None:
    table = commands.Commands(ProcessTable())
    seen: list[threading.Thread] = []
    with ThreadPoolExecutor(2) as pool:
        futures = [table.hand_over(pool.submit(lambda n=n: OperationResult(success=n > 0)))
                   for n in range(4)]
        for future in futures:
            future.add_done_callback(lambda _: seen.append(threading.current_thread()))
        until_done(table, futures)
    table.close()
    assert seen == [threading.current_thread()] * 4
    assert [f.result().success for f in futures] == [False, True, True, True]


def test_the_local_executor_runs_commands_without_a_thread(tmp_path: Path) -> None:
    """Shell commands on posix_spawn's road and Templates take no thread of their own
    (spawning threads start the commands, so that the job's goes on meanwhile: at most one
    a slot, up to the cores); a command only Popen can start (a program found on PATH) and
    Python operations take the pool's, and their results too arrive on the job's thread."""
    before = set(threading.enumerate())  # (other tests' tables on this worker may linger)
    executor = LocalExecutor(2)
    futures = [executor.submit(request(tmp_path, "echo $UNFURL_WORKER", n)) for n in range(3)]
    futures.append(executor.submit(OperationRequest(
        task_id="T9", kind="Template", class_name="Template", target="n",
        operation="Standard.configure", inputs={"run": {"a": 1}})))
    started = [t.name for t in set(threading.enumerate()) - before
               if t.name.startswith("unfurl-")]
    assert set(started) == {"unfurl-spawn"} and len(started) <= 2  # none waits on a command
    futures.append(executor.submit(request(tmp_path, ["echo", "on", "PATH"], 10)))
    seen: list[threading.Thread] = []
    for future in futures:
        future.add_done_callback(lambda _: seen.append(threading.current_thread()))
    for _ in range(3000):
        if all(f.done() for f in futures):
            break
        executor.wait(0.2)
    executor.shutdown()
    assert [f.result().outputs.get("stdout") for f in futures[:3]] == ["local\n"] * 3
    assert futures[3].result().outputs == {"a": 1}
    assert futures[4].result().outputs["stdout"] == "on PATH\n"
    assert set(seen) == {threading.current_thread()}


def test_a_caller_waiting_on_a_future_alone_gets_its_result(tmp_path: Path) -> None:
    """The executor used alone (no job waiting in it): ``result()`` drives the commands."""
    executor = LocalExecutor(2)
    try:
        assert executor.submit(request(tmp_path, "echo alone")).result(timeout=60) \
            .outputs["stdout"] == "alone\n"
        assert executor.submit(request(tmp_path, ["echo", "pool"], 2)).result(timeout=60) \
            .outputs["stdout"] == "pool\n"
        assert executor.submit(request(tmp_path, "exit 4", 3)).exception(timeout=60) is None
    finally:
        executor.shutdown()

