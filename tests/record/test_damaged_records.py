"""Damaged records give warnings, never tracebacks or silent emptiness (issue 26 §5), and
``jobsLog:`` is confined like every other path, resolved in one place (issue 26 §4).
The commands run in this process (``run_in_process``): a traceback would fail the test
as surely as one in a child's stderr."""

from __future__ import annotations

import os

import pytest

from tests.conftest import Project, ensemble_yaml, git, run_in_process, run_unfurl

TWO = ensemble_yaml("""\
    a: {type: tosca:Root, interfaces: {Standard: {create: echo a, delete: echo bye}}}
    b: {type: tosca:Root, requirements: [dependency: a],
        interfaces: {Standard: {create: "test -e fixed", delete: echo bye}}}
""")


def deployed(project: Project) -> str:
    project.write(TWO)
    result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 64, result.stderr
    return next((project.root / "jobs").glob("job*.yaml")).name


def clean(result: object) -> None:
    stderr = getattr(result, "stderr", "")
    assert "Traceback" not in stderr, stderr


def test_random_bytes_in_a_job_record_and_a_journal_are_warnings(project: Project) -> None:
    job = deployed(project)
    journal = next((project.root / "jobs").glob("journal*.yaml"))
    garbage = bytes(range(256)) * 2
    (project.root / "jobs" / job).write_bytes(garbage)
    journal.write_bytes(garbage[::-1])
    history = run_in_process(project.root, "history")
    clean(history)
    assert history.returncode == 0
    assert f"{journal.name}: damaged journal skipped: not UTF-8 text" in history.stderr
    assert f"{job}: damaged job record: not UTF-8 text" in history.stderr
    assert "deploy" not in history.stdout.splitlines()[1]  # its workflow is unknown: '?'
    assert "error" in history.stdout  # the job is listed, from jobs.tsv
    for command in (["status"], ["show", job[-13:-5]], ["resume"], ["plan"]):
        result = run_in_process(project.root, *command)
        clean(result)
        assert result.returncode in (0, 1), (command, result.stderr)
    resume = run_unfurl(project.root, "resume")  # a process of its own: warned once per process
    assert "damaged journal skipped" in resume.stderr
    assert "no failed, cancelled or killed job to resume" in resume.stderr


def test_a_crlf_jobs_tsv_reads_as_written(project: Project) -> None:
    deployed(project)
    tsv = project.root / "jobs.tsv"
    tsv.write_bytes(tsv.read_bytes().replace(b"\n", b"\r\n"))  # what core.autocrlf checks out
    history = run_in_process(project.root, "history", "--json")
    clean(history)
    assert "damaged" not in history.stderr and '"changelog": "changes/' not in history.stderr
    assert '"status": "error"' in history.stdout
    (project.root / "fixed").write_text("")
    again = run_in_process(project.root, "deploy", "--approve")
    assert again.returncode == 0, again.stderr
    plan = run_in_process(project.root, "deploy", "--approve")
    assert "Nothing to do" in plan.stdout  # a's create, read from the CRLF line, is known


def test_jobs_tsv_as_a_directory_is_a_warning_for_readers_and_an_error_for_jobs(
    project: Project,
) -> None:
    deployed(project)
    journals = len(list((project.root / "jobs").glob("journal*.yaml")))
    tsv = project.root / "jobs.tsv"
    tsv.unlink()
    tsv.mkdir()
    history = run_in_process(project.root, "history")
    clean(history)
    assert "jobs.tsv: is a directory, not a file: no job records read from it" in history.stderr
    for command in ("status", "plan", "validate"):
        clean(run_in_process(project.root, command))
    (project.root / "fixed").write_text("")
    deploy = run_in_process(project.root, "deploy", "--approve")
    clean(deploy)
    assert deploy.returncode == 1 and "'jobs.tsv' is a directory, not a file" in deploy.stderr
    assert len(list((project.root / "jobs").glob("journal*.yaml"))) == journals  # none ran


@pytest.mark.parametrize("log", [".git/config", ".git/hooks/post-commit", "sub/../.git/x",
                                 ".ssh/authorized_keys"])
def test_jobs_log_inside_git_or_a_credential_store_is_refused_at_validate(
    project: Project, log: str
) -> None:
    project.write(TWO + f"jobsLog: {log}\n")
    config = (project.root / ".git" / "config").read_bytes()
    for command in (["validate"], ["deploy", "--approve"]):
        result = run_in_process(project.root, *command)
        clean(result)
        assert result.returncode == 1 and "git's" in result.stderr, result.stderr
    history = run_in_process(project.root, "history")
    clean(history)
    assert history.returncode == 1 and f"jobsLog '{log}' is inside" in history.stderr
    assert (project.root / ".git" / "config").read_bytes() == config
    assert not (project.root / ".git" / "hooks" / "post-commit").exists()


def test_jobs_log_through_a_symlink_into_git_is_refused_at_validate_and_before_running(
    project: Project,
) -> None:
    os.symlink(".git", project.root / "logs")
    git(project.root, "add", "logs")
    project.write(TWO.replace("test -e fixed", "touch ran") + "jobsLog: logs/jobs.tsv\n")
    for command in (["validate"], ["deploy", "--approve"]):
        result = run_in_process(project.root, *command)
        clean(result)
        assert result.returncode == 1 and "inside .git" in result.stderr
    assert not (project.root / "ran").exists()
    assert not (project.root / ".git" / "jobs.tsv").exists()


def test_a_directory_as_jobs_log_is_refused_at_validate_and_before_running(
    project: Project,
) -> None:
    (project.root / "logdir").mkdir()
    project.write(TWO.replace("test -e fixed", "touch ran") + "jobsLog: logdir\n")
    for command in (["validate"], ["deploy", "--approve"]):
        result = run_in_process(project.root, *command)
        clean(result)
        assert result.returncode == 1 and "is a directory, not a file" in result.stderr
    assert not (project.root / "ran").exists()


@pytest.mark.parametrize("name", [".git/config", "sub/../.git/HEAD", "link/config"])
def test_includes_and_imports_of_git_files_are_refused(project: Project, name: str) -> None:
    os.symlink(".git", project.root / "link")
    project.write(TWO + f"extra:\n  +include: {name}\n")
    result = run_in_process(project.root, "validate")
    clean(result)
    assert result.returncode == 1 and "inside .git" in result.stderr, result.stderr
    project.write(TWO.replace("    topology_template:",
                              f"    imports: [{{file: '{name}'}}]\n    topology_template:"))
    result = run_in_process(project.root, "validate")
    clean(result)
    assert result.returncode == 1 and "inside .git" in result.stderr, result.stderr


def test_history_reads_the_jobs_log_the_loader_reads(project: Project) -> None:
    """Flow style at the top level: no column-0 ``jobsLog:`` line for a quick look."""
    from unfurl_lite.api.inspect import ensemble_paths

    project.write("{apiVersion: unfurl/v1alpha1, kind: Ensemble, jobsLog: log/jobs.tsv}\n")
    assert ensemble_paths(project.root)[1] == (project.root / "log" / "jobs.tsv").resolve()
    project.write("apiVersion: unfurl/v1alpha1\njobsLog: 'other.tsv' # quoted\n")
    assert ensemble_paths(project.root)[1] == (project.root / "other.tsv").resolve()


def test_oversized_records_are_refused_in_bounded_memory(project: Project) -> None:
    """A hostile clone's records: a jobs.tsv line of 2 MiB, a journal past the limit
    (sparse: it costs no disk), a job file past the limit. Warnings, and the rest reads."""
    from unfurl_lite.load.jobslog import MAX_LINE
    from unfurl_lite.record.journal_format import MAX_JOURNAL_BYTES

    job = deployed(project)
    with open(project.root / "jobs.tsv", "ab") as tsv:
        tsv.write(b"A6BQ4UfD0009\tsummary=" + b"x" * (2 * MAX_LINE) + b"\n")
    big = project.root / "jobs" / "journal2026-11-26-04-30-41-A6BQ4UfD.yaml"
    with open(big, "wb") as handle:
        handle.truncate(MAX_JOURNAL_BYTES + 10)
    with open(project.root / "jobs" / job, "r+b") as handle:
        handle.truncate(21 * 1024 * 1024)
    history = run_in_process(project.root, "history")
    clean(history)
    assert history.returncode == 0
    assert f"damaged line skipped: longer than {MAX_LINE} bytes" in history.stderr
    assert f"{big.name}: damaged journal skipped: larger than" in history.stderr
    assert f"{job}: damaged job record: larger than" in history.stderr
    assert "error" in history.stdout  # the deploy is still listed
