"""kill -9 at random instants of a deploy, its record phase and its git commit (before
``git add``, between ``git add`` and ``git commit``, or leaving git to finish alone), then
resume: no secret is in any file or git object, and every task that succeeded is in the
committed jobs.tsv exactly once, with nothing left staged or untracked.

A seeded random loop (one test per seed), so a failure names the seed that reproduces it.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, Project, git, run_unfurl
from tests.execution_helpers import every_byte, kill9, wait_for

SEEDS = range(8)
REAL_GIT = shutil.which("git") or "git"


def ensemble_text(names: list[str], requires: dict[str, list[str]], marks: Path) -> str:
    lines = ["apiVersion: unfurl/v1alpha1", "kind: Ensemble", "spec:", "  service_template:",
             "    topology_template:", "      inputs:", "        token:",
             "          type: unfurl.datatypes.Sensitive",
             "          default: {eval: {get_env: TEST_KILL_SECRET}}",
             "      node_templates:"]
    for name in names:
        command = (f'date +%s%N >> {marks}/{name}.start; sleep 0.05; '
                   f'echo "{{{{ TOPOLOGY.inputs.token }}}}"; date +%s%N >> {marks}/{name}.end')
        lines += [f"        {name}:", "          type: tosca.nodes.Root"]
        if requires[name]:
            lines.append("          requirements:")
            lines += [f"            - dependency: {d}" for d in requires[name]]
        lines += ["          interfaces:", "            Standard:", "              operations:",
                  "                configure:",
                  "                  implementation: {className: Shell}",
                  "                  inputs:", f"                    command: '{command}'"]
    return "\n".join(lines) + "\n"


def git_wrapper(bin_dir: Path, marks: Path) -> None:
    """``git add`` and ``git commit`` announce themselves (their pid in a marker file) and
    wait a moment, so a kill can land exactly there."""
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in add|commit) echo $$ > {marks}/git-$1.tmp; '
        f'mv {marks}/git-$1.tmp {marks}/git-$1; sleep 0.2;; esac\n'
        f'exec {REAL_GIT} "$@"\n')
    script.chmod(0o755)


def random_project(tmp_path: Path, rng: random.Random, seed: int
                   ) -> tuple[Project, list[str], Path, str]:
    """A git project of 2 to 4 nodes with random dependencies, each printing a secret:
    (project, node names, marks folder, the secret)."""
    size = rng.randint(2, 4)
    names = [f"n{i}" for i in range(size)]
    requires = {names[j]: [names[i] for i in range(j) if rng.random() < 0.5]
                for j in range(size)}
    secret = f"s3cr3t-{seed}-{rng.getrandbits(48):x}"
    root = tmp_path / "project"
    root.mkdir()
    marks = tmp_path / "marks"
    marks.mkdir()
    project = Project(root)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / ".gitignore").write_text(".unfurl-lite.lock\n")
    project.write(ensemble_text(names, requires, marks))
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore")
    return project, names, marks, secret


def ok_lines(root: Path) -> dict[str, int]:
    committed = git(root, "show", "HEAD:jobs.tsv").splitlines()
    ids = [line.split("\t")[0] for line in committed]
    assert len(ids) == len(set(ids)), "a changeId is recorded twice"
    found: dict[str, int] = {}
    for line in committed:
        cells = dict(c.partition("=")[::2] for c in line.split("\t")[1:])
        if cells.get("status") == "ok" and cells.get("target"):
            target = cells["target"].removeprefix("::")
            found[target] = found.get(target, 0) + 1
    return found


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_kill_anywhere_then_resume_leaks_nothing_and_commits_once(tmp_path: Path,
                                                                  seed: int) -> None:
    rng = random.Random(seed)
    where = rng.choice(["time", "time", "git-add", "git-commit", "git-commit-alone"])
    project, names, marks, secret = random_project(tmp_path, rng, seed)
    root = project.root
    git_wrapper(tmp_path / "bin", marks)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_KILL_SECRET": secret}
    job_env = {**env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}

    job = subprocess.Popen([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                           cwd=root, env=job_env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if where == "time":
        time.sleep(rng.uniform(0.0, 1.5))  # a random instant: the point of this test
        kill9(job)
    else:
        marker = marks / ("git-add" if where == "git-add" else "git-commit")
        wait_for(lambda: marker.exists() or job.poll() is not None)
        kill9(job)
        if marker.exists() and where != "git-commit-alone":
            os.kill(int(marker.read_text()), signal.SIGKILL)  # before git itself ran

    for _ in range(4):
        resumed = run_unfurl(root, "resume", env=env)
        assert "Traceback" not in resumed.stderr, resumed.stderr
        if resumed.returncode == 1 and "no failed, cancelled or killed job" in resumed.stderr:
            break
        assert resumed.returncode in (0, 64), resumed.stdout + resumed.stderr
    final = run_unfurl(root, "deploy", "--approve", env=env)
    assert final.returncode == 0, (where, final.stdout + final.stderr)

    assert {n: r["readyState"]["local"] for n, r in project.status().items()} == {
        n: "ok" for n in names}
    assert git(root, "status", "--porcelain", "--untracked-files=all").strip() == "", where
    assert ok_lines(root) == {n: 1 for n in names}, where
    assert secret.encode() not in every_byte(root), where


def recording_wrapper(bin_dir: Path, marks: Path) -> None:
    """git announces (and lingers after) the commit of a killed job's record, so a kill
    can land right after ``Recording interrupted job``."""
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'{REAL_GIT} "$@"; code=$?\n'
        'case "$*" in *"Recording interrupted job"*) '
        f'touch {marks}/recorded; sleep 0.3;; esac\n'
        "exit $code\n")
    script.chmod(0o755)


def temp_files(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*.tmp")
            if ".git" not in p.relative_to(root).parts]


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_after_any_kills_plain_resume_twice_at_most_finishes(tmp_path: Path, seed: int) -> None:
    """kill -9 the deploy, then kill the resume too (at a random instant, or right after
    it committed the killed job's record), maybe a third time; then plain ``unfurl
    resume`` at most twice reaches what an uninterrupted deploy leaves, every succeeded
    task once in jobs.tsv, no temp file and no secret anywhere."""
    rng = random.Random(1000 + seed)
    project, names, marks, secret = random_project(tmp_path, rng, seed)
    root = project.root
    recording_wrapper(tmp_path / "bin", marks)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_KILL_SECRET": secret,
           "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "unfurl_lite", *args], cwd=root, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    job = start("deploy", "--approve")
    wait_for(lambda: (marks / f"{names[0]}.start").exists() or job.poll() is not None)
    time.sleep(rng.uniform(0.0, 0.6))
    kill9(job)
    for _ in range(rng.randint(1, 2)):  # kill the resume too, once or twice
        (marks / "recorded").unlink(missing_ok=True)
        resume = start("resume", *rng.choice([(), ("--force",)]))
        if rng.random() < 0.5:
            wait_for(lambda r=resume: (marks / "recorded").exists() or r.poll() is not None)
        else:
            time.sleep(rng.uniform(0.0, 1.0))
        kill9(resume)

    status = run_unfurl(root, "status", env=env)
    assert "Traceback" not in status.stderr, status.stderr
    for _ in range(2):  # plain resume, twice at most
        resumed = run_unfurl(root, "resume", env=env)
        assert "Traceback" not in resumed.stderr, resumed.stderr
        if resumed.returncode == 1 and "no failed, cancelled or killed job" in resumed.stderr:
            assert run_unfurl(root, "deploy", "--approve", env=env).returncode == 0
            break
        assert resumed.returncode in (0, 64), resumed.stdout + resumed.stderr
        if resumed.returncode == 0:
            break
    else:
        raise AssertionError(f"two plain resumes did not finish the job: {resumed.stderr}")

    assert {n: r["readyState"]["local"] for n, r in project.status().items()} == {
        n: "ok" for n in names}
    assert "Nothing to do" in run_unfurl(root, "deploy", "--approve", env=env).stdout
    assert temp_files(root) == []
    assert git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
    assert ok_lines(root) == {n: 1 for n in names}
    assert secret.encode() not in every_byte(root)
