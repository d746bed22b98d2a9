"""A resumed job redacts what the job it resumes derived from secrets (issue 26 §4): the
journal keeps keyed digests of those values, never the values, so output of a task that
``resume --force`` runs again is redacted as an uninterrupted run redacts it."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT, Project, ensemble_yaml, git, run_unfurl
from tests.execution_helpers import every_byte, kill9, wait_for

SECRET = "s3cr3t-value-xyz-42"
DERIVED = SECRET[4:]  # a slice: none of the secret's forms, a secret of the job once derived

SPEC = """\
a:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create: "echo '{{ TOPOLOGY.inputs.pw[4:] }}' > marks/derived"
b:
  type: tosca.nodes.Root
  requirements: [dependency: a]
  interfaces:
    Standard:
      create: >-
        cat marks/derived; touch marks/b.started;
        while [ ! -f marks/release ]; do sleep 0.05; done
"""


def write_project(project: Project) -> None:
    text = ensemble_yaml(SPEC).replace("      node_templates:", (
        "      inputs:\n        pw:\n          type: unfurl.datatypes.Sensitive\n"
        "          default: {eval: {get_env: TEST_PW}}\n      node_templates:"))
    (project.root / ".gitignore").write_text("marks/\n.unfurl-lite.lock\n")
    git(project.root, "add", ".gitignore")
    (project.root / "marks").mkdir()
    project.write(text)


@pytest.mark.slow
def test_uninterrupted_run_redacts_the_derived_value(project: Project) -> None:
    write_project(project)
    (project.root / "marks" / "release").touch()
    result = run_unfurl(project.root, "deploy", "--approve", env={"TEST_PW": SECRET})
    assert result.returncode == 0, result.stderr
    assert DERIVED.encode() not in every_byte(project.root)
    assert "<<REDACTED>>" in (project.root / "jobs.tsv").read_text() + "".join(
        p.read_text() for p in (project.root / "jobs").glob("job*.yaml"))


@pytest.mark.slow
def test_resume_force_after_kill_redacts_what_the_killed_job_derived(project: Project) -> None:
    write_project(project)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_PW": SECRET}
    import sys

    job = subprocess.Popen([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                           cwd=project.root, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (project.root / "marks" / "b.started").exists(), job)
    kill9(job)
    (project.root / "marks" / "release").touch()
    journal = next((project.root / "jobs").glob("journal*.yaml")).read_text()
    assert "secretDigests" in journal and DERIVED not in journal

    resumed = run_unfurl(project.root, "resume", "--force", env={"TEST_PW": SECRET})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert project.local("b") == "ok"
    job_files = "".join(p.read_text() for p in (project.root / "jobs").glob("job*.yaml"))
    assert "<<REDACTED>>" in job_files  # b's output, re-run by the resumed job
    assert DERIVED.encode() not in every_byte(project.root)
