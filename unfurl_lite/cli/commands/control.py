"""Job control: ``unfurl resume`` finishes a failed, cancelled or killed job; ``unfurl
cancel`` stops a job running in another process (found through the lock file)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from unfurl_lite import api
from unfurl_lite.cli import render
from unfurl_lite.cli.commands.common import (
    confirm_plan,
    console,
    echo_json,
    ensemble_option,
    is_terminal,
    quiet_collector,
    say,
    show,
    verbosity,
)
from unfurl_lite.cli.commands.jobs import show_result


@click.command()
@click.argument("changeid", required=False)
@ensemble_option(positional=False)
@click.option("--force", is_flag=True,
              help="Also re-run tasks that were sent or started when the job died.")
@click.option("--commit/--no-commit", default=True, show_default=True,
              help="Commit the job's records to git.")
@click.option("--dirty", type=click.Choice(["auto", "ok", "abort"]), default="auto",
              show_default=True, help="What to do when the repo has uncommitted changes.")
@click.option("--executor", type=click.Choice(["local", "celery"]), default=None,
              help="Where operations run (default: where the job ran, as its journal says).")
@click.option("--broker", default=None,
              help="The Celery broker (default: the job's, with the password from "
              "$UNFURL_BROKER or the password file).")
@click.option("-a", "--approve", is_flag=True,
              help="Do not ask for confirmation (asked only on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print the job's result as JSON.")
@click.option("-v", "--verbose", count=True, help="More output (repeat for more).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors and the final result.")
@click.pass_context
def resume(ctx: click.Context, changeid: str | None, ensemble: str | None, force: bool,
           commit: bool, dirty: str, executor: str | None, broker: str | None,
           approve: bool, as_json: bool, verbose: int, quiet: bool) -> None:
    """Continue the last failed, cancelled or killed job (or job CHANGEID).

    Succeeded tasks are not run again; failed and rescheduled ones are (retry count
    reset); --force also re-runs tasks that were running when the job was killed. On a
    terminal it shows what is left to run and asks first (-a: do not ask); without one
    it goes on, since the job was approved when it started.
    """

    # start-up: keeps run.signals (2 modules) off control's import until resume() runs
    from unfurl_lite.run.signals import JobControl, handle_signals

    tty = is_terminal()
    level = verbosity(ctx, quiet, verbose)
    shown = contextlib.ExitStack()

    def observe(todo: int) -> Any:
        if as_json or level < 0:
            return None
        if tty:
            return shown.enter_context(render.ProgressObserver(console(), todo))
        return render.LineObserver()

    def confirm(left: Any) -> bool:
        """What is left to run, shown; asked about only where someone can answer."""

        asks = sys.stdin.isatty()
        if level < 0 and (approve or not asks):  # quiet: what runs is not shown
            return True
        title = f"{left.workflow} (what is left to run)"
        shown_plan = render.plan_tree(left, title) if tty else render.plan_text(left, title)
        return confirm_plan(shown_plan, approve, asks, as_json)

    with handle_signals(JobControl()) as control, shown, quiet_collector():
        done = api.resume(ensemble, changeid, force=force, commit=commit, dirty=dirty,
                          executor=executor, broker=broker, observe=observe, cancel=control,
                          confirm=confirm,
                          notify=lambda message: say(message, err=True) if level >= 0 else None)
    if done.result is None or done.options is None:
        if as_json:
            echo_json(done.as_json())
        else:
            say(done.message, err=done.summary == "declined")
        ctx.exit(done.exit_code())
    if as_json:
        echo_json(render.result_json(done.result))
        ctx.exit(done.exit_code())
    show_result(ctx, done.result, done.options.jobexitcode, as_json, tty, level)


@click.command()
@ensemble_option(positional=False)
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
    if force and kill:
        raise click.UsageError("give --force or --kill, not both")
    done = api.cancel(ensemble, force=force, kill=kill)
    if done.already:
        show(f"{done.job} is already cancelling: its running operations are "
             "finishing (unfurl cancel --force or --kill to stop waiting for them).")
        return
    verb = "Kill-cancelling" if kill else "Force-cancelling" if force else "Cancelling"
    if as_json:
        echo_json(done.as_json())
    else:
        show(f"{verb} {done.job}.")
