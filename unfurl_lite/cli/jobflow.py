"""How a job command runs its job and shows it, without click.

Two roads reach it with the same records: the workflow's click command
(:mod:`unfurl_lite.cli.commands.jobs`), and the command line that names only a job command
and the everyday options (:mod:`unfurl_lite.cli.quick`), which starts without importing
click. What a job shows, asks and exits with is written here once, so both say the same.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields

from unfurl_lite import api
from unfurl_lite.cli.render import (
    LineObserver,
    ProgressObserver,
    changes_table,
    idle_json,
    plan_text,
    plan_tree,
    query_text,
    result_json,
    run_output_text,
    summary_table,
    summary_text,
)
from unfurl_lite.cli.tables import environment_width, prose, terminal_width
from unfurl_lite.cli.terminal import console, echo
from unfurl_lite.errors import ApprovalRequired
from unfurl_lite.load.collector import loads_frozen
from unfurl_lite.model.builtin_workflows import BY_NAME
from unfurl_lite.run.options import JobOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class JobChoice:
    """What a job command was asked, beyond its workflow's parameters: the job's own
    options (:class:`~unfurl_lite.run.options.JobOptions`), how to run it, and how to show
    it. Options left unset keep the defaults the api and run layers give them."""

    options: JobOptions
    dirty: str = "auto"
    instances: tuple[str, ...] = ()
    approve: bool = False
    queue: bool = False
    executor: str | None = None
    broker: str | None = None
    as_json: bool = False
    verbose: int = 0
    quiet: bool = False
    parameters: tuple[str, ...] = ()  # -p NAME=VALUE, as typed
    parameters_file: str | None = None
    variables: tuple[tuple[str, str], ...] = ()  # Unfurl's --var NAME VALUE, as typed
    query: str | None = None  # Unfurl's --query: evaluated once the job is done
    output: str | None = None  # Unfurl's --output: text, json (as --json) or none

    @property
    def shows_json(self) -> bool:
        """The result is one JSON document on stdout (``--json`` or ``--output json``)."""
        return self.as_json or self.output == "json"

    @classmethod
    def take(cls, values: dict[str, Any]) -> JobChoice:
        """The job options among a command's values, removed from them."""
        given = {name: values.pop(name) for name in CHOICE if name in values}
        jobs = {name: values.pop(name) for name in JOB if name in values}
        options = JobOptions(**{k: v for k, v in jobs.items() if v is not None})
        choice: dict[str, Any] = {k: tuple(map(tuple, v)) if k == "variables"
                                  else tuple(v) if isinstance(v, list | tuple) else v
                                  for k, v in given.items() if v is not None}
        return cls(options=options, **choice)


#: the option names JobChoice and JobOptions take
CHOICE = tuple(f.name for f in fields(JobChoice) if f.name != "options")
JOB = tuple(f.name for f in fields(JobOptions) if f.name not in ("recorded", "retry_interval"))


class Declined(Exception):
    """The person asked said no: nothing ran, the command exits 1."""


@contextlib.contextmanager
def quiet_collector() -> Iterator[None]:
    """A job allocates a long-lived record per task and almost no reference cycles, yet
    Python's default thresholds rescan the growing heap every 700 allocations: at 10 000
    tasks that was 15% of the job. The command's process is ours, so the model loaded so
    far is frozen out of collection for the job (a library caller's heap is left alone)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def output_width(tty: bool) -> int | None:
    """The width to fit output to: the terminal's, or in a pipe ``COLUMNS`` when the
    environment sets it (None: as wide as the content)."""
    return terminal_width() if tty else environment_width()


def say(text: str, tty: bool, err: bool = False) -> None:
    """Sentences for people, wrapped at spaces to the output's width (never inside a word,
    an id or a time), each continuation line indented under its own."""
    echo(prose(text, output_width(tty)), err=err)


def show(renderable: Any) -> None:
    """Text as a line; anything else (a rich table or tree: a terminal's) through rich."""
    if isinstance(renderable, str):
        echo(renderable)
    else:
        console().print(renderable)


def confirm_plan(shown: Any, approve: bool, needs_approval: bool, as_json: bool,
                 tty: bool) -> bool:
    """Show the plan; ask on a terminal; refuse (clearly) when nobody can be asked."""
    if not as_json and shown:
        if isinstance(shown, str):
            say(shown, tty)
        else:
            show(shown)
    if approve or not needs_approval:
        return True
    if not sys.stdin.isatty():
        raise ApprovalRequired(
            "this job changes things and there is no terminal to confirm on",
            hint="review the plan (unfurl plan) and pass --approve to run it",
        )
    import click  # start-up: keeps click off a job command's quick road (asks on a terminal only)

    if as_json and shown:
        console(stderr=True).print(shown)
    # with --json, stdout holds the result document only
    return click.confirm("Run this job?", default=False, err=as_json)


def execute(workflow: str, ensemble_path: str | None, plan_options: Mapping[str, Any],
            job: JobChoice, level: int, tty: bool, custom: bool = False) -> int:
    """Plan ``workflow``, show the plan, ask when it must, run the job and show its
    result; the exit code: the job's (``--jobexitcode``), 1 when the person declined."""
    try:
        return _execute(workflow, ensemble_path, plan_options, job, level, tty, custom)
    except Declined:
        echo("Cancelled: nothing was run.", err=True)
        return 1


def _execute(workflow: str, ensemble_path: str | None, plan_options: Mapping[str, Any],
             job: JobChoice, level: int, tty: bool, custom: bool) -> int:
    """:func:`execute` but for a refusal: a plan remembered with nothing to do is answered
    before the ensemble is loaded (a redeploy's common case); else the job runs with
    Ctrl-C meaning cancel from the moment it starts."""
    inputs = _inputs(job)
    known = api.remembered_plan(
        ensemble_path, workflow, api.PlanOptions.from_mapping(plan_options), custom=custom,
        inputs=inputs, queue=job.queue, query=job.query)
    if known is not None:  # nothing to do, known without loading the ensemble
        plan_confirmation(workflow, job, tty, level)(None, known)
        nothing_to_do(workflow, None, job, level)
        return 0
    request = job_request(workflow, ensemble_path, plan_options, job, custom, inputs)
    # start-up: keeps run.signals off `redeploy` until execute() runs
    from unfurl_lite.run.signals import JobControl, handle_signals

    control = JobControl()
    running = contextlib.ExitStack()

    def observe(count: int) -> Any:
        """The job is about to run: Ctrl-C now means cancel, and progress is shown."""
        running.enter_context(handle_signals(control))
        running.enter_context(quiet_collector())
        if tty and not job.shows_json and level >= 0:
            return running.enter_context(ProgressObserver(console(), count))
        return LineObserver() if level >= 0 and not job.shows_json else None

    with running, loads_frozen():
        result = api.run_job(
            request, confirm=plan_confirmation(workflow, job, tty, level),
            observe=observe, cancel=control,
            notify=lambda message: say(message, tty, err=True) if level >= 0 else None,
        )
    if result is None:  # confirmed, with nothing to run
        nothing_to_do(workflow, request, job, level)
        return 0
    return show_result(result, job.options.jobexitcode, job.shows_json, tty, level,
                       summary=job.output != "none")


def _inputs(job: JobChoice) -> dict[str, Any]:
    """Unfurl's ``--var`` inputs (none on the quick road, which leaves click's module off)."""
    if not job.variables:
        return {}
    # start-up: only with --var (click's road, whose module this is)
    from unfurl_lite.cli.commands.unfurl_options import job_inputs

    return job_inputs(job.variables)


def job_request(workflow: str, ensemble_path: str | None, plan_options: Mapping[str, Any],
                job: JobChoice, custom: bool, inputs: dict[str, Any]) -> Any:
    """The api's JobRequest for what the command line chose (the executor from
    ``UNFURL_EXECUTOR`` unless given); a broker given is also put in the environment, where
    operations that talk to it (agents) find it."""
    if job.broker:
        os.environ["UNFURL_BROKER"] = job.broker
    return api.JobRequest(
        ensemble=ensemble_path,
        workflow=workflow,
        plan_options=api.PlanOptions.from_mapping(plan_options),
        options=job.options,
        dirty=job.dirty,
        executor=job.executor or os.environ.get("UNFURL_EXECUTOR", "local"),
        executor_options={"broker": job.broker} if job.broker else None,
        queue=job.queue,
        custom=custom,
        inputs=inputs,
        query=job.query,
    )


def plan_confirmation(workflow: str, job: JobChoice, tty: bool,
                      level: int) -> Callable[[Any, Any], bool]:
    """The job's ``confirm``: show the plan, ask when it must (a workflow that changes
    something, not a dry run, with tasks), :class:`Declined` when declined; False (run
    nothing) when the plan has no tasks."""
    declared = BY_NAME.get(workflow)
    read_only = declared is not None and declared.read_only

    def confirm(ensemble: Any, plan: Any) -> bool:
        needs_approval = not read_only and not job.options.dryrun and bool(plan.tasks)
        shown = plan_tree(plan) if tty else plan_text(plan)
        if level < 0 and (job.approve or not needs_approval):
            shown = ""  # quiet: nobody has to read the plan before it runs
        if not confirm_plan(shown, job.approve, needs_approval, job.shows_json, tty):
            raise Declined
        return bool(plan.tasks)

    return confirm


def echo_json(data: Any) -> None:
    """One JSON document on stdout, as a script reads it."""
    echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def nothing_to_do(workflow: str, request: Any, job: JobChoice, level: int) -> None:
    """A job with no task: said so, and a ``--query`` answered from the records
    (``request`` None: a plan remembered, no query)."""
    found = None
    if request is not None and request.query:
        # start-up: keeps api.jobs (the job's machinery, ~100 modules) off a no-op redeploy
        from unfurl_lite.api.jobs import query_ensemble

        found = query_ensemble(request.ensemble, request.query, request.inputs)
    if job.shows_json:
        document = idle_json(workflow, job.options.dryrun)
        if request is not None and request.query:
            document.update(query=request.query, result=found)
        echo_json(document)
        return
    if level >= 0 and job.output != "none":
        echo("Nothing to do.")
    if request is not None and request.query:
        echo(query_text(request.query, found))


def show_result(result: Any, jobexitcode: str, as_json: bool, tty: bool, level: int = 0,
                summary: bool = True) -> int:
    """The job's result (a summary, or the JSON document); its exit code. ``summary``
    False (``--output none``): only a ``--query``'s answer."""
    if as_json:
        data = result_json(result)
        if result.query is not None:
            data["query"], data["result"] = result.query
        echo_json(data)
        return int(result.exit_code(jobexitcode))
    declared = BY_NAME.get(result.workflow)
    if declared is not None and declared.shows_output and not result.dryrun:
        output = run_output_text(result)
        if output:
            echo(output)
    if summary and tty and level >= 0:
        show(summary_table(result))
    if summary:
        say(summary_text(result), tty)
        found = changes_table(result, output_width(tty))
        if found:
            show(found)
    if result.query is not None:
        echo(query_text(*result.query))
    return int(result.exit_code(jobexitcode))
