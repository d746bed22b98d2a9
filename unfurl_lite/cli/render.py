"""How plans, progress and results look: a rich tree and live progress on a terminal,
plain lines otherwise, JSON for scripts. Nothing here decides anything.
"""

from __future__ import annotations

import sys
import threading

from unfurl_lite.run.observer import Observer, TaskState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.plan.tasks import Plan, Task
    from unfurl_lite.run.outcome import JobResult, TaskRun


def task_label(task: Task) -> str:
    op = task.operation
    name = op.qualified_name if op else "(no operation: state only)"
    if op is None and task.reason.startswith("step:") and task.done_state:
        name = f"set_state {task.done_state}"  # a TOSCA workflow's set_state activity
    extra = f" -> {task.peer}" if task.peer and task.source else ""
    return f"{name}{extra}"


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "workflow": plan.workflow,
        "tasks": [
            {
                "task": t.number,
                "target": t.target,
                "template": t.template,
                "operation": t.operation.qualified_name if t.operation else None,
                "reason": t.reason,
                "after": list(t.after),
                **({"source": t.source, "relationshipTarget": t.peer} if t.source else {}),
                **({"skipWhen": str(t.skip_when)} if t.skip_when else {}),
                **({"setState": str(t.done_state)} if t.done_state and not t.operation else {}),
            }
            for t in plan.tasks
        ],
        "notes": [{"target": n.target, "message": n.message} for n in plan.notes],
        "new_instances": sorted(plan.new_instances),
    }


def guard_text(task: Any) -> str:
    """When a guarded task runs, for the plan (heal, update and scale decide at run time)."""
    guard = task.guard
    if guard is None:
        return ""

    def tasks(numbers: tuple[int, ...]) -> str:
        return ("task " if len(numbers) == 1 else "one of tasks ") + ",".join(map(str, numbers))

    parts: list[str] = []
    if guard.if_failed:
        parts.append(f"if {tasks(guard.if_failed)} failed")
    if guard.if_ran:
        parts.append(f"if {tasks(guard.if_ran)} ran")
    if guard.unless_failed:
        parts.append(f"unless {tasks(guard.unless_failed)} failed")
    return f" (only {'; '.join(parts)})" if parts else ""


def plan_text(plan: Plan, title: str | None = None) -> str:
    lines = [f"Plan for {title or plan.workflow}:"]
    if not plan.tasks:
        lines.append("  nothing to do")
    for target, tasks in plan.by_target().items():
        lines.append(f"  {target} ({tasks[0].reason})")
        for task in tasks:
            after = f" after {','.join(map(str, task.after))}" if task.after else ""
            lines.append(
                f"    {task.number}. {task_label(task)} [{task.reason}]{after}{guard_text(task)}"
            )
    for note in plan.notes:
        lines.append(f"  {note.target}: {note.message}")
    counted = plan_count(plan)
    if counted:
        lines.append(f"  {counted}")
    return "\n".join(lines)


def plan_count(plan: Plan) -> str:
    """How many of the plan's tasks the job's summary will count, when steps that only
    set a state (not counted, as in Unfurl) would make the two disagree."""
    steps = sum(1 for t in plan.tasks if t.is_passthrough)
    if not steps:
        return ""
    tasks = len(plan.tasks) - steps
    return (f"{tasks} task{'s' if tasks != 1 else ''} to count; {steps} "
            f"step{'s' if steps != 1 else ''} only set a state")


def plan_tree(plan: Plan, title: str | None = None) -> Any:
    # start-up: keeps rich (59 modules) off `plan`, `deploy`, `redeploy` until plan_tree() runs
    from rich.markup import escape
    from rich.tree import Tree

    tree = Tree(f"[bold]Plan for {escape(title or plan.workflow)}[/bold]")
    if not plan.tasks:
        tree.add("[dim]nothing to do[/dim]")
    for target, tasks in plan.by_target().items():
        branch = tree.add(f"[bold cyan]{target}[/bold cyan] ({tasks[0].reason})")
        for task in tasks:
            after = f" [dim]after {','.join(map(str, task.after))}[/dim]" if task.after else ""
            branch.add(
                f"{task.number}. {task_label(task)} [yellow]{task.reason}[/yellow]{after}"
                f"[dim]{escape(guard_text(task))}[/dim]"
            )
    for note in plan.notes:
        tree.add(f"[dim]{note.target}: {note.message}[/dim]")
    counted = plan_count(plan)
    if counted:
        tree.add(f"[dim]{counted}[/dim]")
    return tree


def idle_json(workflow: str, dryrun: bool) -> dict[str, Any]:
    """A job with nothing to do, in :func:`result_json`'s keys (a script reads one shape);
    its instances are left out: a remembered plan answers without loading the model."""
    # start-up: keeps run.outcome (the job's model) off a no-op redeploy's text output
    from unfurl_lite.run.outcome import partition, summary_counts

    return {"changeId": None, "workflow": workflow, "state": "succeeded", "status": "ok",
            "summary": "nothing to do", "counts": summary_counts([]), "partition": partition(()),
            "summaryNotes": [], "commit": None, "notCommitted": None, "dryrun": dryrun,
            "duration": 0.0, "tasks": [], "notes": [], "changes": []}


def result_json(result: JobResult) -> dict[str, Any]:
    """A finished job as ``--json`` gives it: one document with the job's outcome and each
    task's, redacted, in the keys scripts read."""
    # start-up: keeps api.report (65 modules) off `plan` until result_json() runs
    from unfurl_lite.api import report
    from unfurl_lite.security.redaction import redact

    return {
        "changeId": result.job_id,
        "workflow": result.workflow,
        "state": str(result.state),
        "status": str(result.status),
        "summary": result.summary,
        "counts": result.counts,
        "partition": result.partition,
        "summaryNotes": report.summary_notes(result),
        "commit": result.commit,
        "notCommitted": result.not_committed,
        "dryrun": result.dryrun,
        **({"renderErrors": result.render_errors} if result.render_errors else {}),
        "duration": round((result.ended_at - result.started_at).total_seconds(), 3),
        "tasks": [
            {
                "changeId": r.change_id,
                "target": r.task.target,
                "operation": r.task.operation.qualified_name if r.task.operation else None,
                "reason": r.task.reason,
                "state": str(r.state),
                "status": str(r.status) if r.status else None,
                "changed": r.changed,
                "attempts": r.attempts,
                "message": redact(r.message, result.secrets) if r.message else None,
                **({"output": command_output(r, result)} if result.workflow == "run" else {}),
                **({"outputs": agent_report(r, result)}
                   if result.workflow == "install_new_agents" else {}),
            }
            for r in result.runs
            if r.counted
        ],
        "instances": {
            name: {
                "status": str(inst.status),
                "state": str(inst.state) if inst.state else None,
                "effective": str(result.effective.get(name, inst.status)),
            }
            for name, inst in result.instances.items()
        },
        "notes": [{"target": n.target, "message": n.message} for n in result.plan.notes],
        "changes": [c.as_json() for c in report.instance_changes(result)],
    }


OUTCOME_STYLE = {
    "ok": "green",
    "failed": "red",
    "blocked": "magenta",
    "skipped": "dim",
    "cancelled": "yellow",
    "not run": "yellow",
}


def summary_table(result: JobResult) -> Any:
    """One row per counted task, each cell whole but the target's, which a narrow terminal
    shortens with an ellipsis (nothing is wrapped mid-word): the messages, naming their
    instance whole, are in the footer under it, where they have the terminal's width."""
    # start-up: keeps rich (50 modules) off `plan`, `deploy`, `redeploy` until summary_table() runs
    from rich import box
    from rich.table import Table

    from unfurl_lite.run.outcome import run_outcome  # start-up: keeps run.outcome off `plan`

    table = Table(title=f"Job {result.job_id} ({result.workflow}): {result.state}",
                  box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    rows: list[tuple[str, ...]] = []
    styles: list[str] = []
    for r in result.runs:
        if not r.counted:
            continue
        outcome = run_outcome(r, str(result.state))
        styles.append(OUTCOME_STYLE.get(outcome, ""))
        rows.append((r.change_id or "-", r.task.target, task_label(r.task), r.task.reason,
                     outcome, str(r.status or "")))
    columns = ("task", "target", "operation", "reason", "outcome", "status")
    for index, column in enumerate(columns):
        # every column but the target keeps its longest cell whole: a narrow terminal
        # shortens instance names (the footer names them whole), never `fa…` for failed
        whole = max([len(column), *(len(row[index]) for row in rows)])
        table.add_column(column, no_wrap=column != "target", overflow="ellipsis",
                         min_width=None if column == "target" else whole)
    for row, style in zip(rows, styles, strict=True):
        outcome = row[4]
        table.add_row(*row[:4], f"[{style}]{outcome}[/{style}]" if style else outcome,
                      row[5])
    return table


def summary_text(result: JobResult) -> str:
    """Unfurl's summary line, the partition that adds up, the commit, then what did not
    simply succeed (each task once, messages whole and redacted) and, for check and
    discover, what they found in each instance."""
    from unfurl_lite.api import report  # start-up: keeps api.report (65 modules) off `plan`
    duration = (result.ended_at - result.started_at).total_seconds()
    head = (
        f"Job {result.job_id} {result.workflow} {result.state} "
        f"(status {result.status}) in {duration:.2f}s: {result.summary}"
    )
    if result.dryrun:
        head += " [dry run: nothing was recorded]"
    if result.render_errors:  # nothing ran: why, and nothing else to say
        # start-up: keeps run.render_phase (77 modules) off `plan` until summary_text() runs
        from unfurl_lite.run.render_phase import ABORT_MESSAGE
        return "\n".join([f"{ABORT_MESSAGE}:", *(f"  {_short(e, result)}"
                                                  for e in result.render_errors),
                          f"Job {result.job_id} {result.workflow} {result.state} "
                          "(status error): no tasks ran, nothing was recorded"])
    lines = [head, report.partition_line(result), *report.summary_notes(result)]
    if result.commit:
        lines.append(f"committed {result.commit[:12]}")
    elif result.not_committed:
        lines.append(f"not committed: {result.not_committed}")
    lines += [f"  {_short(line.text(), result)}" for line in report.footer(result)]
    if result.workflow in report.FINDING:
        lines += [f"  {n.target}: {n.message}" for n in result.plan.notes]
    if str(result.state) == "cancelled" and not result.dryrun:
        lines.append("Finish it with: unfurl resume")
    return "\n".join(lines)


def changes_table(result: JobResult, total: int | None) -> str:
    """What check or discover found in each instance, and what it was before: the point
    of those jobs, in every output mode (Unfurl prints a table of them too)."""
    # start-up: keeps api.report, cli.tables (65 modules) off `plan` until changes_table() runs
    from unfurl_lite.api import report
    from unfurl_lite.cli.tables import Column, plain

    changes = report.instance_changes(result)
    if not changes or not report.shows_instances(result):
        return ""
    columns = [Column("INSTANCE", keep=True), Column("STATUS", keep=True), Column("STATE"),
               Column("CHANGE")]
    rows = [[c.instance, c.status, c.state, c.change] for c in changes]
    return plain("", columns, rows, total)


def query_text(expression: str, value: Any) -> str:
    """A ``--query``'s result, as Unfurl prints it."""
    if value is None:
        return f"Query: {expression}\nNo results found"
    return f"Query: {expression}\nResult:\n{value}"


def command_output(run: TaskRun, result: JobResult) -> dict[str, Any] | None:
    """What an ad hoc task's command printed (redacted), or None if it ran no command."""
    # start-up: keeps security.redaction (6 modules) off `plan` until command_output() runs
    from unfurl_lite.security.redaction import redact_text

    outputs = run.result.outputs if run.result else {}
    if not any(key in outputs for key in ("stdout", "stderr", "returncode")):
        return None
    return {
        "returncode": outputs.get("returncode"),
        "stdout": redact_text(str(outputs.get("stdout") or ""), result.secrets),
        "stderr": redact_text(str(outputs.get("stderr") or ""), result.secrets),
    }


def agent_report(run: Any, result: JobResult) -> dict[str, Any]:
    """install_new_agents' report for one instance: its queue, the workers serving it, the
    one it started (the task's outputs, without what it printed)."""
    # start-up: keeps security.redaction (6 modules) off `plan` until agent_report() runs
    from unfurl_lite.security.redaction import redact

    outputs = run.result.outputs if run.result is not None else {}
    return redact({k: v for k, v in outputs.items() if k not in ("stdout", "stderr")},
                  result.secrets)


def run_output_text(result: JobResult) -> str:
    """An ad hoc run's point is what its command printed: each task's stdout and stderr,
    under a line naming the task, as Unfurl shows a run's output on the console."""
    blocks: list[str] = []
    for r in result.runs:
        output = command_output(r, result) if r.counted else None
        if output is None:
            continue
        code = output["returncode"]
        head = f"[{r.change_id or '-'}] {r.task.target}: {task_label(r.task)} output"
        blocks.append(head + (f" (exit code {code}):" if code not in (None, 0) else ":"))
        if output["stdout"]:
            blocks.append(output["stdout"].rstrip("\n"))
        if output["stderr"]:
            blocks.append("stderr:\n" + output["stderr"].rstrip("\n"))
        if not output["stdout"] and not output["stderr"]:
            blocks.append("(no output)")
    return "\n".join(blocks)


def _short(message: str | None, result: JobResult) -> str:
    # start-up: keeps security.redaction (6 modules) off `plan`, `redeploy` until _short() runs
    from unfurl_lite.security.redaction import redact_text

    if not message:
        return ""
    text = redact_text(message, result.secrets)
    return text if len(text) < 500 else text[:497] + "..."


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


class LineObserver(Observer):
    """One line per task event: for logs, pipes and CI."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.lock = threading.Lock()
        self.width: int | None = None
        self.terminal: bool | None = None  # asked once: a pipe stays a pipe for the job

    def _emit(self, text: str) -> None:
        # start-up: keeps cli.tables (12 modules) off `plan`, `redeploy`, `check` until _emit() runs
        from unfurl_lite.cli.tables import prose, stream_width, terminal_width

        with self.lock:
            if self.terminal is None:
                self.width = stream_width(self.stream)
                self.terminal = self.width is not None and _is_terminal(self.stream)
            width = terminal_width() if self.terminal else self.width  # a terminal resizes
            print(prose(text, width), file=self.stream, flush=True)

    def task_started(self, run: TaskRun) -> None:
        self._emit(f"[{run.change_id}] {run.task.target}: {task_label(run.task)} started")

    def task_finished(self, run: TaskRun) -> None:
        from unfurl_lite.api import report  # start-up: keeps api.report (65 modules) off `plan`
        if not run.counted:
            return
        why = report.why(run, str(run.state)) if run.state != TaskState.succeeded else ""
        detail = f": {why}" if why else ""
        self._emit(
            f"[{run.change_id or '-'}] {run.task.target}: "
            f"{task_label(run.task)} {run.state}{detail}"
        )

    def task_rescheduled(self, run: TaskRun, delay: float) -> None:
        self._emit(
            f"[{run.change_id}] {run.task.target}: rescheduled in {delay:.1f}s ({run.message})"
        )

    def job_notice(self, message: str) -> None:
        self._emit(f"[-] {message}")


class ProgressObserver(Observer):
    """A live progress bar with the running tasks, for a terminal."""

    def __init__(self, console: Any, total: int) -> None:
        # start-up: keeps rich (76 modules) off `plan`, `deploy`, `redeploy` until __init__() runs
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.bar = self.progress.add_task("running", total=total)
        self.running: dict[str, str] = {}
        self.lock = threading.Lock()

    def __enter__(self) -> ProgressObserver:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _describe(self) -> None:
        names = ", ".join(list(self.running.values())[:4])
        more = f" +{len(self.running) - 4}" if len(self.running) > 4 else ""
        self.progress.update(self.bar, description=f"running {names}{more}" if names else "waiting")

    def task_started(self, run: TaskRun) -> None:
        with self.lock:
            self.running[run.change_id or ""] = f"{run.task.target}.{run.task.name}"
            self._describe()

    def job_notice(self, message: str) -> None:
        from rich.markup import escape  # start-up: keeps rich (34 modules) off `plan`, `deploy`

        with self.lock:
            self.progress.console.print(f"[yellow]{escape(message)}[/yellow]")

    def task_finished(self, run: TaskRun) -> None:
        with self.lock:
            self.running.pop(run.change_id or "", None)
            if run.counted:
                self.progress.advance(self.bar)
            self._describe()
            if run.state in (TaskState.failed, TaskState.blocked):
                from rich.markup import escape  # start-up: keeps rich (34 modules) off `plan`

                self.progress.console.print(
                    f"[red]{escape(run.task.target)} {escape(task_label(run.task))}: "
                    f"{run.state}[/red]" + (f": {escape(run.message)}" if run.message else "")
                )
