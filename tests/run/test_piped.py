"""The Shell operation's raw-pipe road reads back what ``subprocess.Popen`` would: the same
text from the same bytes, the same exit codes, timeouts that keep what was read, a
command a kill-cancel can wait for from another thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from unfurl_lite.run.operations import piped
from unfurl_lite.run.operations.processes import ProcessTable, kill

pytestmark = pytest.mark.skipif(not piped.available(), reason="Linux's libc")

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def _octal(data: bytes) -> str:
    return "".join(f"\\{byte:03o}" for byte in data)


def _command(out: bytes, err: bytes, code: int) -> bytes:
    return (f"printf '{_octal(out)}'; printf '{_octal(err)}' >&2; exit {code}").encode()


def _ours(command: bytes, cwd: Path, timeout: float | None = 30) -> tuple[str, str, int]:
    child = piped.start(b"/bin/sh", [b"/bin/sh", b"-c", command], piped.environment(ENV),
                        str(cwd))
    out, err = child.communicate(timeout=timeout)
    return out, err, child.wait()


def _theirs(command: bytes, cwd: Path) -> tuple[str, str, int]:
    process = subprocess.Popen(command, shell=True, cwd=cwd, env=ENV,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, encoding="utf-8",
                               errors="backslashreplace", start_new_session=True)
    out, err = process.communicate(timeout=30)
    return out, err, process.returncode


#: bytes that stress the decoding: newlines of three kinds, invalid and multibyte UTF-8
SPICY = st.sampled_from([b"\r\n", b"\r", b"\n", b"\xff", b"\xc3", b"\xc3\xa9", b"\xe2\x82",
                         b"\xe2\x82\xac", b"\x1b[31m", b"\x00", b"a", b" "])


@settings(max_examples=30)
@given(out=st.lists(SPICY | st.binary(max_size=4), max_size=12).map(b"".join),
       err=st.lists(SPICY, max_size=6).map(b"".join),
       code=st.sampled_from([0, 1, 2, 75, 127, 255]))
def test_output_and_exit_code_read_as_popen_reads_them(
        tmp_path_factory: pytest.TempPathFactory, out: bytes, err: bytes, code: int) -> None:
    where = tmp_path_factory.mktemp("cwd")
    command = _command(out, err, code)
    assert _ours(command, where) == _theirs(command, where)


def test_long_output_on_both_pipes_does_not_deadlock(tmp_path: Path) -> None:
    command = b"head -c 300000 /dev/zero | tr '\\0' a; head -c 200000 /dev/zero | tr '\\0' b >&2"
    out, err, code = _ours(command, tmp_path)
    assert (len(out), len(err), code) == (300000, 200000, 0)
    assert set(out) == {"a"} and set(err) == {"b"}


def test_a_signal_is_a_negative_exit_code(tmp_path: Path) -> None:
    assert _ours(b"kill -TERM $$", tmp_path)[2] == -signal.SIGTERM


def test_a_timeout_keeps_what_was_read_and_the_group_is_killed(tmp_path: Path) -> None:
    child = piped.start(b"/bin/sh", [b"/bin/sh", b"-c", b"echo early; sleep 30 & sleep 30"],
                        piped.environment(ENV), str(tmp_path))
    with pytest.raises(subprocess.TimeoutExpired):  # a second: "early" said, even under load
        child.communicate(timeout=1.0)
    kill(child, grace=5)
    out, err = child.communicate()
    assert (out, err, child.wait()) == ("early\n", "", -signal.SIGTERM)


def test_a_kill_cancel_waits_on_another_thread(tmp_path: Path) -> None:
    """The operation's thread reads and reaps while the cancel's thread kills and waits:
    the exit code is the same on both sides and neither hangs."""
    table = ProcessTable()
    child = piped.start(b"/bin/sh", [b"/bin/sh", b"-c", b"echo go; : > said; exec sleep 30"],
                        piped.environment(ENV), str(tmp_path))
    outcome: list[tuple[str, str, int]] = []

    def operation() -> None:
        with table.running("task", child):
            out, err = child.communicate()
            outcome.append((out, err, child.wait()))

    thread = threading.Thread(target=operation)
    thread.start()
    while not table.task_ids() or not (tmp_path / "said").exists():
        threading.Event().wait(0.01)
    assert table.terminate_all(grace=5) == ["task"]
    thread.join(timeout=30)
    assert outcome == [("go\n", "", -signal.SIGTERM)]
    assert child.wait(timeout=1) == -signal.SIGTERM


def test_refused_as_subprocess_refuses(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="embedded null byte"):
        piped.start(b"/bin/sh", [b"/bin/sh", b"-c", b"echo a\0b"], [], str(tmp_path))
    with pytest.raises(ValueError, match="illegal environment variable name"):
        piped.environment({"A=B": "c"})
    missing = tmp_path / "gone"
    with pytest.raises(FileNotFoundError) as ours:
        piped.start(b"/bin/sh", [b"/bin/sh", b"-c", b"true"], [], str(missing))
    with pytest.raises(FileNotFoundError) as theirs:
        subprocess.Popen(["/bin/sh", "-c", "true"], cwd=str(missing), env={})
    assert str(ours.value) == str(theirs.value)


def test_no_descriptor_is_left_open(tmp_path: Path) -> None:
    before = set(os.listdir("/proc/self/fd"))
    for command in (b"echo out; echo err >&2", b"exit 3"):
        _ours(command, tmp_path)
    with pytest.raises(OSError):
        piped.start(b"/nonexistent/sh", [b"/nonexistent/sh"], [], str(tmp_path))
    piped.start(b"/bin/true", [b"/bin/true"], [], str(tmp_path)).communicate(timeout=30)
    assert set(os.listdir("/proc/self/fd")) - before <= {str(piped._devnull())}


def test_stdin_is_empty(tmp_path: Path) -> None:
    assert _ours(b"cat; echo done", tmp_path) == ("done\n", "", 0)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux")
def test_the_command_leads_a_session_of_its_own(tmp_path: Path) -> None:
    out, _, _ = _ours(b'echo "$(($(cut -d" " -f6 /proc/$$/stat) == $$))"', tmp_path)
    assert out == "1\n"


@given(st.lists(st.tuples(
    st.text(st.characters(blacklist_characters="=\0", blacklist_categories=["Cs"]), min_size=1),
    st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]))),
    max_size=8))
@settings(max_examples=examples(100))
def test_environment_entries_are_the_encoded_pairs(pairs: list[tuple[str, str]]) -> None:
    """Entries remembered from earlier commands are the bytes encoding would give now,
    surrogate escapes (undecodable bytes the environment held) included, in order."""
    env = dict(pairs)
    expected = [f"{k}={v}".encode("utf-8", "surrogateescape") for k, v in env.items()]
    assert piped.environment(env) == expected
    assert piped.environment(env) == expected  # again, from what was remembered
    assert piped.environment({"RAW": "caf\udce9"}) == [b"RAW=caf\xe9"]  # a byte kept as read
    with pytest.raises(UnicodeEncodeError):  # a ValueError: the command is not started
        piped.environment({"BAD": "\ud800"})


def test_environment_entries_stay_bounded() -> None:
    for number in range(piped._ENTRIES_KEPT * 2):
        assert piped.environment({"UNFURL_CHANGEID": str(number)}) == [
            f"UNFURL_CHANGEID={number}".encode()]
    assert len(piped._ENTRIES) <= piped._ENTRIES_KEPT
