"""Unfurl 1.2.0 reads what we write (needs Unfurl 1.2.0 in its own virtualenv)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import REFERENCE, unfurl120

UNFURL = unfurl120()

pytestmark = [
    pytest.mark.unfurl120,
    pytest.mark.skipif(not UNFURL.exists(),
                       reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0"),
]


def unfurl(project, *args):
    proc = subprocess.run(
        [str(UNFURL), "--home", "", *args],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    proc.stdout = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    return proc


def test_unfurl_status_reads_our_deploy_and_undeploy(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    proc = unfurl(project, "status", "ensemble.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "NodeInstance('db') ok created" in proc.stdout
    assert "NodeInstance('app') ok configured" in proc.stdout
    assert invoke("undeploy", "--approve").exit_code == 0
    proc = unfurl(project, "status", "ensemble.yaml")
    assert proc.returncode == 0, proc.stderr


def test_unfurl_can_continue_from_our_deploy(project, invoke):
    """Unfurl's own deploy after ours finds nothing to do: it trusts our status."""
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    proc = unfurl(project, "deploy", "--approve", "--dirty=ok", "--commit", "ensemble.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "(0 changed, 0 ok, 0 failed" in proc.stdout
