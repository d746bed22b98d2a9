"""A job whose process died (``kill -9``, a crash, a power cut) before it finished: found
from its journal, so that ``status`` and the stale-lock error can say so and name the
command that finishes it.

A plain ``unfurl resume`` records the tasks that were running when the job died as failed
(whether they did their work is unknown); ``unfurl resume --force`` runs them again. So
the advice depends on whether tasks were in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

IN_FLIGHT_STATES = ("sent", "started")


@dataclass(frozen=True)
class Interrupted:
    change_id: str
    workflow: str
    pid: int
    in_flight: tuple[str, ...]  # "target operation" of the tasks running when it died

    @property
    def command(self) -> str:
        return "unfurl resume --force" if self.in_flight else "unfurl resume"

    def advice(self) -> str:
        if not self.in_flight:
            return f"finish it with: {self.command}"
        count = len(self.in_flight)
        tasks = f"{count} task was" if count == 1 else f"{count} tasks were"
        them = "it" if count == 1 else "them"
        return (f"finish it with: {self.command} ({tasks} running when it died: "
                f"{', '.join(self.in_flight)}; --force runs {them} again, a plain "
                f"unfurl resume records {them} failed)")

    def sentence(self) -> str:
        return (f"Job {self.change_id} ({self.workflow}) was interrupted: its process "
                f"(pid {self.pid}) died before it finished; {self.advice()}.")


def find(project_root: Path) -> Interrupted | None:
    """The newest job whose process died while it ran and that nobody has finished."""
    from unfurl_lite.record.journal import list_journals
    from unfurl_lite.record.resume import UNFINISHED, is_killed

    try:
        journals = list_journals(project_root)
    except Exception:  # a damaged journal must not break status or a lock error
        return None
    resumed = {j.data.get("resumes") for j in journals}
    for journal in reversed(journals):
        if journal.change_id in resumed or journal.recorded:
            continue
        if journal.state in UNFINISHED and is_killed(journal):
            in_flight = tuple(
                f"{t.get('target')} {t.get('operation')}" for t in journal.tasks
                if t.get("state") in IN_FLIGHT_STATES
            )
            return Interrupted(journal.change_id, str(journal.data.get("workflow") or "?"),
                               journal.pid, in_flight)
    return None
