"""A job whose process died (``kill -9``, a crash, a power cut) before its records were
all written: the one definition, read from its journal, that ``status``, the stale-lock
error, ``cancel`` and ``resume`` all use.

A killed job is one whose process is gone and whose journal is not marked recorded, if
it died while running (journal state ``started`` or one of the cancelling ones) or while writing its
records (some task has a changeId). ``resume`` records it as it stood, then finishes it.

A plain ``unfurl resume`` records the tasks that were running when the job died as failed
(whether they did their work is unknown); ``unfurl resume --force`` runs them again. So
the advice depends on whether tasks were in flight, and it is kept once resume has
recorded the job, until another job resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.record.liveness import pid_alive
from unfurl_lite.run.observer import RUNNING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.record.journal import JournalFile

#: journal states of a job that has not ended
UNFINISHED = tuple(sorted(RUNNING))
IN_FLIGHT_STATES = ("sent", "started")


def running(journal: JournalFile) -> bool:
    """The job has not ended and its process is alive."""
    return journal.state in UNFINISHED and pid_alive(journal.pid)


def killed(journal: JournalFile) -> bool:
    """Its process died before the job's records were all written."""
    if journal.recorded or pid_alive(journal.pid):
        return False
    return journal.state in UNFINISHED or any(t.get("changeId") for t in journal.tasks)


def newest_of_lineage(journals: list[JournalFile], journal: JournalFile) -> JournalFile:
    """The last job in the chain of resumes that starts at ``journal``."""
    resumed_by = {str(j.data.get("resumes")): j for j in journals if j.data.get("resumes")}
    seen = {journal.change_id}
    while (newer := resumed_by.get(journal.change_id)) is not None and newer.change_id not in seen:
        seen.add(newer.change_id)
        journal = newer
    return journal


def not_resumed(journals: list[JournalFile]) -> list[JournalFile]:
    """The journals no other job resumed: the newest job of each lineage."""
    resumed = {j.data.get("resumes") for j in journals}
    return [j for j in journals if j.change_id not in resumed]


def newest_killed(journals: list[JournalFile]) -> JournalFile | None:
    """The newest job nobody resumed that was killed, whether or not ``resume`` has
    recorded it since: a resume killed right after recording it leaves a recorded job
    whose tasks still wait for ``--force``, and its advice must not be lost."""
    return next((j for j in reversed(not_resumed(journals))
                 if killed(j) or waiting_for_force(j)), None)


def in_flight(journal: JournalFile) -> list[dict[str, object]]:
    """The tasks that were running when this journal's job was killed: still ``sent`` or
    ``started`` when it is not recorded yet, recorded failed with ``interrupted`` (and not
    carried from an earlier job) once resume recorded it."""
    return [t for t in journal.tasks if t.get("state") in IN_FLIGHT_STATES
            or (t.get("interrupted") and not t.get("carried") and t.get("state") == "failed")]


def waiting_for_force(journal: JournalFile) -> bool:
    """Recorded by a resume as killed, and not resumed since, with tasks that only
    ``unfurl resume --force`` runs again."""
    return bool(journal.recorded and journal.data.get("killed") and in_flight(journal))


def lock_job_state(root: Path, change_id: str | None) -> str:
    """What a stale lock's job left: ``none`` (no journal: nothing ran), ``recorded`` (it
    was killed while committing), ``unrecorded``, or ``unreadable`` (a damaged journal:
    only a successful resume may then clear its lock)."""
    # start-up: keeps record.journal (68 modules) off `check` until lock_job_state() runs
    from unfurl_lite.record.journal import journal_path, list_journals

    if not change_id:
        return "none"
    damaged: list[Path] = []
    journals = list_journals(root, damaged)
    journal = next((j for j in journals if j.change_id == change_id), None)
    if journal is None:
        try:
            expected = journal_path(root, change_id)
        except ValueError:  # the lock names no changeId: nothing of it to guard
            return "none"
        return "unreadable" if expected in damaged else "none"
    return "recorded" if journal.recorded else "unrecorded"


@dataclass(frozen=True)
class Interrupted:
    """A job that died without finishing: who it was and what was running."""
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


def resume_command(journal: JournalFile) -> str:
    """What finishes a job killed before it was recorded, in the words ``unfurl status``,
    ``history``, the dashboard and the lock's error all give: ``--force`` when tasks were
    running when it died."""
    in_flight = tuple(f"{t.get('target')} {t.get('operation')}" for t in journal.tasks
                      if t.get("state") in IN_FLIGHT_STATES)
    return Interrupted(journal.change_id, str(journal.data.get("workflow") or "?"),
                       journal.pid, in_flight).command


def find(project_root: Path) -> Interrupted | None:
    """The newest killed job that nobody has resumed (see :func:`killed`)."""
    # start-up: keeps record.journal (68 modules) off `check`, `undeploy` until find() runs
    from unfurl_lite.record.journal import list_journals

    try:
        journals = list_journals(project_root)
    except Exception:  # a damaged journal must not break status or a lock error
        return None
    journal = newest_killed(journals)
    if journal is None:
        return None
    running = tuple(f"{t.get('target')} {t.get('operation')}" for t in in_flight(journal))
    return Interrupted(journal.change_id, str(journal.data.get("workflow") or "?"),
                       journal.pid, running)
