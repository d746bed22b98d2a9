"""Job control: ``unfurl resume`` finishes a failed, cancelled or killed job; ``unfurl
cancel`` stops a job running in another process (found through the lock file)."""

from __future__ import annotations

import os
import signal
from typing import Any

import click

from unfurl_lite.cli.commands.common import console, echo_json, is_terminal, show


@click.command()
@click.argument("changeid", required=False)
@click.option("--ensemble", "-e", type=click.Path(), default=None,
              help="The ensemble (default: ./ensemble.yaml).")
@click.option("--force", is_flag=True,
              help="Also re-run tasks that were sent or started when the job died.")
@click.option("--commit/--no-commit", default=True, show_default=True,
              help="Commit the job's records to git.")
@click.option("--dirty", type=click.Choice(["auto", "ok", "abort"]), default="auto",
              show_default=True, help="What to do when the repo has uncommitted changes.")
@click.option("--json", "as_json", is_flag=True, help="Print the job's result as JSON.")
@click.pass_context
def resume(ctx: click.Context, changeid: str | None, ensemble: str | None, force: bool,
           commit: bool, dirty: str, as_json: bool) -> None:
    """Continue the last failed, cancelled or killed job (or job CHANGEID).

    Succeeded tasks are not run again; failed and rescheduled ones are (retry count
    reset); --force also re-runs tasks that were running when the job was killed.
    """
    from unfurl_lite import api
    from unfurl_lite.cli import render
    from unfurl_lite.cli.commands.jobs import run_with_signals, show_result
    from unfurl_lite.errors import JobError
    from unfurl_lite.load.gitrepo import find_repo
    from unfurl_lite.record import lock
    from unfurl_lite.record import resume as resuming
    from unfurl_lite.record.journal import restore_instances

    ens = api.load(ensemble)
    stale = lock.stale_text(ens.path)
    with lock.held(ens.path, "resume", take_stale=True) as lock_file, \
            lock.kept_until_recorded(lock_file, stale) as killed_lock:
        repo = find_repo(ens.project_root)
        swept: list[str] = []
        if repo is not None and commit:
            from unfurl_lite.record.leftovers import commit_leftovers

            swept = commit_leftovers(repo, ens, with_ensemble=True)
            if swept:
                click.echo(f"Committed the records job {', '.join(swept)} left uncommitted",
                           err=True)
        killed_state = resuming.killed_job_state(ens.project_root, killed_lock.change_id)
        if killed_state in ("none", "recorded"):
            killed_lock.settle()
        try:
            journal = resuming.find_job(ens.project_root, changeid)
        except JobError:
            if changeid or not (swept or (stale and killed_state == "recorded")):
                raise
            if as_json:
                echo_json({"changeId": killed_lock.change_id, "summary": "nothing to resume",
                           "committed": swept, "tasks": []})
            elif stale and killed_state == "recorded":
                click.echo(f"Job {killed_lock.change_id} had been recorded: cleared its "
                           "stale lock; nothing else to resume.")
            else:
                click.echo("Nothing else to resume.")
            return
        if resuming.is_killed(journal):
            from unfurl_lite.run import orphans

            left = orphans.find(journal.change_id)
            if left:
                click.echo(f"Stopping {len(left)} operation(s) job {journal.change_id} left "
                           "running when it was killed", err=True)
                orphans.stop(left)
        plan = resuming.replan(ens, journal)
        options = resuming.job_options(journal)
        options.commit = commit
        if resuming.needs_recording(journal):
            recovered = resuming.interrupted_result(ens, journal, plan)
            recovered.start_commit = repo.head() if repo else None
            files = api.record_job(ens, recovered, options,
                                   append_log=not resuming.logged(ens, journal.change_id))
            state = str(recovered.state)
            resuming.write_journal(journal, recovered, state=state, recorded=True,
                                   killed=journal.state in resuming.UNFINISHED)
            killed_lock.settle()
            files.extra.append(journal.path)
            click.echo(f"Recorded interrupted job {journal.change_id}: {recovered.summary}",
                       err=True)
            if repo is not None and commit:
                repo.commit(files.all(), f"Recording interrupted job {journal.change_id}")
            if state == "succeeded":
                if as_json:
                    echo_json({"changeId": journal.change_id, "summary": "nothing to resume",
                               "state": state, "tasks": []})
                else:
                    click.echo("Nothing to resume: the job had finished.")
                return
            ens = api.load(ens.path)
        killed_lock.settle()
        resumed = resuming.resumed_from(journal, plan, force)
        todo = [t for t in plan.tasks if t.number not in resumed.runs]
        click.echo(f"Resuming job {journal.change_id}: {len(todo)} of {len(plan.tasks)} "
                   "tasks to run", err=True)
        request = api.JobRequest(
            ensemble=ens.path, workflow=plan.workflow,
            plan_options=dict(journal.data.get("planOptions") or {}),
            options=options, dirty=dirty, locked=True,
            executor=os.environ.get("UNFURL_EXECUTOR", "local"),
        )
        tty = is_terminal()
        progress = None
        observer: Any = None
        if tty and not as_json:
            observer = progress = render.ProgressObserver(console(), len(todo))
        elif not as_json:
            observer = render.LineObserver()
        result = run_with_signals(
            request, observer, progress, ens, plan, resumed=resumed,
            start_instances=restore_instances(journal.data.get("startInstances") or {}),
        )
    if as_json:
        echo_json(render.result_json(result))
        ctx.exit(result.exit_code(options.jobexitcode))
    show_result(ctx, result, options, as_json, tty)


def _cancelling(root: Any, change_id: str | None) -> bool:
    from unfurl_lite.record.journal import list_journals

    return bool(change_id) and any(
        j.change_id == change_id and j.state in ("cancelling", "cancelled")
        for j in list_journals(root)
    )


@click.command()
@click.option("--ensemble", "-e", type=click.Path(), default=None,
              help="The ensemble (default: ./ensemble.yaml).")
@click.option("--force", is_flag=True,
              help="Force-cancel: record the job cancelled at once; running operations are "
              "left to finish, nothing waits for them.")
@click.option("--kill", is_flag=True,
              help="Kill-cancel: kill running operations (SIGTERM, SIGKILL after 5 s).")
@click.option("--json", "as_json", is_flag=True, help="Print what was signalled as JSON.")
def cancel(ensemble: str | None, force: bool, kill: bool, as_json: bool) -> None:
    """Cancel the job running on this ensemble in another process.

    Plainly, running tasks finish, nothing new starts and the job is recorded cancelled;
    cancelling again does not escalate (use --force or --kill).
    """
    from unfurl_lite.errors import JobError
    from unfurl_lite.load.loader import resolve_path
    from unfurl_lite.record import lock
    from unfurl_lite.run import signals

    path = lock.lock_path(resolve_path(ensemble))
    info = lock.read_lock(path)
    if info is None:
        raise JobError("no job is running on this ensemble (there is no lock file)")
    if not info.alive or info.pid <= 0:
        raise JobError(
            f"{lock.describe(info)} is no longer running",
            hint=f"{lock.finish_advice(path.parent)} (or delete {path})",
        )
    if force and kill:
        raise click.UsageError("give --force or --kill, not both")
    signum = signals.KILL_SIGNAL if kill else signals.FORCE_SIGNAL if force else signal.SIGTERM
    if signum == signal.SIGTERM and _cancelling(path.parent, info.change_id):
        # a second plain cancel must not become a kill-cancel (SIGTERM twice would)
        show(f"{lock.describe(info)} is already cancelling: its running operations are "
             "finishing (unfurl cancel --force or --kill to stop waiting for them).")
        return
    try:
        os.kill(info.pid, signum)
    except ProcessLookupError:
        raise JobError(f"{lock.describe(info)} has just ended") from None
    verb = "Kill-cancelling" if kill else "Force-cancelling" if force else "Cancelling"
    if as_json:
        echo_json({"cancelling": lock.describe(info), "pid": info.pid, "force": force,
                   "kill": kill})
    else:
        show(f"{verb} {lock.describe(info)}.")
