"""A job with nothing to do after a killed job: its plan was made from records the killed
job had not finished writing (a killed undeploy's deletions are not in the ensemble yet),
so it is refused with the stale lock's advice, as a job with tasks is, whether the plan is
made afresh or remembered."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import ensemble_yaml, shell_node
from unfurl_lite.record import lock


def _killed_job_left_its_lock(root) -> None:
    process = subprocess.Popen(["true"])
    process.wait()
    path = lock.acquire(root / "ensemble.yaml", "undeploy")
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "pid": process.pid, "changeId": "A6BQHgjP0000"}))


@pytest.mark.parametrize("cache", ["remembered", "off"])
def test_nothing_to_do_after_a_killed_job_is_refused(project, invoke, monkeypatch,
                                                     tmp_path, cache):
    monkeypatch.setenv("UNFURL_LITE_CACHE", str(tmp_path / "cache") if cache != "off" else "off")
    project.write(ensemble_yaml(shell_node("app", "echo app")))
    assert invoke("deploy", "--approve").exit_code == 0
    assert "Nothing to do." in invoke("deploy", "--approve").output
    _killed_job_left_its_lock(project.root)

    refused = invoke("deploy", "--approve")
    assert refused.exit_code == 1
    assert "stale lock" in refused.output and "job A6BQHgjP0000 (undeploy" in refused.output
    assert "unfurl resume" in refused.output
    assert "Nothing to do." not in refused.output

    dry = invoke("deploy", "--approve", "--dryrun")  # a dry run records nothing: it may go on
    assert dry.exit_code == 0, dry.output
