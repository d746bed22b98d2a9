"""Running a job: load, plan, run, record it, commit it.

Each step is a plain function; :func:`run_job` only strings them together and owns the
order of the side effects (the ensemble is saved before git is touched, so a git failure
never loses a status). Nothing here touches process-wide state a library caller did not
ask for: no signal handlers, no garbage-collector settings (the CLI sets both).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from unfurl_lite.api.project import make_plan
from unfurl_lite.api.remembered import rememberable
from unfurl_lite.errors import STORAGE_ERRNOS, GitError, StorageError, storage_error
from unfurl_lite.expressions.digest import spec_digest
from unfurl_lite.expressions.limits import budgeted
from unfurl_lite.expressions.outputs import evaluate_query, topology_inputs, topology_outputs
from unfurl_lite.load import name_checks, yamlio
from unfurl_lite.load.digestkey import key_provider
from unfurl_lite.load.gitrepo import Repo, find_repo, identity_problem
from unfurl_lite.load.loader import load_ensemble, resolve_path
from unfurl_lite.model import status_layout as layout
from unfurl_lite.model.ensemble import Ensemble, with_inputs
from unfurl_lite.model.lineage import full_name
from unfurl_lite.model.narrow import new_dict
from unfurl_lite.plan import verdicts
from unfurl_lite.plan.tasks import Plan
from unfurl_lite.record import lock, preflight, records, statusfile, tempfiles
from unfurl_lite.run import relationships
from unfurl_lite.run.executors import Executor, make_executor, starts_on_submit
from unfurl_lite.run.job import run_plan
from unfurl_lite.run.metadata import EnsembleMetadata
from unfurl_lite.run.observer import JobState, Observer, Observers
from unfurl_lite.run.options import JobOptions, PlanOptions, recorded_options
from unfurl_lite.run.outcome import JobResult, Resumed
from unfurl_lite.run.results import keep_defaults_read
from unfurl_lite.run.signals import JobControl
from unfurl_lite.security.paths import confine_records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass
class JobRequest:
    """One job to run: which ensemble, which workflow with what plan options, how."""

    ensemble: str | Path | None
    workflow: str
    plan_options: PlanOptions = field(default_factory=PlanOptions)
    options: JobOptions = field(default_factory=JobOptions)
    dirty: str = "auto"
    executor: str = "local"
    executor_options: dict[str, Any] | None = None
    locked: bool = False  # the caller already holds the ensemble's lock (resume)
    queue: bool = False  # wait for a job running on the ensemble to end, then plan
    custom: bool = False  # the workflow must be one of the topology's ``workflows:``
    #: topology inputs set for this job only (Unfurl's ``--var input_NAME VALUE``)
    inputs: dict[str, Any] = field(default_factory=new_dict)
    #: an expression evaluated once the job is done (Unfurl's ``--query``)
    query: str | None = None

    def __post_init__(self) -> None:
        if not self.options.recorded:  # what lastJob.options shows, the CLI's job or not
            self.options.recorded = recorded_options(self.options, self.plan_options,
                                                     self.dirty)


def load(path: str | Path | None = None) -> Ensemble:
    """The validated ensemble at ``path`` (a file or its directory; default: ./ensemble.yaml)."""
    return load_ensemble(path)


def query_ensemble(
    path: str | Path | None, expression: str, inputs: dict[str, Any] | None = None
) -> Any:
    """Unfurl's ``--query`` on the ensemble as it is recorded (a job that had nothing to do)."""
    ensemble = with_inputs(load_ensemble(path, given=list(inputs or ())), inputs or {})
    return evaluate_query(ensemble.topology, ensemble.instances, expression, set(),
                          ensemble.project_root)


def wait_for_turn(path: str | Path | None, on_wait: Callable[[str], None] | None = None,
                  command: str = "") -> None:
    """Wait for the job running on this ensemble (if any) to end, so the next is planned
    from what it left; ``on_wait`` hears who is being waited for. While it waits the job
    is listed as ``queued`` (Cloudify's execution status) by history and the dashboard."""
    from unfurl_lite.record import queue  # start-up: keeps record.queue (4 modules) off `deploy`

    resolved = resolve_path(path)
    info = lock.read_lock(lock.lock_path(resolved))
    if info is None or not info.alive or info.pid in (-1, os.getpid()):
        return
    if on_wait:
        on_wait(lock.describe(info))
    with queue.waiting(resolved, command):
        lock.wait_until_free(resolved)


def check_dirty(repo: Repo | None, ensemble: Ensemble, mode: str,
                status: list[tuple[str, str]] | None = None) -> list[Path]:
    """``abort``: any uncommitted tracked change stops the job; ``auto``: only changes to
    files other than the ensemble, its records and its spec files do (the spec files are
    returned: the job's commit takes them along); ``ok``: never (see record/repo.py)."""
    from unfurl_lite.record.repo import dirty_check  # start-up: keeps record.repo off `check`

    return dirty_check(repo, ensemble, mode, status)


def _prepare_git(repo: Repo, ensemble: Ensemble, dirty: str) -> list[tuple[str, str]] | None:
    """Before any operation runs: a stale index.lock would only fail the job's commit at
    the end, so it is refused now; records an earlier job left uncommitted are committed.
    Returns what one ``git status`` found for both this and the dirty check, without
    what was committed here (None: the dirty check asks git itself)."""
    # start-up: keeps record.leftovers (4 modules) off `check`, `undeploy` until _prepare_git() runs
    from unfurl_lite.record.leftovers import commit_leftovers

    stale = repo.stale_index_lock()
    if stale is not None:
        raise GitError(
            f"{stale} was left by a git process that is no longer running (it was killed "
            "or crashed): git would refuse this job's commit, so nothing was run",
            hint=f"make sure no git command is running, then delete it: rm {stale}",
        )
    # a job after the first: one status of the whole work tree answers both questions
    status = repo.status() if dirty != "ok" and _has_records(ensemble) else None
    committed: list[Path] = []
    try:
        commit_leftovers(repo, ensemble, status=status, committed=committed)
    except GitError as exc:  # the job's own commit will meet (and explain) the same

        logging.getLogger(__name__).warning(
            "warning: records an earlier job left uncommitted stay so: %s", exc.message)
    if status is None or not committed:
        return status
    taken = {repo.relative(p) for p in committed}
    return [(code, name) for code, name in status if name not in taken]


def _import_the_executor(request: JobRequest, plan: Plan) -> None:
    """The local executor's modules imported (nothing made, nothing written) while git
    answers the identity check: their import (some 5 ms of CPU) overlaps git's start."""
    if plan.local_only or request.executor == "local":
        # start-up: keeps run.executors.local (27 modules) off `plan` and a no-op redeploy
        from unfurl_lite.run.executors import local  # noqa: F401  (imported, not used here)


def _has_records(ensemble: Ensemble) -> bool:
    root = ensemble.project_root
    return ensemble.jobs_tsv.is_file() or any(
        (root / d).is_dir() for d in (records.JOBS_DIR, records.CHANGES_DIR))


def _rememberable(request: JobRequest) -> bool:
    return rememberable(request.custom, request.inputs)


@budgeted  # its templates render within one budget
def run_job(
    request: JobRequest,
    confirm: Callable[[Ensemble, Plan], bool] = lambda e, p: True,
    observer: Observer | None = None,
    cancel: threading.Event | None = None,
    ensemble: Ensemble | None = None,
    plan: Plan | None = None,
    resumed: Resumed | None = None,
    start_instances: dict[str, Any] | None = None,
    observe: Callable[[int], Observer | None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> JobResult | None:
    """Plan and run a workflow; None when ``confirm`` declined (it sees the plan before
    the lock is taken or anything is checked or run).

    A job that changes things holds the ensemble's lock and keeps a journal (see
    journal.py) from its first task to its commit. ``observe(n)``, if given, is called
    once the job is about to run its ``n`` tasks and returns its observer (instead of
    ``observer``); ``notify`` hears that a ``queue`` request is waiting.
    """
    if request.queue and not request.options.dryrun and ensemble is None:
        wait_for_turn(request.ensemble, on_wait=lambda job: notify and notify(
            f"Queued: waiting for {job} to end..."), command=request.workflow)
    prepared = None
    if not (request.options.dryrun or request.locked):  # the lock's file, forced meanwhile
        prepared = lock.Prepared(ensemble.path if ensemble is not None
                                 else resolve_path(request.ensemble), request.workflow)
    try:
        return _planned_and_run(request, confirm, observer, cancel, ensemble, plan, resumed,
                                start_instances, observe, prepared)
    finally:
        if prepared is not None:
            prepared.discard()


def _planned_and_run(
    request: JobRequest,
    confirm: Callable[[Ensemble, Plan], bool],
    observer: Observer | None,
    cancel: threading.Event | None,
    ensemble: Ensemble | None,
    plan: Plan | None,
    resumed: Resumed | None,
    start_instances: dict[str, Any] | None,
    observe: Callable[[int], Observer | None] | None,
    prepared: lock.Prepared | None,
) -> JobResult | None:
    """:func:`run_job` from the ensemble's load on, the lock taken with the file
    ``prepared`` for it."""
    planned_here = ensemble is None and plan is None and resumed is None
    ensemble = with_inputs(ensemble or load_ensemble(request.ensemble, given=list(request.inputs)),
                           request.inputs)
    plan = plan or make_plan(ensemble, request.workflow, request.plan_options, request.custom)
    if planned_here and _rememberable(request):
        verdicts.remember(ensemble, request.workflow,
                          request.plan_options.for_workflow(request.workflow), plan)
    ran = resumed.runs if resumed else {}
    name_checks.refuse_job(ensemble, [  # before anything runs, as Unfurl's render errors
        (t.template, t.operation, t.extra_inputs, t.requirement is not None)
        for t in plan.tasks if t.operation is not None and t.number not in ran
        and t.workflow != "undeploy"])  # undeploy leaves out what it cannot render
    if not confirm(ensemble, plan):
        if not (plan.tasks or request.options.dryrun or request.locked):
            lock.refuse_interrupted(ensemble.path)
        return None
    todo = len([t for t in plan.tasks if t.number not in resumed.runs]) if resumed \
        else len(plan.runnable)

    def watcher() -> Observer | None:
        return observe(todo) if observe is not None else observer

    with contextlib.ExitStack() as held:
        lock_file = None
        if not (request.options.dryrun or request.locked):
            lock_file = held.enter_context(lock.held(ensemble.path, request.workflow,
                                                     prepared=prepared))
            tempfiles.sweep(tempfiles.project_directories(ensemble.project_root,
                                                          ensemble.jobs_tsv))
        try:
            return _run_locked(request, watcher, cancel, ensemble, plan, resumed,
                               start_instances)
        except StorageError as exc:
            if exc.keep_lock and lock_file is not None:
                lock.keep(lock_file)
            raise


def _run_locked(
    request: JobRequest,
    watcher: Callable[[], Observer | None],
    cancel: threading.Event | None,
    ensemble: Ensemble,
    plan: Plan,
    resumed: Resumed | None,
    start_instances: dict[str, Any] | None,
) -> JobResult | None:
    """With the ensemble's lock held: every check that could stop the job or its record
    (confinement, pre-flight, git's state and identity, a dirty spec) before the first
    operation runs, then the run and its record."""
    from unfurl_lite.record.journal import Journal  # start-up: keeps record.journal off `check`

    repo = find_repo(ensemble.project_root)
    confine_records(ensemble.project_root, ensemble.jobs_log, request.options.allow_outside_paths)
    spec_changes: list[Path] = []  # edited spec files the job's commit takes along
    if not request.options.dryrun:
        preflight.check(ensemble)  # whatever could stop the record stops the job now
        status = None
        if repo is not None and request.options.commit:
            status = _prepare_git(repo, ensemble, request.dirty)
        spec_changes = check_dirty(repo, ensemble, request.dirty, status)
        if repo is not None and request.options.commit:
            missing = identity_problem(repo.root, " (or run the job with --no-commit)",
                                       meanwhile=lambda: _import_the_executor(request, plan))
            if missing is not None:
                raise missing
    observer = watcher()  # the checks passed: the job runs
    executor = make_executor("local", request.options.parallelism) if plan.local_only \
        else make_executor(request.executor, request.options.parallelism,
                           **(request.executor_options or {}))
    if isinstance(cancel, JobControl):
        cancel.attach_executor(executor)
    journal = None
    if not request.options.dryrun:
        lock_file = lock.lock_path(ensemble.path)
        journal = Journal(
            ensemble,
            request.workflow,
            request.options,
            request.plan_options.given(),
            start_instances=start_instances,
            resumes=resumed.job_id if resumed else None,
            on_job_id=lambda job_id: lock.update(lock_file, request.workflow, job_id),
            executor=executor.record,
            secret_digests=resumed.secret_digests if resumed else None,
            starts_on_submit=starts_on_submit(executor),
        )
        # what the plan left alone and why, for the job's page (the records keep only tasks)
        journal.data["planNotes"] = [{"target": n.target, "message": n.message}
                                     for n in plan.notes]
    start_commit = repo.head() if repo else None
    try:
        return _run_and_record(request, observer, cancel, ensemble, plan, resumed, executor,
                               journal, repo, start_commit, spec_changes)
    except OSError as exc:
        if exc.errno not in STORAGE_ERRNOS:
            raise
        started = journal is not None and journal.path is not None and journal.path.exists()
        raise storage_error(
            exc,
            "nothing was half-written; then run `unfurl resume` to record the job (and "
            "finish it)" if started else "nothing was run",
            keep_lock=started,
        ) from None


def _run_and_record(
    request: JobRequest,
    observer: Observer | None,
    cancel: threading.Event | None,
    ensemble: Ensemble,
    plan: Plan,
    resumed: Resumed | None,
    executor: Executor,
    journal: Any,
    repo: Repo | None,
    start_commit: str | None,
    spec_changes: list[Path],
) -> JobResult:
    """Run the plan, then record what it did (records, journal, commit). A dry run, or a
    job that changed nothing, records nothing: its journal is discarded when it succeeded
    and kept, resumable, when it did not."""
    start = resumed.instances if resumed else ensemble.instances
    before = {n: (str(i.status), str(i.state) if i.state else None) for n, i in start.items()}
    try:
        result = run_plan(
            ensemble,
            plan,
            request.options,
            executor,
            Observers(journal, observer),
            cancel,
            resumed=resumed,
            latest=records.previous_job_id(ensemble),
        )
    finally:
        if isinstance(cancel, JobControl) and cancel.forced.is_set():
            executor.abandon()  # force-cancel: leave running operations to finish
        else:
            executor.shutdown()
    result.start_commit = start_commit
    result.before = before
    if request.query:
        result.query = (request.query, evaluate_query(
            ensemble.topology, result.instances, request.query, result.secrets,
            ensemble.project_root))
    if journal is not None:
        journal.finished(result)
    if request.options.dryrun or not (result.changed_anything or resumed):
        if journal is not None and journal.path is not None:
            if result.state == JobState.succeeded:
                journal.discard()  # nothing ran: nothing to resume
            else:
                journal.mark_recorded()  # nothing to record, but resumable
        return result
    committing = repo is not None and request.options.commit
    # the records and the journal vouching for them: one step, whose last stage (the
    # journal) is forced to disk while git reads the files
    writes = yamlio.Writes(settle_later=committing)
    later: list[Callable[[], None]] = [writes.settle]  # done while git runs
    try:
        with writes:
            files = record_job(ensemble, result, request.options, spec_digest_at_start=None
                               if journal is None else journal.data.get("specDigest"),
                               writes=writes, cache_status=not committing)
            if journal is not None and journal.path is not None:
                writes.barrier()  # the journal says "recorded" once the records are on disk
                journal.mark_recorded(writes)
                files.extra.append(journal.path)
        if committing:
            later.append(partial(statusfile.remember, ensemble, files.status))
        return _commit(request, ensemble, result, resumed, repo, files, spec_changes, later)
    finally:
        _run_all(later)  # (done already, unless the commit failed before git ran)


def _run_all(later: list[Callable[[], None]]) -> None:
    """Each of ``later``, once, in order."""
    while later:
        later.pop(0)()


def _commit(request: JobRequest, ensemble: Ensemble, result: JobResult,
            resumed: Resumed | None, repo: Repo | None, files: records.JobFiles,
            spec_changes: list[Path], later: list[Callable[[], None]]) -> JobResult:
    """The recorded job committed (with ``--commit``), the next deploy planned meanwhile;
    ``later`` (the journal forced to disk, ensemble.yaml's text kept in the parse cache)
    done as git starts."""
    result.written = [str(p.relative_to(ensemble.project_root)) for p in files.all()]
    planning = None
    if (request.workflow in verdicts.REPEATED and result.state == JobState.succeeded
            and resumed is None and _rememberable(request)):  # the job is done: for the next
        written = files.status
        planning = _NextPlan(partial(
            verdicts.next_plan, ensemble, written.text, written.plain, request.workflow,
            request.plan_options.for_workflow(request.workflow)))

    failed: list[BaseException] = []

    def meanwhile() -> None:  # git runs: what waited for it done, the next plan begun
        try:
            _run_all(later)
        except BaseException as exc:  # raised once the commit is made: `git add` has
            failed.append(exc)  # staged the records, and left staged they would go into
            return  # the user's next commit
        if planning is not None:
            planning.begin()

    try:
        if repo is not None and request.options.commit:
            message = request.options.message or f"Updating status for job {result.job_id}"
            result.commit = repo.commit(files.all() + spec_changes, message, meanwhile)
            if failed:
                raise failed[0]
        elif repo is None and request.options.commit:
            result.not_committed = "not a git repository"
    except BaseException:
        if planning is not None:
            planning.join()  # not remembered: the job's commit failed
        raise
    found = planning.wait() if planning is not None else None
    if found is not None:  # committed: remembered only now, as a plan of a job that is done
        verdicts.remember(*found)
    return result


class _NextPlan(threading.Thread):
    """The next deploy's plan (:func:`~unfurl_lite.plan.verdicts.next_plan`), made while
    git commits the job: git's work is another process's, so the plan's CPU (0.4 s at
    N=10,000) overlaps it instead of following it. It begins once the first git process
    runs (:meth:`begin`, the commit's ``meanwhile``): begun before, it held the
    interpreter's lock while the job's thread waited for it to start git (3-8 ms of a
    N=200 deploy). It runs in a copy of the job's context (the render budget, as when it
    ran after the commit); what it raises is raised by :meth:`wait`."""

    def __init__(self, plan: Callable[[], Any]) -> None:
        super().__init__(name="unfurl-next-plan", daemon=True)
        self._plan = plan
        self._context = contextvars.copy_context()
        self._found: Any = None
        self._error: BaseException | None = None
        self._begun = False

    def begin(self) -> None:
        """Start the plan, once (a second call does nothing)."""
        if not self._begun:
            self._begun = True
            self.start()

    def run(self) -> None:
        try:
            self._found = self._context.run(self._plan)
        except BaseException as exc:  # handed to the job's thread by wait()
            self._error = exc

    def join(self, timeout: float | None = None) -> None:
        if self._begun:  # never begun: nothing to wait for
            super().join(timeout)

    def wait(self) -> Any:
        """The plan's verdict, made now if no git process began it."""
        self.begin()
        self.join()
        if self._error is not None:
            raise self._error
        return self._found


def record_job(
    ensemble: Ensemble, result: JobResult, options: JobOptions, append_log: bool = True,
    completing: bool = False, spec_digest_at_start: str | None = None,
    writes: yamlio.Writes | None = None, cache_status: bool = True,
) -> records.JobFiles:
    """Write the job's records. ``completing`` (recording a killed job): jobs.tsv gets only
    the job's lines it does not hold complete (an append torn by a crash or a power loss
    is completed from the journal, no line is written twice). ``spec_digest_at_start``:
    the spec's digest the journal took as the job started (the spec does not change while
    a job runs; the digest walks all of it: 17 ms at N=1,000), else taken now. ``writes``:
    the records join those (committed by the caller), else they are one step of their own
    (yamlio.Writes: forced to disk together). ``cache_status=False``: ensemble.yaml's new
    text is left for the caller to keep in the parse cache (statusfile.remember)."""
    if writes is None:
        with yamlio.Writes() as own:
            return record_job(ensemble, result, options, append_log, completing,
                              spec_digest_at_start, own, cache_status)
    root = ensemble.project_root
    confine_records(root, ensemble.jobs_log, options.allow_outside_paths)
    job_prefix = result.job_id[:8]
    label = result.started_at.strftime("%Y-%m-%d-%H-%M-%S")
    name = records.job_file_name(label, job_prefix)
    ran = [r for r in result.runs if r.ran]
    inline = ensemble.inline_log  # Unfurl's inline log: tasks go into ensemble.yaml's changes:
    changelog = f"{records.CHANGES_DIR}/{name}" if ran and not inline else None
    digest = spec_digest_at_start or spec_digest(ensemble.spec)
    job = records.job_entry(result, options.recorded, digest, changelog)
    key = key_provider(root)  # environment values' digests are keyed with the clone's key
    detailed = {id(run): records.task_entry(run, *_subject(ensemble, result, run), True, key)
                for run in result.runs if run.counted}
    summary_entries = [  # the same values: each entry is emitted once for both files
        records.summary_entry(detailed[id(r)]) if id(r) in detailed
        else records.task_entry(r, *_subject(ensemble, result, r), False, key) for r in ran]

    files = records.JobFiles(
        ensemble=ensemble.path,
        jobs_tsv=None if inline else ensemble.jobs_tsv,
        job_file=root / records.JOBS_DIR / name,
        changes_file=root / changelog if changelog else None,
    )
    records.write_job_files(
        files.job_file, files.changes_file, "../" + ensemble.path.name,
        [job, *detailed.values()], [job, *summary_entries], result.secrets, writes,
    )
    lines = [records.job_tsv_line(job)] + [
        records.task_tsv_line(entry, run) for run, entry in zip(ran, summary_entries, strict=True)
    ]
    if append_log and files.jobs_tsv is not None:  # False: a crashed job's lines are there
        if completing:
            lines = records.missing_lines(files.jobs_tsv, lines)
        if lines:
            records.append_tsv(files.jobs_tsv, lines, result.secrets, writes)
    forgotten = [n for n in result.plan.forget if n not in result.instances]
    files.status = statusfile.save_status(
        ensemble,
        lambda document: records.update_status(
            document, result.instances, result.effective, job,
            None if inline else ensemble.jobs_log, result.secrets, forgotten=forgotten,
            hosts=layout.host_instances(ensemble.topology.templates, result.instances),
            inline_changes=summary_entries if inline and append_log else None,
            outputs=topology_outputs(ensemble.topology, result.instances, result.secrets,
                                     ensemble.project_root,
                                     EnsembleMetadata(ensemble.path, result.job_id),
                                     keep=partial(keep_defaults_read, result.instances,
                                                  ensemble.topology)),
            inputs=topology_inputs(ensemble.topology, _declared_inputs(ensemble), result.secrets),
        ),
        writes,
        cache=cache_status,
    )
    return files


def _declared_inputs(ensemble: Ensemble) -> list[str]:
    service = ensemble.spec.get("service_template")
    topology = service.get("topology_template") if isinstance(service, dict) else None
    declared = topology.get("inputs") if isinstance(topology, dict) else None
    return [str(name) for name in declared] if isinstance(declared, dict) else []


def _subject(ensemble: Ensemble, result: JobResult, run: Any) -> tuple[Any, str]:
    """The instance a task ran on and its type: a relationship operation's is its
    relationship instance, as Unfurl records it."""
    relationship = relationships.relationship_instance(result.instances, run.task, attach=False)
    if relationship is not None:
        return relationship, full_name(relationships.relationship_type(run.task),
                                       "relationships")
    return result.instances.get(run.task.target), _type_of(ensemble, result, run.task.template)


def _type_of(ensemble: Ensemble, result: JobResult, template: str) -> str:
    tpl = ensemble.topology.templates.get(template) or result.plan.removed_templates.get(template)
    return tpl.type if tpl else ""
