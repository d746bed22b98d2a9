"""Commands started through posix_spawn (outside the GIL) get exactly what subprocess
gives them: the same working directory, environment, descriptors, session and signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unfurl_lite.run.operations import spawn

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's libc")

#: what a command can see of how it was started
PROBE = (
    'pwd; echo "env=$(env | LC_ALL=C sort | tr "\\n" " ")"; '
    'for fd in /proc/$$/fd/*; do printf "%s " "${fd##*/}"; done; echo; '
    'read line; echo "stdin=$? $line"; '
    'echo "session=$(($(cut -d" " -f6 /proc/$$/stat) == $$))"; echo err >&2; '
    'exec grep -E "^(SigIgn|SigBlk)" /proc/self/status'  # the process that was started
)


def _run(kind: type[subprocess.Popen], command: bytes, cwd: Path, env: dict[bytes, bytes],
         session: bool = True) -> tuple[str, str, int]:
    process = kind(command, shell=True, executable="/bin/sh", cwd=cwd, env=env,
                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, start_new_session=session)
    out, err = process.communicate(timeout=30)
    return out, err, process.returncode


def _signals_aside(outcome: tuple[str, str, int]) -> tuple[str, str, int]:
    """The outcome without the signal mask (see below), and without glibc's two internal
    signals, which its posix_spawn may leave ignored in the child (32 and 33)."""
    out, err, code = outcome
    lines = [line if not line.startswith("SigIgn:") else
             f"SigIgn:\t{int(line.split()[1], 16) & ~(0b11 << 31):016x}"
             for line in out.split("\n") if not line.startswith("SigBlk:")]
    return "\n".join(lines), err, code


def _mask(outcome: tuple[str, str, int]) -> int:
    line = next(line for line in outcome[0].splitlines() if line.startswith("SigBlk:"))
    return int(line.split()[1], 16)


def test_glibc_starts_commands_outside_the_gil() -> None:
    assert spawn.available()


@settings(max_examples=20)
@given(
    env=st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True),
                        st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF),
                                max_size=12), max_size=4),
    session=st.booleans(),
)
def test_a_command_sees_what_subprocess_would_give_it(
        tmp_path_factory: pytest.TempPathFactory, env: dict[str, str], session: bool) -> None:
    where = tmp_path_factory.mktemp("cwd")
    encoded = {k.encode(): v.encode() for k, v in {"PATH": "/usr/bin:/bin", **env}.items()}
    ours = _run(spawn.Popen, PROBE.encode(), where, encoded, session)
    theirs = _run(subprocess.Popen, PROBE.encode(), where, encoded, session)
    assert _signals_aside(ours) == _signals_aside(theirs)
    # the calling thread's mask, as a command started from the job's threads has it
    # (subprocess's vfork may hand its child its all-blocked mask of the moment instead)
    assert _mask(ours) == sum(1 << (n - 1) for n in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    assert ours[2] == 0 and ours[1] == "err\n"
    assert ours[0].split("\n")[2].split() == ["0", "1", "2", "3"]  # 3: the glob's own


def test_starts_in_a_row_each_get_their_own_directory_environment_and_command(
        tmp_path: Path) -> None:
    """What a thread's starts build once and use again (file actions, the command, the
    environment's array) never hands one start what an earlier one asked for."""
    places = [tmp_path / name for name in ("a", "b")]
    for place in places:
        place.mkdir()
    seen = []
    for number in range(6):
        where = places[number % 2]
        env = {b"PATH": b"/usr/bin:/bin", b"N": str(number).encode(), b"SAME": b"x"}
        if number == 4:
            env[b"EXTRA"] = b"y"  # an environment of another length
        command = f"echo {number} $N $EXTRA $(pwd)".encode() if number % 3 else b"echo $N $(pwd)"
        out, _, code = _run(spawn.Popen, command, where, env)
        assert code == 0
        seen.append(out.split())
    assert seen == [
        ["0", str(places[0])], ["1", "1", str(places[1])], ["2", "2", str(places[0])],
        ["3", str(places[1])], ["4", "4", "y", str(places[0])], ["5", "5", str(places[1])]]


def test_descriptors_of_the_job_do_not_reach_the_command(tmp_path: Path) -> None:
    keep = os.open(tmp_path, os.O_RDONLY)
    os.set_inheritable(keep, True)  # even one the job made inheritable
    try:
        out, _, code = _run(spawn.Popen, f"test -e /proc/self/fd/{keep} || echo closed".encode(),
                            tmp_path, {b"PATH": b"/usr/bin:/bin"})
    finally:
        os.close(keep)
    assert (out, code) == ("closed\n", 0)


def test_sigpipe_ends_a_writer_as_in_a_shell(tmp_path: Path) -> None:
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # Python's own setting
    # with SIGPIPE ignored, ``yes`` would complain of a write error on stderr
    out, err, code = _run(spawn.Popen, b"yes | head -c 5", tmp_path, {b"PATH": b"/usr/bin:/bin"})
    assert (out, err, code) == ("y\ny\ny", "", 0)


def test_a_missing_directory_is_named_as_subprocess_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    with pytest.raises(FileNotFoundError) as ours:
        _run(spawn.Popen, b"true", missing, {})
    with pytest.raises(FileNotFoundError) as theirs:
        _run(subprocess.Popen, b"true", missing, {})
    assert str(ours.value) == str(theirs.value)


def test_a_program_found_on_path_takes_subprocess_road(tmp_path: Path) -> None:
    process = spawn.Popen(["echo", "hi"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    assert process.communicate(timeout=30) == ("hi\n", None)


def test_a_timed_out_command_is_killed_with_its_group(tmp_path: Path) -> None:
    process = spawn.Popen(b"sleep 30 & sleep 30", shell=True, executable="/bin/sh",
                          cwd=tmp_path, env={b"PATH": b"/usr/bin:/bin"},
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True)
    with pytest.raises(subprocess.TimeoutExpired):
        process.communicate(timeout=0.2)
    os.killpg(process.pid, signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
