"""Job control: resume a failed, cancelled or killed job; cancel one running elsewhere.

Resume is one use case from the lock to the commit: it takes the ensemble's lock (a
killed job's stale one too), commits records an earlier job left uncommitted, stops the
operations a killed job left running, records the killed job as it stood, then runs what
is left of it. The caller hears each step through ``notify`` and chooses how the re-run
is observed and cancelled; nothing here prints.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unfurl_lite.errors import JobError, UnfurlLiteError
from unfurl_lite.model.narrow import new_list
from unfurl_lite.plan.tasks import Plan
from unfurl_lite.run import signals
from unfurl_lite.run.observer import CANCELLING, Observer
from unfurl_lite.run.options import JobOptions, PlanOptions
from unfurl_lite.run.outcome import JobResult

_log = logging.getLogger(__name__)


def _say(message: str) -> None:
    _log.info("%s", message)


@dataclass
class Resumption:
    """What :func:`resume` did. ``result`` is the re-run's (None when nothing was left to
    run); ``recorded`` the killed job's record, when it had to be written first."""

    change_id: str | None
    summary: str  # "resumed", or "nothing to resume"
    message: str  # what happened, in a sentence, when nothing was re-run
    options: JobOptions | None = None
    result: JobResult | None = None
    recorded: JobResult | None = None
    committed_leftovers: list[str] = field(default_factory=new_list)

    def exit_code(self) -> int:
        if self.summary == "declined":
            return 1  # "n" at the prompt, as for every job command
        if self.result is None or self.options is None:
            return 0
        return self.result.exit_code(self.options.jobexitcode)

    def as_json(self) -> dict[str, Any]:
        """The JSON a caller gets when nothing was re-run (the re-run's own JSON otherwise)."""
        data: dict[str, Any] = {"changeId": self.change_id, "summary": self.summary}
        if self.recorded is not None:
            data["state"] = str(self.recorded.state)
        else:
            data["committed"] = self.committed_leftovers
        data["tasks"] = []
        return data


def resume(
    ensemble: str | Path | None = None,
    change_id: str | None = None,
    *,
    force: bool = False,
    commit: bool = True,
    dirty: str = "auto",
    executor: str | None = None,
    broker: str | None = None,
    observe: Callable[[int], Observer | None] | None = None,
    cancel: threading.Event | None = None,
    notify: Callable[[str], None] = _say,
    confirm: Callable[[Plan], bool] = lambda left: True,
) -> Resumption:
    """Continue the newest failed, cancelled or killed job (or job ``change_id``).

    Succeeded tasks are not run again; failed and rescheduled ones are (retry count
    reset); ``force`` also re-runs tasks that were running when the job was killed.
    It runs on the job's recorded executor and broker unless ``executor``/``broker`` say
    otherwise; on Celery, the killed job's copies of its tasks still queued are dropped
    and those still running (or finished since) are adopted, never run a second time.
    ``confirm`` sees the plan of what is left to run once the job is ready to resume (a
    killed job is recorded as it stood first) and may decline: nothing then runs, and
    the job stays resumable. ``observe(n)`` is called with the number of tasks left just
    before they run and returns the observer for the re-run.
    """
    # start-up: keeps api.jobs, load.gitrepo (62 modules) off control's import until resume() runs
    from unfurl_lite.api.jobs import JobRequest, load, run_job
    from unfurl_lite.load.gitrepo import find_repo
    from unfurl_lite.record import interrupted, lock, tempfiles
    from unfurl_lite.record import resume as resuming
    from unfurl_lite.record.journal import restore_instances

    ens = load(ensemble)
    stale = lock.stale_text(ens.path)
    with lock.held(ens.path, "resume", take_stale=True) as lock_file, \
            lock.kept_until_recorded(lock_file, stale) as killed_lock:
        tempfiles.sweep(tempfiles.project_directories(ens.project_root, ens.jobs_tsv))
        repo = find_repo(ens.project_root)
        swept = _commit_leftovers(repo, ens, notify) if repo is not None and commit else []
        killed_state = interrupted.lock_job_state(ens.project_root, killed_lock.change_id)
        if killed_state in ("none", "recorded"):
            killed_lock.settle()
        try:
            journal = resuming.find_job(ens.project_root, change_id)
        except JobError:
            cleared = bool(stale) and killed_state == "recorded"
            if change_id or not (swept or cleared):
                raise
            return _nothing_else(killed_lock.change_id, cleared, swept)
        in_flight = [int(t["number"]) for t in journal.tasks
                     if t.get("state") in ("sent", "started")]
        how = _executor_for(journal, executor, broker, in_flight, force)
        if interrupted.killed(journal) and not how.adopting:
            _stop_orphans(journal.change_id, str(ens.path), notify)
        plan = resuming.replan(ens, journal)
        options = resuming.job_options(journal)
        options.commit = commit
        recorded = None
        if interrupted.killed(journal):
            recorded = _record_interrupted(ens, journal, plan, options, repo, killed_lock,
                                           notify)
            if str(recorded.state) == "succeeded":
                return Resumption(journal.change_id, "nothing to resume",
                                  "Nothing to resume: the job had finished.", options,
                                  recorded=recorded, committed_leftovers=swept)
            ens = load(ens.path)
        killed_lock.settle()
        updated = resuming.spec_changed(ens, journal)
        if updated:
            notify(f"The spec changed since job {journal.change_id} was cancelled: what is "
                   "left of it runs with the new inputs")
        resumed = resuming.resumed_from(journal, plan, force or how.adopting,
                                        current=dict(ens.instances) if updated else None)
        todo = [t for t in plan.tasks if t.number not in resumed.runs]
        if not confirm(dataclasses.replace(plan, tasks=todo)):
            return Resumption(journal.change_id, "declined", "Cancelled: nothing was run.",
                              options, recorded=recorded, committed_leftovers=swept)
        notify(f"Resuming job {journal.change_id}: {len(todo)} of {len(plan.tasks)} "
               "tasks to run")
        request = JobRequest(
            ensemble=ens.path, workflow=plan.workflow,
            plan_options=PlanOptions.from_mapping(journal.data.get("planOptions") or {}),
            options=options, dirty=dirty, locked=True,
            executor=how.kind, executor_options=how.options,
        )
        result = run_job(
            request, observe=observe, cancel=cancel,
            ensemble=ens, plan=plan, resumed=resumed,
            start_instances=restore_instances(journal.data.get("startInstances") or {}),
        )
    assert result is not None  # no confirmation is asked
    return Resumption(journal.change_id, "resumed", "", options, result, recorded, swept)


def _commit_leftovers(repo: Any, ens: Any, notify: Callable[[str], None]) -> list[str]:
    """Commit the records an earlier job left uncommitted; the changeIds of those jobs."""
    from unfurl_lite.record.leftovers import commit_leftovers  # start-up: resume only

    swept = commit_leftovers(repo, ens, with_ensemble=True)
    if swept:
        notify(f"Committed the records job {', '.join(swept)} left uncommitted")
    return swept


def _nothing_else(change_id: str | None, cleared: bool, swept: list[str]) -> Resumption:
    """No job to resume, after committing leftovers or clearing a recorded job's lock."""
    message = "Nothing else to resume."
    if cleared:
        message = (f"Job {change_id} had been recorded: cleared its stale lock; nothing "
                   "else to resume.")
    return Resumption(change_id, "nothing to resume", message, committed_leftovers=swept)


def _stop_orphans(change_id: str, ensemble: str, notify: Callable[[str], None]) -> None:
    """Stop the operations a killed job left running (not when their results are adopted)."""
    from unfurl_lite.run import orphans  # start-up: only a killed job has orphans

    left = orphans.find(change_id, ensemble)
    if left:
        notify(f"Stopping {len(left)} operation(s) job {change_id} left running when it "
               "was killed")
        orphans.stop(left)


def _record_interrupted(ens: Any, journal: Any, plan: Plan, options: JobOptions,
                        repo: Any, killed_lock: Any,
                        notify: Callable[[str], None]) -> JobResult:
    """Record a killed job as it stood (its records, its journal marked recorded, its
    commit) before anything of it runs again, and release its stale lock."""
    # start-up: keeps api.jobs (62 modules) off control's import until _record_interrupted() runs
    from unfurl_lite.api.jobs import record_job
    from unfurl_lite.record import interrupted
    from unfurl_lite.record import resume as resuming

    recorded = resuming.interrupted_result(ens, journal, plan)
    recorded.start_commit = repo.head() if repo else None
    files = record_job(ens, recorded, options, completing=True,
                       append_log=not (ens.inline_log
                                       and resuming.logged(ens, journal.change_id)))
    resuming.write_journal(journal, recorded, state=str(recorded.state), recorded=True,
                           killed=journal.state in interrupted.UNFINISHED)
    killed_lock.settle()
    files.extra.append(journal.path)
    notify(f"Recorded interrupted job {journal.change_id}: {recorded.summary}")
    if repo is not None and options.commit:
        repo.commit(files.all(), f"Recording interrupted job {journal.change_id}")
    return recorded


def _executor_for(journal: Any, executor: str | None, broker: str | None,
                  in_flight: list[int], force: bool) -> Any:
    # start-up: keeps api.distributed (11 modules) off control's import until _executor_for() runs
    from unfurl_lite.api.distributed import resume_executor

    return resume_executor(journal.data.get("executor") or {}, executor, broker, in_flight,
                           force)


@dataclass(frozen=True)
class Cancelled:
    """Whom :func:`cancel` signalled (``already``: it was cancelling; nothing was sent)."""

    job: str  # the running job, described
    pid: int
    force: bool
    kill: bool
    already: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"cancelling": self.job, "pid": self.pid, "force": self.force,
                "kill": self.kill}


def cancel(ensemble: str | Path | None = None, *, force: bool = False,
           kill: bool = False) -> Cancelled:
    """Cancel the job running on this ensemble in another process (found through its
    lock file). Plainly, running tasks finish and nothing new starts; ``force`` records the
    job cancelled at once and leaves running operations to finish; ``kill`` kills them. A
    second plain cancel does not escalate."""
    # start-up: keeps load.loader, record.lock (10 modules) off control's import until cancel() runs
    from unfurl_lite.load.loader import resolve_path
    from unfurl_lite.record import lock

    if force and kill:
        raise UnfurlLiteError("give force or kill, not both")
    path = lock.lock_path(resolve_path(ensemble))
    info = lock.read_lock(path)
    if info is None:
        raise JobError("no job is running on this ensemble (there is no lock file)")
    if not info.alive or info.pid <= 0:
        raise JobError(
            f"{lock.describe(info)} is no longer running",
            hint=f"{lock.finish_advice(path.parent)} (or delete {path})",
        )
    signum = signals.KILL_SIGNAL if kill else signals.FORCE_SIGNAL if force else signal.SIGTERM
    if signum == signal.SIGTERM and _cancelling(path.parent, info.change_id):
        # a second plain cancel must not become a kill-cancel (SIGTERM twice would)
        return Cancelled(lock.describe(info), info.pid, force, kill, already=True)
    try:
        os.kill(info.pid, signum)
    except ProcessLookupError:
        raise JobError(f"{lock.describe(info)} has just ended") from None
    return Cancelled(lock.describe(info), info.pid, force, kill)


def _cancelling(root: Path, change_id: str | None) -> bool:
    # start-up: keeps record.journal (17 modules) off control's import until _cancelling() runs
    from unfurl_lite.record.journal import list_journals

    return bool(change_id) and any(
        j.change_id == change_id and j.state in ("cancelled", *CANCELLING)
        for j in list_journals(root)
    )
