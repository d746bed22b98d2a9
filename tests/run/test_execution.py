"""The execution model with real processes: kill -9 and resume, cancel, retries, locking,
git failures. Operations leave start/end marks; tests poll for them, never sleep blindly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ROOT, Project, ensemble_yaml, git, run_in_process, run_unfurl
from tests.execution_helpers import chain_ensemble, count, kill9, start_unfurl, wait_for
from unfurl_lite.load import jobslog
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.record.journal import list_journals
from unfurl_lite.record.liveness import pid_alive


def setup(project: Project, names, requires, sleep=0.2, failing=None) -> Path:
    marks = project.root / "marks"
    marks.mkdir(exist_ok=True)
    (project.root / ".gitignore").write_text("jobs/*.log\nmarks/\n.unfurl-lite.lock\n")
    git(project.root, "add", ".gitignore")
    project.write(chain_ensemble(names, requires, marks, sleep, failing))
    return marks


def gated(project, names: list[str]):
    """Nodes whose configure marks its start, then waits until the file ``marks/go`` exists."""
    marks = setup(project, names, {}, sleep=0)
    wait = "while [ ! -e marks/go ]; do sleep 0.05; done"
    body = "".join(  # each node requires the one before it
        f"{n}:\n  type: tosca.nodes.Root\n"
        + (f"  requirements:\n    - dependency: {names[i - 1]}\n" if i else "")
        + "  interfaces:\n    Standard:\n      operations:\n"
        f"        configure: 'echo $$ >> marks/{n}.start; {wait}; echo done >> marks/{n}.end'\n"
        for i, n in enumerate(names)
    )
    project.write(ensemble_yaml(body))
    return marks


def statuses(project: Project) -> dict[str, tuple[str, str | None]]:
    return {n: (r["readyState"]["local"], r["readyState"].get("state"))
            for n, r in project.status().items()}


def files_load(project: Project) -> None:
    load_ensemble(project.ensemble)
    list(jobslog.read_jobs_tsv(project.root / "jobs.tsv"))
    for path in (project.root / "jobs").glob("*.yaml"):
        YAML(typ="safe").load(path.read_text())


def twenty_nodes() -> tuple[list[str], dict[str, list[str]]]:
    names = [f"n{i:02d}" for i in range(20)]
    requires = {names[i]: [names[i - 4]] + ([names[i - 3]] if i % 5 == 0 else [])
                for i in range(4, 20)}
    return names, requires


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [1, 9, 17])
def test_kill9_mid_run_then_resume_matches_an_uninterrupted_run(project, tmp_path, kill_after):
    names, requires = twenty_nodes()
    reference = Project(tmp_path / "reference")
    reference.root.mkdir()
    git(reference.root, "init", "-q", "-b", "main")
    git(reference.root, "config", "user.email", "t@example.com")
    git(reference.root, "config", "user.name", "T")
    setup(reference, names, requires, sleep=0.05)
    done = run_unfurl(reference.root, "deploy", "--approve", "--jobs", "4")
    assert done.returncode == 0, done.stderr
    expected = statuses(reference)
    assert set(expected.values()) == {("ok", "configured")}

    marks = setup(project, names, requires, sleep=0.1)
    job = start_unfurl(project.root, "deploy", "--approve", "--jobs", "4")
    wait_for(lambda: count(marks, "end") >= kill_after, job)
    kill9(job)
    files_load(project)
    [killed] = list_journals(project.root)
    succeeded = {t["target"] for t in killed.tasks if t["state"] == "succeeded"}
    starts = {n: len((marks / f"{n}.start").read_text().split()) for n in succeeded}

    refused = run_unfurl(project.root, "deploy", "--approve")
    assert refused.returncode == 1
    assert "stale lock" in refused.stderr and "unfurl resume" in refused.stderr

    resumed = run_unfurl(project.root, "resume", "--force")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert statuses(project) == expected
    for name in succeeded:  # succeeded before the kill: never run again
        assert len((marks / f"{name}.start").read_text().split()) == starts[name]
    lines = [jobslog.parse_tsv_line(line + "\n") for line in project.jobs_tsv()]
    jobs = [r for r in lines if r["changeId"].endswith("0000")]
    assert jobs[0]["changeId"] == killed.change_id and "(interrupted)" in jobs[0]["summary"]
    assert jobs[1]["previousId"] == killed.change_id
    assert not (project.root / ".unfurl-lite.lock").exists()
    assert git(project.root, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.slow  # a real process, signalled or killed
def test_resume_stops_operations_the_killed_job_left_running(project):
    """The killed job's command would otherwise run on beside its re-run: it started first,
    so unstopped it would also finish first, and write a second end mark."""
    marks = setup(project, ["a"], {}, sleep=0)
    # the first run waits (a minute: still running however slow the machine), the re-run not
    first = 'if [ "$(wc -l < marks/a.start)" -eq 1 ]; then sleep 60; fi'
    project.write(ensemble_yaml(
        "a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
        f"        configure: 'echo $$ >> marks/a.start; {first}; echo done >> marks/a.end'\n"))
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    kill9(job)
    result = run_unfurl(project.root, "resume", "--force")
    assert result.returncode == 0, result.stderr
    assert "left running when it was killed" in result.stderr
    orphan, _rerun = (marks / "a.start").read_text().split()  # the orphan, then the re-run
    assert not pid_alive(int(orphan))
    assert (marks / "a.end").read_text().split() == ["done"]  # only the re-run finished
    assert project.local("a") == "ok"


def _sleeper(cwd: Path, **variables: str) -> subprocess.Popen[bytes]:
    """A process in a session of its own, as an operation runs, with ``variables`` set."""
    return subprocess.Popen(["sleep", "60"], cwd=cwd, start_new_session=True,
                            env={**os.environ, **variables})


def test_orphans_are_told_apart_by_their_ensemble(tmp_path):
    """A changeId names a 1/62 s tick: two ensembles' jobs started in the same tick share
    one. The operations of the killed job's ensemble are its orphans; another ensemble's
    are not; one started by a version that did not say its ensemble is taken as an orphan."""
    from unfurl_lite.run import orphans

    job = f"A-test-{os.getpid()}-{tmp_path.name}"  # no real job's
    ours, theirs = str(tmp_path / "a" / "ensemble.yaml"), str(tmp_path / "b" / "ensemble.yaml")
    own = _sleeper(tmp_path, UNFURL_JOB=job, UNFURL_ENSEMBLE=ours)
    other = _sleeper(tmp_path, UNFURL_JOB=job, UNFURL_ENSEMBLE=theirs)
    older = _sleeper(tmp_path, UNFURL_JOB=job)
    try:
        wait_for(lambda: all(f"UNFURL_JOB={job}".encode() in Path(
            f"/proc/{p.pid}/environ").read_bytes() for p in (own, other, older)))
        assert orphans.find(job, ours) == sorted([own.pid, older.pid])
        assert orphans.find(job, theirs) == sorted([other.pid, older.pid])
    finally:
        for process in (own, other, older):
            process.kill()
            process.wait()


@pytest.mark.slow  # a real process, signalled or killed
def test_resume_leaves_another_ensembles_operation_of_the_same_changeid_running(
        project, tmp_path):
    """Resuming a killed job stops its own orphan, not another ensemble's operation whose
    job started in the same tick (a parallel CI run once lost an operation so)."""
    marks = setup(project, ["a"], {}, sleep={"a": 60})
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    kill9(job)
    [killed] = list_journals(project.root)
    (tmp_path / "other").mkdir()
    neighbour = _sleeper(tmp_path / "other", UNFURL_JOB=killed.change_id,
                         UNFURL_ENSEMBLE=str(tmp_path / "other" / "ensemble.yaml"))
    try:
        result = run_unfurl(project.root, "resume")
        assert result.returncode == 64, result.stderr
        assert "Stopping 1 operation(s)" in result.stderr, result.stderr
        assert not pid_alive(int((marks / "a.start").read_text().split()[0]))
        assert neighbour.poll() is None  # the other ensemble's operation runs on
    finally:
        neighbour.kill()
        neighbour.wait()


@pytest.mark.slow  # a real process, signalled or killed
def test_resume_without_force_leaves_interrupted_tasks_failed(project):
    # only a is slow (it is killed while running); b, which the resume runs, is not
    marks = setup(project, ["a", "b"], {"b": ["a"]}, sleep={"a": 30})
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    kill9(job)
    result = run_unfurl(project.root, "resume")
    assert result.returncode == 64
    assert project.local("a") == "unknown"
    assert len((marks / "a.start").read_text().split()) == 1  # a was not run again
    assert "interrupted" in result.stdout and "blocked" in result.stdout


@pytest.mark.slow  # a real process, signalled or killed
def test_first_sigint_cancels_and_running_tasks_finish(project):
    names = ["a", "b", "c", "d"]
    marks = setup(project, names, {"c": ["a"], "d": ["b"]}, sleep=0.5)
    job = start_unfurl(project.root, "deploy", "--approve", "--jobs", "2")
    wait_for(lambda: count(marks, "start") >= 2, job)
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 64, out + err
    assert count(marks, "end") == 2 and count(marks, "start") == 2  # finished, none new
    assert "Cancelling" in err
    assert project.local("a") == "ok" and project.local("b") == "ok"
    doc = YAML(typ="safe").load(project.ensemble.read_text())
    assert doc["lastJob"]["state"] == "cancelled"
    assert project.commits()[0].startswith("Updating status for job")
    resumed = run_unfurl(project.root, "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert count(marks, "start") == 4  # a and b did not run again
    assert set(statuses(project).values()) == {("ok", "configured")}


@pytest.mark.slow  # a real process, signalled or killed
def test_a_soft_cancel_never_starts_tasks_that_were_only_waiting_for_a_free_slot(project):
    """Four independent tasks, one slot: the three waiting must not start after SIGINT."""
    names = ["a", "b", "c", "d"]
    marks = setup(project, names, {}, sleep=0.5)
    job = start_unfurl(project.root, "deploy", "--approve", "--jobs", "1")
    wait_for(lambda: count(marks, "start") >= 1, job)
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 64, out + err
    assert count(marks, "start") == 1 and count(marks, "end") == 1
    states = sorted(project.local(n) for n in names)
    assert states.count("ok") == 1 and "error" not in states


@pytest.mark.slow  # a real process, signalled or killed
def test_second_signal_kills_running_operations(project):
    marks = setup(project, ["a", "b"], {}, sleep=60)
    job = start_unfurl(project.root, "deploy", "--approve", "--jobs", "2")
    wait_for(lambda: count(marks, "start") >= 2, job)
    job.send_signal(signal.SIGTERM)
    wait_for(lambda: "cancelling" in next(iter(list_journals(project.root))).state, job)
    job.send_signal(signal.SIGTERM)
    out, err = job.communicate(timeout=30)
    assert job.returncode == 64, out + err
    assert count(marks, "end") == 0
    [journal] = list_journals(project.root)
    assert journal.state == "cancelled"
    assert {t["state"] for t in journal.tasks} == {"failed"}
    assert all("killed by signal" in t["message"] for t in journal.tasks)


@pytest.mark.slow  # a real process, signalled or killed
def test_unfurl_cancel_signals_the_running_job(project):
    marks = gated(project, ["a", "b"])  # b requires a; a runs until the gate opens
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    cancelled = run_unfurl(project.root, "cancel")
    assert cancelled.returncode == 0 and "Cancelling job A" in cancelled.stdout
    wait_for(lambda: "cancelling" in next(iter(list_journals(project.root))).state, job)
    (marks / "go").touch()
    job.communicate(timeout=60)
    assert job.returncode == 64
    assert count(marks, "start") == 1 and count(marks, "end") == 1
    nothing = run_unfurl(project.root, "cancel")
    assert nothing.returncode == 1 and "no job is running" in nothing.stderr


@pytest.mark.slow  # a real process, signalled or killed
def test_unfurl_cancel_kill_kills(project):
    marks = setup(project, ["a"], {}, sleep=60)
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    assert run_unfurl(project.root, "cancel", "--kill").returncode == 0
    job.communicate(timeout=30)
    assert job.returncode == 64 and count(marks, "end") == 0
    assert project.local("a") == "unknown"


@pytest.mark.slow  # a real process, signalled or killed
def test_second_deploy_is_refused_while_one_runs_and_reads_never_block(project):
    marks = setup(project, ["a"], {}, sleep=30)
    job = start_unfurl(project.root, "deploy", "--approve")
    wait_for(lambda: count(marks, "start") >= 1, job)
    try:
        second = run_unfurl(project.root, "deploy", "--approve")
        assert second.returncode == 1
        assert "is already running on this ensemble" in second.stderr
        assert "unfurl cancel" in second.stderr
        assert run_unfurl(project.root, "plan").returncode == 0
    finally:
        kill9(job)


FLAKY = ensemble_yaml("""\
flaky:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      operations:
        configure:
          implementation: >-
            n=$(cat tries 2>/dev/null || echo 0); n=$((n+1)); echo $n > tries;
            [ $n -ge 3 ] || exit {code}
          {retry}
""")


@pytest.mark.parametrize(
    "code, retry, args",
    [
        (1, "retry: {max_retries: 2, interval: 0.01, backoff: 2}", ()),
        pytest.param(1, "", ("--retries", "2"), marks=pytest.mark.slow),  # 1 s, then 2 s
        pytest.param(75, "", (), marks=pytest.mark.slow),  # the command asks for a retry
    ],
)
def test_flaky_command_retried_until_ok_with_attempts_recorded(project, invoke, code, retry, args):
    project.write(FLAKY.format(code=code, retry=retry))
    result = invoke("deploy", "--approve", *args)
    assert result.exit_code == 0, result.output
    assert project.local("flaky") == "ok"
    [job_file] = list((project.root / "jobs").glob("job*.yaml"))
    task = YAML(typ="safe").load(job_file.read_text())["changes"][1]
    assert task["attempts"] == 3 and len(task["retries"]) == 2


def test_git_without_identity_is_a_clear_error_before_anything_runs(project, tmp_path):
    marks = setup(project, ["a"], {}, sleep=0)
    git(project.root, "config", "--unset", "user.email")
    git(project.root, "config", "user.useConfigOnly", "true")
    env = {k: v for k, v in os.environ.items()
           if k not in ("EMAIL", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")}
    env.update(GIT_CONFIG_GLOBAL=str(tmp_path / "none"), GIT_CONFIG_NOSYSTEM="1",
               PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "unfurl_lite", "deploy", "--approve"],
                            cwd=project.root, env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "git has no identity" in result.stderr and "user.email" in result.stderr
    assert count(marks, "start") == 0  # refused before any operation ran
    assert project.jobs_tsv() == [] and "status" not in project.ensemble.read_text()


def test_detached_head_is_a_clear_error_after_saving(project):
    setup(project, ["a"], {}, sleep=0)
    git(project.root, "checkout", "-q", "--detach")
    result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "HEAD is detached" in result.stderr
    assert project.local("a") == "ok"


def test_stale_index_lock_is_a_clear_error_before_running(project):
    setup(project, ["a"], {}, sleep=0)
    (project.root / ".git" / "index.lock").write_text("")
    result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "index.lock" in result.stderr
    assert "delete it" in result.stderr
    assert "a" not in project.status()  # refused before running anything


def test_resume_with_nothing_to_resume_is_clear(project):
    setup(project, ["a"], {}, sleep=0)
    assert run_in_process(project.root, "deploy", "--approve").returncode == 0
    result = run_in_process(project.root, "resume")
    assert result.returncode == 1 and "no failed, cancelled or killed job" in result.stderr


def test_resume_refuses_a_changed_spec(project):
    marks = setup(project, ["a", "b"], {"b": ["a"]}, sleep=0, failing={"a": "true"})
    assert run_in_process(project.root, "deploy", "--approve").returncode == 64
    setup(project, ["a", "b", "c"], {"b": ["a"]}, sleep=0)
    result = run_in_process(project.root, "resume")
    assert result.returncode == 1 and "spec changed" in result.stderr
    assert marks.exists()


def test_failed_job_resumes_after_the_cause_is_fixed(project):
    marks = setup(project, ["a", "b"], {"b": ["a"]}, sleep=0,
                  failing={"a": "[ ! -e marks/fixed ]"})
    first = run_in_process(project.root, "deploy", "--approve")
    assert first.returncode == 64 and project.local("a") == "unknown"
    (marks / "fixed").write_text("")
    result = run_in_process(project.root, "resume")
    assert result.returncode == 0, result.stderr
    assert set(statuses(project).values()) == {("ok", "configured")}
    assert subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                          cwd=project.root, capture_output=True, text=True).stdout == ""
