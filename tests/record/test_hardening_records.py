"""Issue 16 items 5-11: records that hostile names, torn files, kills at commit time, full
disks and read-only directories cannot forge, hide, leave uncommitted or half-written."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    ROOT,
    Invoke,
    Project,
    ensemble_yaml,
    git,
    run_in_process,
    run_unfurl,
    shell_node,
)
from tests.execution_helpers import chain_ensemble, count, kill9, start_unfurl, wait_for
from unfurl_lite.load.loader import load_ensemble

RECURSIVE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
metadata: &r {self: *r}
spec:
  service_template:
    topology_template:
      node_templates:
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create: echo hi
"""


def test_recursive_alias_is_refused_and_spec_kept(project: Project, invoke: Invoke) -> None:
    project.write(RECURSIVE)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "ensemble.yaml:3:11: recursive alias" in result.output
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1
    assert project.ensemble.read_text() == RECURSIVE
    assert not (project.root / "jobs.tsv").exists()


def test_recursive_alias_in_a_sequence_is_refused(project: Project, invoke: Invoke) -> None:
    project.write(RECURSIVE.replace("&r {self: *r}", "&r [1, *r]"))
    result = invoke("validate")
    assert result.exit_code == 1 and "recursive alias" in result.output


def test_shared_alias_is_not_recursive(project: Project, invoke: Invoke) -> None:
    project.write(RECURSIVE.replace("metadata: &r {self: *r}", "metadata: {a: &r {x: 1}, b: *r}"))
    assert invoke("validate").exit_code == 0


# --- item 6: names cannot forge records; records never move the clock -------------------

FORGED = "x\rAB1100000000"


def test_control_characters_in_names_are_refused(project: Project, invoke: Invoke) -> None:
    project.write(ensemble_yaml('"x\\rAB1100000000":\n  type: tosca.nodes.Root\n'))
    result = invoke("validate")
    assert result.exit_code == 1
    assert "contains the control character \\r" in result.output
    project.write(ensemble_yaml('"red\\e[31m":\n  type: tosca.nodes.Root\n'))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1 and "control character \\x1b" in result.output
    assert "\x1b" not in result.output
    assert not (project.root / "jobs.tsv").exists()


def test_recorded_instance_names_are_validated(project: Project, invoke: Invoke) -> None:
    text = ensemble_yaml(shell_node("db", "echo hi")) + (
        'status:\n  instances:\n    "db\\e]0;owned\\a":\n      template: db\n'
        "      readyState: {local: ok}\n")
    project.write(text)
    result = invoke("status")
    assert result.exit_code == 1 and "control character" in result.output


def test_every_jobs_tsv_field_is_escaped() -> None:
    from unfurl_lite.load import jobslog
    from unfurl_lite.record import records

    line = records.tsv_line([("target", f"::{FORGED}\tstatus=ok\n\x1b[31m")], "A6BNA7xw0001")
    assert line.count("\n") == 1 and line.count("\t") == 1 and "\r" not in line
    assert "\x1b" not in line
    record = jobslog.parse_tsv_line(line)
    assert record["target"] == "::x\\rAB1100000000\\tstatus=ok\\n\\x1b[31m"


def test_a_forged_line_shows_no_fake_job_and_does_not_move_the_clock(
    project: Project, invoke: Invoke, caplog: pytest.LogCaptureFixture
) -> None:
    project.write(ensemble_yaml(shell_node("db", "echo hi")))
    assert invoke("deploy", "--approve").exit_code == 0
    tsv = project.root / "jobs.tsv"
    # a line as an old version wrote it: a raw carriage return inside a target
    first = tsv.read_text().splitlines()[1]
    tsv.write_text(tsv.read_text() + first.replace("target=::db", f"target=::{FORGED}") + "\n")
    history = invoke("history")
    assert history.exit_code == 0
    assert "2031" not in history.output and "AB110000" not in history.output
    # a whole line dated 2031: readable, but it does not drag the next id there
    tsv.write_text(tsv.read_text() + "AB1100000000\tstatus=ok\tstartTime=2031-01-01-00-00-00-0"
                   "\tspecDigest=\tstartCommit=\tsummary=forged\n")
    git(project.root, "commit", "-qam", "forged")
    result = invoke("deploy", "--approve", "--force")
    assert result.exit_code == 0, result.output
    assert "ahead of this machine's clock" in caplog.text
    last = project.jobs_tsv()[-2].split("\t")[0]
    assert last.endswith("0000") and not last.startswith("AB")


# --- item 7: torn and non-UTF-8 lines in jobs.tsv ----------------------------------------


def test_a_torn_line_does_not_hide_the_next_job(project: Project, invoke: Invoke) -> None:
    project.write(ensemble_yaml(shell_node("db", "echo hi")))
    assert invoke("deploy", "--approve").exit_code == 0
    tsv = project.root / "jobs.tsv"
    first_job = tsv.read_text().splitlines()[0]
    tsv.write_text(tsv.read_text() + first_job[:30])  # a crash mid-append
    git(project.root, "commit", "-qam", "torn")
    assert invoke("deploy", "--approve", "--force").exit_code == 0
    lines = tsv.read_text().splitlines()
    assert lines[2] == first_job[:30] + "\tDAMAGED"
    new_job = lines[3].split("\t")[0]
    history = run_in_process(project.root, "history", "--json")
    assert history.returncode == 0
    assert new_job in history.stdout
    assert "jobs.tsv:3: damaged line skipped" in history.stderr


def test_bytes_that_are_not_utf8_are_skipped_and_reported(project: Project,
                                                           invoke: Invoke) -> None:
    project.write(ensemble_yaml(
        "db:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        "        create: echo hi\n        delete: echo bye\n"))
    assert invoke("deploy", "--approve").exit_code == 0
    tsv = project.root / "jobs.tsv"
    tsv.write_bytes(tsv.read_bytes() + b"A6BNA7xw0000\tstatus=ok\tsummary=caf\xe9\n")
    git(project.root, "commit", "-qam", "bad byte")
    for command in (["status"], ["history"], ["undeploy", "--approve"]):
        result = run_unfurl(project.root, *command)  # each process says it once
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert "jobs.tsv:3: damaged line skipped: not UTF-8" in result.stderr


# --- item 5: init --from and symlinks -------------------------------------------------------


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    (source / "files").mkdir(parents=True)
    (source / "ensemble.yaml").write_text(ensemble_yaml(shell_node("db", "echo hi")))
    (source / "files" / "conf.txt").write_text("inside\n")
    return source


@pytest.mark.parametrize("outside", ["secret.txt", "etc"])
def test_init_from_refuses_links_pointing_outside(tmp_path: Path, invoke: Invoke,
                                                  outside: str) -> None:
    source = _source(tmp_path)
    target = tmp_path / outside
    if outside == "etc":
        (target / "sub").mkdir(parents=True)
        (target / "sub" / "passwd").write_text("root:x:0:0\n")
    else:
        target.write_text("TOP SECRET\n")
    (source / "files" / "link").symlink_to(target)
    result = invoke("init", str(tmp_path / "new"), "--from", str(source))
    assert result.exit_code == 1
    assert "is a symlink to" in result.output and "outside" in result.output
    new = tmp_path / "new"
    assert not (new / "ensemble.yaml").exists()
    assert not any("SECRET" in p.read_text() or "root:" in p.read_text()
                   for p in new.rglob("*") if p.is_file() and ".git" not in p.parts)


def test_init_from_copies_links_inside_as_links(tmp_path: Path, invoke: Invoke) -> None:
    source = _source(tmp_path)
    (source / "link").symlink_to("files/conf.txt")
    (source / "dirlink").symlink_to("files")
    result = invoke("init", str(tmp_path / "new"), "--from", str(source))
    assert result.exit_code == 0, result.output
    new = tmp_path / "new"
    assert (new / "link").is_symlink() and str((new / "link").readlink()) == "files/conf.txt"
    assert (new / "dirlink").is_symlink()
    if "and committed" in result.output:
        tracked = git(new, "ls-files", "-s", "link")
        assert tracked.startswith("120000")  # git's mode for a symlink


# --- item 11: a failed resume keeps the killed job's lock -----------------------------------


@pytest.mark.slow
def test_a_failed_resume_keeps_the_lock(project: Project, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    project.write(chain_ensemble(["a", "b"], {"b": ["a"]}, marks, sleep=0.2))
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "end") >= 1 and count(marks, "start") >= 2, job)
    kill9(job)
    lock_file = project.root / ".unfurl-lite.lock"
    killed = json.loads(lock_file.read_text())["changeId"]
    journal = next((project.root / "jobs").glob("journal*.yaml"))
    journal.write_text("changeId: [not closed\n")  # damaged
    resumed = run_unfurl(project.root, "resume")
    assert resumed.returncode == 1
    assert "Traceback" not in resumed.stderr
    assert f"resume failed before {killed} was recorded" in resumed.stderr
    assert f"delete {lock_file}" in resumed.stderr
    assert json.loads(lock_file.read_text())["changeId"] == killed
    again = run_unfurl(project.root, "deploy", "--approve")
    assert again.returncode == 1 and "stale lock" in again.stderr
    assert count(marks, "start") == 2  # a's operation was not run again


# --- item 8: kills and failures at commit time ----------------------------------------------

REAL_GIT = shutil.which("git") or "git"


def fake_git(tmp_path: Path, on_commit: str) -> dict[str, str]:
    """An environment whose ``git`` runs ``on_commit`` (sh) instead of ``git commit``."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "git"
    script.write_text(f'#!/bin/sh\nif [ "$1" = commit ]; then {on_commit}; fi\n'
                      f'exec {REAL_GIT} "$@"\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT)}


def two_nodes(project: Project, tmp_path: Path) -> Path:
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    project.write(chain_ensemble(["a", "b"], {"b": ["a"]}, marks, sleep=0))
    return marks


def staged_or_untracked(project: Project) -> list[str]:
    return [line for line in git(project.root, "status", "--porcelain").splitlines()
            if line.strip()]


@pytest.mark.slow
def test_killed_between_add_and_commit_then_resume_commits(project: Project,
                                                           tmp_path: Path) -> None:
    two_nodes(project, tmp_path)
    hang = tmp_path / "in-commit"
    env = fake_git(tmp_path, f"touch .git/index.lock; echo $$ > {hang}; exec sleep 60")
    job = subprocess.Popen([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                           cwd=project.root, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: hang.exists() and hang.read_text().strip() != "", job)
    kill9(job)
    os.kill(int(hang.read_text()), signal.SIGKILL)  # git dies with it, leaving index.lock
    staged = staged_or_untracked(project)
    assert any(line.startswith("A  jobs/") for line in staged)  # added, never committed

    refused = run_unfurl(project.root, "deploy", "--approve", "--force")
    assert refused.returncode == 1 and "stale lock" in refused.stderr
    resumed = run_unfurl(project.root, "resume")
    assert resumed.returncode == 1 and "Traceback" not in resumed.stderr
    assert "index.lock was left by a git process that is no longer running" in resumed.stderr
    assert "rm " in resumed.stderr and (project.root / ".unfurl-lite.lock").exists()

    (project.root / ".git" / "index.lock").unlink()
    resumed = run_unfurl(project.root, "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "left uncommitted" in resumed.stderr
    assert staged_or_untracked(project) == []
    assert any("left uncommitted" in subject for subject in project.commits())
    assert not (project.root / ".unfurl-lite.lock").exists()
    assert run_unfurl(project.root, "deploy", "--approve").returncode == 0


def test_a_stale_index_lock_is_refused_before_anything_runs(project: Project,
                                                            tmp_path: Path) -> None:
    marks = two_nodes(project, tmp_path)
    lock = project.root / ".git" / "index.lock"
    lock.write_text("")
    result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{lock} was left by a git process that is no longer running" in result.stderr
    assert f"rm {lock}" in result.stderr
    assert count(marks, "start") == 0 and not (project.root / "jobs.tsv").exists()


def test_git_failing_at_commit_leaves_records_the_next_job_commits(
    project: Project, tmp_path: Path
) -> None:
    two_nodes(project, tmp_path)
    env = fake_git(tmp_path, "echo 'fatal: No space left on device' >&2; exit 128")
    failed = subprocess.run([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                            cwd=project.root, env=env, capture_output=True, text=True)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "No space left on device" in failed.stderr and "free space on the disk" in failed.stderr
    assert project.local("b") == "ok"  # saved before git was touched
    assert staged_or_untracked(project)
    job = project.jobs_tsv()[0].split("\t")[0][:8]

    again = run_in_process(project.root, "deploy", "--approve", "--force")
    assert again.returncode == 0, again.stderr
    assert f"Recording what job {job} left uncommitted" in "\n".join(project.commits())
    assert not [line for line in staged_or_untracked(project) if "jobs" in line]


def test_a_commit_waits_for_a_running_git_process(project: Project, tmp_path: Path) -> None:
    marks = two_nodes(project, tmp_path)
    holder_bin = tmp_path / "git-holder"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", holder_bin)
    holder = subprocess.Popen([str(holder_bin), "60"], cwd=project.root)
    lock = project.root / ".git" / "index.lock"
    lock.write_text("")
    tried = tmp_path / "add-tried"
    env = fake_git(tmp_path, "true")
    script = tmp_path / "fakebin" / "git"
    script.write_text(script.read_text().replace(
        "exec ", f'if [ "$1" = add ]; then {REAL_GIT} "$@" && exit 0; rc=$?; touch {tried}; '
        'exit $rc; fi\nexec ', 1))
    try:
        job = subprocess.Popen([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                               cwd=project.root, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(tried.exists, job)  # the job's git add failed on the lock
        assert count(marks, "end") == 2
        lock.unlink()  # the other git process finishes
        _, err = job.communicate(timeout=60)
        assert job.returncode == 0, err
    finally:
        holder.kill()
        holder.wait()
    assert staged_or_untracked(project) == []


@pytest.mark.slow
def test_three_ensembles_of_one_repository_deploy_at_once(project: Project,
                                                          tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    for name in ("one", "two", "three"):
        (project.root / name).mkdir()
        project.write(chain_ensemble([f"{name}1", f"{name}2"], {}, marks, sleep=0),
                      name=f"{name}/ensemble.yaml")
    jobs = [start_unfurl(project.root / name, "deploy", "--approve", "--jobs", "2")
            for name in ("one", "two", "three")]
    for job in jobs:
        _, err = job.communicate(timeout=120)
        assert job.returncode == 0, err
    assert staged_or_untracked(project) == []
    assert sum("Updating status" in s for s in project.commits()) == 3


# --- item 10: full disks and read-only directories ------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 2 MB tmpfs: a real full disk (needs root and mount; skipped elsewhere)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@contextlib.contextmanager
def immutable(path: Path):
    """Make ``path`` unwritable even for root (chattr +i); skip where that is unavailable."""
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def new_project(root: Path) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    shutil.rmtree(root / ".git" / "hooks", ignore_errors=True)  # room on a tiny disk
    return Project(root)


def no_temp_files(root: Path) -> bool:
    return not [p for p in root.rglob("*.tmp") if ".git" not in p.parts]


@pytest.mark.slow
def test_disk_full_during_a_job_is_one_clear_error_and_resume_finishes(tiny_disk: Path) -> None:
    project = new_project(tiny_disk / "project")
    filler = tiny_disk / "filler"
    once = tiny_disk.parent / "filled-once"  # off the tiny disk: a re-run of b (resume
    # re-runs a task whose end the full disk kept out of the journal) does not fill it again
    project.write(ensemble_yaml(
        shell_node("a", "echo a")
        + shell_node("b", f"if [ ! -e {once} ]; then touch {once}; head -c 100000000 "
                          f"/dev/zero > {filler} 2>/dev/null; fi; true")
        + "  requirements:\n    - dependency: a\n"))
    result = run_unfurl(project.root, "deploy", "--approve")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "No space left on device" in result.stderr and "cannot write " in result.stderr
    assert "free space on the disk" in result.stderr and "unfurl resume" in result.stderr
    assert no_temp_files(project.root)
    load_ensemble(project.ensemble)  # whole, old or new
    assert (project.root / ".unfurl-lite.lock").exists()  # kept until the job is recorded
    assert run_unfurl(project.root, "deploy", "--approve", "--force").returncode == 1

    filler.unlink()
    resumed = run_unfurl(project.root, "resume", "--force")
    assert resumed.returncode == 0, resumed.stderr
    assert project.local("a") == "ok" and project.local("b") == "ok"
    assert staged_or_untracked(project) == []
    assert not (project.root / ".unfurl-lite.lock").exists()


def test_read_only_jobs_directory_is_a_clear_error(project: Project, tmp_path: Path) -> None:
    marks = two_nodes(project, tmp_path)
    (project.root / "jobs").mkdir()
    with immutable(project.root / "jobs"):
        result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"cannot write {project.root / 'jobs'}" in result.stderr
    assert "make it writable" in result.stderr and "nothing was run" in result.stderr
    assert count(marks, "start") == 0
    assert not (project.root / ".unfurl-lite.lock").exists()
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0


def test_read_only_ensemble_directory_is_a_clear_error(project: Project, tmp_path: Path) -> None:
    two_nodes(project, tmp_path)
    with immutable(project.root):
        result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"cannot write {project.root}" in result.stderr and "writable" in result.stderr


def test_read_only_git_is_a_clear_error_and_resume_commits(project: Project,
                                                           tmp_path: Path) -> None:
    two_nodes(project, tmp_path)
    with immutable(project.root / ".git" / "objects"):
        result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "git commit failed" in result.stderr and "make the repository writable" in result.stderr
    assert project.local("b") == "ok"
    resumed = run_in_process(project.root, "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert staged_or_untracked(project) == []


def test_a_round_trip_that_would_change_the_spec_is_refused(project: Project) -> None:
    from unfurl_lite.errors import JobError
    from unfurl_lite.record import statusfile

    # a comment in status: only a writer of the whole document can record the job
    text = ensemble_yaml(shell_node("db", "echo hi")) + "metadata: {owner: me}\nstatus: {} # x\n"
    project.write(text)
    ensemble = load_ensemble(project.ensemble)
    ensemble.document["metadata"]["owner"] = None  # what a lossy writer would do
    with pytest.raises(JobError, match="would change the user's part"):
        statusfile.save_status(ensemble, lambda document: document.update(lastJob={}))
    assert project.ensemble.read_text() == text


def test_a_discovered_instance_with_a_control_character_is_ignored(
    project: Project, invoke: Invoke, caplog: pytest.LogCaptureFixture
) -> None:
    project.write(ensemble_yaml('''\
        server:
          type: tosca.nodes.Root
          interfaces:
            Install:
              operations:
                discover:
                  implementation: Template
                  inputs:
                    done:
                      resources:
                        - name: "disk\\e[2J"
                          template: server
                        - name: disk-2
                          template: server
        '''))
    result = invoke("discover")
    assert result.exit_code == 0, result.output
    assert "disk-2" in project.status() and len(project.status()) == 2
    assert "discovered instance 'disk\\x1b[2J' ignored" in caplog.text
    assert "\x1b" not in project.ensemble.read_text()


def test_attribute_keys_are_data_not_names(project: Project, invoke: Invoke) -> None:
    text = ensemble_yaml(shell_node("db", "echo hi")) + (
        'status:\n  instances:\n    db:\n      template: db\n      readyState: {local: ok}\n'
        '      attributes: {"odd\\tkey": 1}\n')
    project.write(text)
    assert invoke("status").exit_code == 0
