"""What a finished job tells the person who ran it, as data every output mode renders the
same way: where each task ended (a partition that adds up), what the job found or changed
in each instance it touched, and the tasks that did not simply succeed, each said once.

Unfurl's summary line (``5 tasks (3 changed, 1 ok, …)``) stays as Unfurl writes it: its
counts overlap (a blocked task can be "changed" too) and a cancelled job's unrun tasks are
in none of them. The partition puts every counted task in exactly one outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from unfurl_lite.run.observer import TaskState
from unfurl_lite.run.outcome import (
    JobResult,
    TaskRun,
    found_unhealthy,
    partition_text,
    run_outcome,
    unfurl_count,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: why a task that never started did not, by its outcome ("{it}": it, or they)
NOT_STARTED = {
    "cancelled": "the job was cancelled before {it} started",
    "not run": "the job ended before {it} started",
}
#: tasks a grouped footer line names (the rest are counted)
NAMED = 3
#: workflows whose point is what they found: their result lists every instance they looked at
FINDING = ("check", "discover")


@dataclass(frozen=True)
class InstanceChange:
    """One instance the job touched: its status and state now, and before the job."""

    instance: str
    status: str
    state: str
    was: str | None  # its status before the job; None: the job brought it (discovered)
    was_state: str | None

    @property
    def change(self) -> str:
        if self.was is None:
            return "new"
        if self.was != self.status:
            return f"{self.was} -> {self.status}"
        if (self.was_state or "") != self.state:
            return f"{self.was_state or 'initial'} -> {self.state or '-'}"
        return "unchanged"

    def as_json(self) -> dict[str, Any]:
        return {"instance": self.instance, "status": self.status, "state": self.state or None,
                "was": self.was, "wasState": self.was_state, "change": self.change}


@dataclass(frozen=True)
class Line:
    """A line of the job's footer: one task that failed or was blocked (with its message),
    or every task that ended another way for the same reason."""

    outcome: str
    tasks: tuple[str, ...]  # "target Interface.operation"
    why: str

    def text(self) -> str:
        one = len(self.tasks) == 1
        why = self.why.replace("{it}", "it" if one else "they")
        said = f": {why}" if why else ""
        if self.outcome == "found":  # a check found its instance unhealthy
            return f"{self.tasks[0]}: found {why}"
        if one:
            return f"{self.tasks[0]}: {self.outcome}{said}"
        named = ", ".join(self.tasks[:NAMED]) + (
            f" and {len(self.tasks) - NAMED} more" if len(self.tasks) > NAMED else "")
        return f"{len(self.tasks)} tasks {self.outcome}{said} ({named})"


def task_name(run: TaskRun) -> str:
    operation = run.task.operation
    name = operation.qualified_name if operation else "(no operation: state only)"
    extra = f" -> {run.task.peer}" if run.task.peer and run.task.source else ""
    return f"{run.task.target} {name}{extra}"


def why(run: TaskRun, outcome: str) -> str:
    """Its message without the outcome said again (``skipped: healthy`` is ``healthy``)."""
    message = (run.message or "").strip()
    for prefix in (f"{outcome}: ", f"{run.state}: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    return message


def partition_line(result: JobResult) -> str:
    """``5 tasks: 1 ok, 1 failed, 3 blocked, 0 cancelled, 0 skipped, 0 not run``."""
    return partition_text(result.partition)


def summary_notes(result: JobResult) -> list[str]:
    """Where Unfurl's summary line and the partition count a task differently, which tasks
    and why, so that no one reads "1 failed" beside "0 failed" without the reason: Unfurl
    counts a task by its instance's status when it ended (a repaired create succeeds while
    its instance stays ``error`` until its configure ends), and a task that failed without
    saying whether it changed anything as "unknown"."""
    differ: dict[tuple[str, str], list[str]] = {}
    for run in result.runs:
        theirs = unfurl_count(run) if run.counted else None
        ours = run_outcome(run, str(result.state))
        if theirs is not None and theirs != ours:
            differ.setdefault((theirs, ours), []).append(task_name(run))
    notes: list[str] = []
    for (theirs, ours), tasks in differ.items():
        here = "succeeded" if ours == "ok" else ours
        why = ("it failed without saying whether it changed its instance" if theirs == "unknown"
               else "its instance was still in error when it ended; Unfurl counts a task by "
                    "its instance's status")
        count = "1 task" if len(tasks) == 1 else f"{len(tasks)} tasks"
        notes.append(f"note: Unfurl's count (first line) calls {count} {theirs} that {here} "
                     f"here: {_named(tasks)} ({why})")
    return notes


def _named(tasks: list[str]) -> str:
    return ", ".join(tasks[:NAMED]) + (f" and {len(tasks) - NAMED} more" if len(tasks) > NAMED
                                       else "")


def footer(result: JobResult) -> list[Line]:
    """What did not simply succeed, each task once: a line per failed or blocked task and
    per check that found its instance unhealthy, and per check skipped because what it
    requires is not operational; skipped, cancelled and not-run tasks grouped by why."""
    lines: list[Line] = []
    grouped: dict[tuple[str, str], list[str]] = {}
    for run in result.runs:
        if found_unhealthy(run):
            lines.append(Line("found", (task_name(run),), str(run.status)))
        if run.state == TaskState.skipped and run.task.needs_operational and not run.counted:
            # uncounted, as Unfurl's summary leaves it out; said, as Unfurl logs it
            lines.append(Line("skipped", (task_name(run),), why(run, "skipped")))
        if not run.counted or run.state == TaskState.succeeded:
            continue
        outcome = run_outcome(run, str(result.state))
        reason = why(run, outcome)
        if outcome in ("failed", "blocked"):
            lines.append(Line(outcome, (task_name(run),), reason))
        else:
            key = (outcome, reason or NOT_STARTED.get(outcome, ""))
            grouped.setdefault(key, []).append(task_name(run))
    lines += [Line(outcome, tuple(tasks), reason) for (outcome, reason), tasks in grouped.items()]
    return lines


def instance_changes(result: JobResult) -> list[InstanceChange]:
    """Every instance a task of the job targeted, or the job brought (discovered), in the
    order the job first touched them, with its status before and after."""
    names = dict.fromkeys(run.task.target for run in result.runs if run.counted)  # in order
    names.update(dict.fromkeys(n for n in result.instances if n not in result.before))
    changes: list[InstanceChange] = []
    for name in names:
        instance = result.instances.get(name)
        before = result.before.get(name)
        changes.append(InstanceChange(
            instance=name,
            status=str(instance.status) if instance else "absent",
            state=str(instance.state) if instance and instance.state else "",
            was=before[0] if before else None,
            was_state=before[1] if before else None,
        ))
    return changes


def shows_instances(result: JobResult) -> bool:
    """check and discover: their result is what they found in each instance."""
    return result.workflow in FINDING
