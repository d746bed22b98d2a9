"""`unfurl serve` as a user starts it: the URL it prints, the warning off loopback, the
browser it opens, and clear errors."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, Project, run_in_process
from tests.view.dashboard_helpers import ENSEMBLE


def _as_from_a_terminal() -> None:
    """Ctrl-C's default, as a terminal gives it: a test run started in the background by
    a shell inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve(project: Project, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "unfurl_lite", "serve", *args], cwd=project.root,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal)


def url_of(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert " at http://" in line, line
    return line.split(" at ", 1)[1].split()[0]


def answered(url: str) -> None:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200


def stop(process: subprocess.Popen[str], signum: int = signal.SIGINT) -> tuple[str, str]:
    process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Stopped." in err
    return out, err


def test_port_zero_picks_a_free_port_and_prints_the_url(project):
    project.write(ENSEMBLE)
    process = serve(project, "--port", "0", "--no-browser")
    try:
        url = url_of(process)
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
        with urllib.request.urlopen(url + "history", timeout=30) as response:
            assert response.status == 200
    finally:
        _, err = stop(process)
    assert "warning" not in err


def test_sigterm_stops_it_as_ctrl_c_does(project):
    """What systemd, docker or a script's kill sends: a clean stop, exit 0."""
    project.write(ENSEMBLE)
    process = serve(project, "--port", "0", "--no-browser")
    answered(url_of(process))
    stop(process, signal.SIGTERM)


@pytest.mark.parametrize("flag", ["--host", "--address"])
def test_another_host_warns_on_stderr(project, flag):
    """The warning comes before the bind, so the test needs no public socket: 192.0.2.1
    (TEST-NET-1) is no address of this machine, and the bind fails after the warning."""
    project.write(ENSEMBLE)
    result = run_in_process(project.root, "serve", "--port", "0", flag, "192.0.2.1",
                            "--no-browser")
    assert "warning: listening on 192.0.2.1, not loopback" in result.stderr
    assert result.returncode == 1 and "cannot listen on 192.0.2.1" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_browser_is_opened_unless_no_browser(project, tmp_path):
    project.write(ENSEMBLE)
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    process = serve(project, "--port", "0", env={"BROWSER": str(browser)})
    try:
        url = url_of(process)
        answered(url)  # serving: the browser was opened before
    finally:
        stop(process)
    assert opened.read_text().strip() == url
    opened.unlink()
    process = serve(project, "--port", "0", "--no-browser", env={"BROWSER": str(browser)})
    try:
        answered(url_of(process))
    finally:
        stop(process)
    assert not opened.exists()


def test_a_port_in_use_is_a_clear_error(project):
    project.write(ENSEMBLE)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_in_process(project.root, "serve", "--port", str(port), "--no-browser")
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr


def test_a_missing_ensemble_exits_1(tmp_path: Path):
    result = run_in_process(tmp_path, "serve", "--no-browser", "-e", "nosuch.yaml")
    assert result.returncode == 1 and "ensemble not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_is_in_the_help():
    result = run_in_process(ROOT, "--help")
    assert "serve" in result.stdout and "dashboard" in result.stdout
