"""What a job writes, counted (never timed): at most two journal events per task, the
journal rewritten whole once, and each record file written once per job.

Every write is paid for N times in a job of N tasks (events) or by every job (rewrites of
files that grow with the ensemble); a change that adds one fails here, on a busy machine
as on an idle one.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, shell_node

TASKS = 6


class Writes:
    """Journal events per task, and whole-file writes per path (with whether the file was
    there before: a rewrite, or its creation)."""

    def __init__(self) -> None:
        self.events: Counter[int] = Counter()
        self.other_events: list[dict[str, Any]] = []
        self.files: Counter[str] = Counter()
        self.rewrites: Counter[str] = Counter()
        self.appends: Counter[str] = Counter()
        self.task_events: list[dict[str, Any]] = []
        self.event_writes = 0  # writes of the events file (one may carry several events)
        self.writers: Counter[str] = Counter()  # those writes by the thread that made them


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    from unfurl_lite.load import yamlio
    from unfurl_lite.record import journal_format

    seen = Writes()
    append, atomic_write, append_lines = (journal_format.EventLog.append, yamlio.atomic_write,
                                          yamlio.append_lines)
    replace_in, append_in = yamlio.Writes.replace, yamlio.Writes.append_lines
    event_write = journal_format.EventLog._write_locked

    def counted_append(self: Any, event: dict[str, Any], seq: int, hold: bool = False,
                       covered: bool = False) -> None:
        task = event.get("task")
        if isinstance(task, dict):
            seen.events[task["number"]] += 1
            seen.task_events.append(task)
        else:
            seen.other_events.append(event)
        append(self, event, seq, hold, covered)

    def counted_event_write(self: Any) -> None:
        seen.event_writes += 1
        seen.writers[threading.current_thread().name] += 1
        event_write(self)

    def counted_write(path: Path, *args: Any, **kwargs: Any) -> None:
        note(path)
        atomic_write(path, *args, **kwargs)

    def counted_lines(path: Path, *args: Any, **kwargs: Any) -> None:
        seen.appends[Path(path).name] += 1
        append_lines(path, *args, **kwargs)

    def note(path: Path) -> None:  # a write of a group (yamlio.Writes), as one of its own
        name = f"{Path(path).parent.name}/{Path(path).name}"
        seen.files[name] += 1
        if Path(path).exists():
            seen.rewrites[name] += 1

    def counted_replace(self: Any, path: Path, *args: Any, **kwargs: Any) -> None:
        note(path)
        replace_in(self, path, *args, **kwargs)

    def counted_group_lines(self: Any, path: Path, *args: Any, **kwargs: Any) -> None:
        seen.appends[Path(path).name] += 1
        append_in(self, path, *args, **kwargs)

    monkeypatch.setattr(journal_format.EventLog, "append", counted_append)
    monkeypatch.setattr(journal_format.EventLog, "_write_locked", counted_event_write)
    monkeypatch.setattr(yamlio, "atomic_write", counted_write)
    monkeypatch.setattr(yamlio, "append_lines", counted_lines)
    monkeypatch.setattr(yamlio.Writes, "replace", counted_replace)
    monkeypatch.setattr(yamlio.Writes, "append_lines", counted_group_lines)
    return seen


def _deploy(project: Project, invoke: Invoke, *args: str) -> None:
    nodes = "".join(shell_node(f"n{i}", "exit 0") for i in range(TASKS))
    project.write(ensemble_yaml(nodes))
    result = invoke("deploy", "--approve", *args)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_a_task_is_at_most_two_journal_events(
    project: Project, invoke: Invoke, writes: Writes, jobs: str
) -> None:
    """Written before it is sent (its full record) and when it ends; "sending", "sent" and
    "started" are one event when the executor starts the operation as it is sent. A
    command's start event (and the outcomes held before it) is written by the thread that
    starts the command, just before it does: the job's own thread writes events only when
    it waits with no start to come, and at its end (the last outcome, the job's state)."""
    _deploy(project, invoke, "--jobs", jobs)
    assert len(writes.events) == TASKS
    assert max(writes.events.values()) <= 2
    assert writes.other_events == [{"state": "succeeded", "status": "ok"}]  # the job's end
    assert writes.event_writes <= sum(writes.events.values()) + 1
    if jobs == "1":  # each outcome goes out with the next task's start: one write a task
        assert writes.event_writes <= TASKS + 2
        assert writes.writers[threading.current_thread().name] <= 2, writes.writers



def test_an_outcome_event_says_only_what_changed_and_reads_back_whole(
    project: Project, invoke: Invoke, writes: Writes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event a task's outcome writes holds the fields that changed since its first
    (not the inputs it was sent with again), its first leaves out the fields at their
    defaults; the journal read back from those events, as resume reads a killed job's, has
    every task's whole record."""
    from unfurl_lite.record import journal, journal_format

    recorded: list[journal.JournalFile] = []
    real = journal.Journal.mark_recorded

    def read_first(self: journal.Journal, *args: Any) -> None:  # the events, before the
        assert self.path is not None  # final rewrite
        recorded.append(journal.read_journal(self.path))
        real(self, *args)

    monkeypatch.setattr(journal.Journal, "mark_recorded", read_first)
    _deploy(project, invoke)
    first: dict[int, dict[str, Any]] = {}
    for event in writes.task_events:
        if event["number"] not in first:
            first[event["number"]] = event
            assert "inputs" in event and "result" not in event
            assert not {"message", "retries", "carried", "interrupted", "endedAt",
                        "status", "worker"} & event.keys(), event
        else:
            assert "inputs" not in event and "digest" not in event
            assert event["result"]["success"] and event["state"] == "succeeded"
            assert {"number", "target", "operation"} <= event.keys()
    [read] = recorded
    assert [t["state"] for t in read.tasks] == ["succeeded"] * TASKS
    assert all(t["inputs"] == {"command": "exit 0"} and t["digest"] and t["startedAt"]
               and t["result"]["success"] for t in read.tasks)
    assert all(journal_format.TASK_DEFAULTS.keys() <= t.keys() and t["retries"] == []
               and t["message"] is None and t["carried"] is False for t in read.tasks)


def test_the_journal_is_rewritten_whole_once_and_each_record_written_once(
    project: Project, invoke: Invoke, writes: Writes
) -> None:
    _deploy(project, invoke)
    journals = [n for n in writes.files if n.startswith("jobs/journal")]
    assert len(journals) == 1
    [journal] = journals
    assert writes.files[journal] == 2 and writes.rewrites[journal] == 1  # created, then once
    records = {n: c for n, c in writes.files.items() if n != journal}
    assert records.pop("project/ensemble.yaml") == 1
    assert sorted(records) == sorted(f"{p.parent.name}/{p.name}"
                                     for p in project.root.glob("*/job*.yaml"))
    assert len(records) == 2
    assert set(records.values()) == {1}  # jobs/job...yaml and changes/job...yaml
    assert writes.appends == {"jobs.tsv": 1}
    assert not journal_events_left(project.root)


def test_a_task_record_is_made_whole_once_and_reused_by_its_outcome_and_the_final_rewrite(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task's full record (its inputs redacted) is made for its first event; its
    outcome's is that one with the fields that changed made again (the inputs are not
    redacted again); the journal's first write holds only which task it is, and its
    final rewrite the record the last event carried."""
    from unfurl_lite.record import journal

    made: Counter[int] = Counter()
    real = journal.task_record

    def counted(run: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        made[run.task.number] += 1
        return real(run, *args, **kwargs)

    monkeypatch.setattr(journal, "task_record", counted)
    _deploy(project, invoke)
    assert len(made) == TASKS and set(made.values()) == {1}
    [path] = project.root.glob("jobs/journal*.yaml")
    tasks = journal.read_journal(path).tasks
    assert [t["state"] for t in tasks] == ["succeeded"] * TASKS
    assert all(t["result"]["success"] and t["inputs"] for t in tasks)


def test_a_job_with_nothing_to_do_leaves_no_journal(
    project: Project, invoke: Invoke, writes: Writes
) -> None:
    _deploy(project, invoke)
    recorded = sorted(project.root.rglob("journal*"))  # the first job's, which git keeps
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0, again.output
    assert "0 tasks" in again.output or "nothing to do" in again.output.lower(), again.output
    assert sorted(project.root.rglob("journal*")) == recorded


def journal_events_left(root: Path) -> list[Path]:
    return list(root.rglob("journal*.events"))


def test_an_events_file_its_recorded_journal_holds_is_swept_by_the_next_job(
    project: Project, invoke: Invoke
) -> None:
    """A kill between rewriting the journal and removing its events file leaves a file
    the journal already holds: the next job removes it (and keeps one with newer events)."""
    _deploy(project, invoke)
    [journal] = project.root.glob("jobs/journal*.yaml")
    stale = journal.with_suffix(".events")
    stale.write_text('{"seq":1,"state":"succeeded"}\n')
    held = int(next(line for line in journal.read_text().splitlines()
                    if line.startswith("eventSeq: ")).split(": ")[1])
    assert held >= 1
    more = "".join(shell_node(f"n{i}", "exit 0") for i in range(TASKS + 1))
    project.write(ensemble_yaml(more))  # the next job has a task to run: it takes the lock
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    newer = journal.with_suffix(".events")
    newer.write_text(f'{{"seq":{held + 1},"state":"succeeded"}}\n')
    project.write(ensemble_yaml(more + shell_node("last", "exit 0")))
    assert invoke("deploy", "--approve").exit_code == 0
    assert newer.exists()  # not yet in the journal: resume needs it


def test_job_files_of_a_job_that_knows_no_secret_still_redact_a_marked_value(
    tmp_path: Path,
) -> None:
    """A job that knows no secret writes its entries as they are, unless one holds a
    marked value (a Sensitive attribute a resultTemplate set): that one is redacted, and
    the rest is written as the redacting road writes it."""
    from unfurl_lite.record.records import write_job_files
    from unfurl_lite.security.taint import REDACTED, Sensitive

    def written(value: Any) -> tuple[str, str]:
        shared = {"changeId": "A0", "attributes": {"password": value, "port": 80}}
        entries = [{"changeId": "A00", "workflow": "deploy"}, shared]
        job, changes = tmp_path / "job.yaml", tmp_path / "changes.yaml"
        write_job_files(job, changes, "../ensemble.yaml", entries, [entries[0], shared], set())
        return job.read_text(), changes.read_text()

    plain = written("hunter2-long")
    marked = written(Sensitive("hunter2-long"))
    assert "hunter2-long" in plain[0] and "hunter2-long" in plain[1]
    for text in marked:
        assert "hunter2" not in text and REDACTED in text
    assert marked[0] == plain[0].replace("hunter2-long", REDACTED)


def test_a_task_sent_carries_its_instances_node_state_not_its_whole_record(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event written as a task is sent says the node state its start gave the instance
    (``creating``), not the instance's record again; a journal read back as the job stood
    then (as resume reads a killed job's) has the instance whole, in that state."""
    from unfurl_lite.record import journal, journal_format

    seen: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    real = journal_format.EventLog.append

    def append(self: Any, event: dict[str, Any], seq: int, hold: bool = False,
               covered: bool = False) -> None:
        real(self, event, seq, hold, covered)
        task = event.get("task")
        if isinstance(task, dict) and task.get("state") == "started" and not seen:
            self.flush()
            seen.append((event, journal.read_journal(self.path.with_suffix(".yaml")).data))

    monkeypatch.setattr(journal_format.EventLog, "append", append)
    _deploy(project, invoke)
    [(event, data)] = seen
    target = event["task"]["target"]
    assert "instances" not in event and event["states"] == {target: "creating"}
    assert data is not None
    record = data["instances"][target]
    assert record["readyState"] == {"local": "pending", "state": "creating"}
    assert record["template"] == target


def test_folding_a_node_state_keeps_the_rest_of_the_record() -> None:
    from unfurl_lite.record.journal_format import fold

    data: dict[str, Any] = {"instances": {"db": {"template": "db", "readyState": {
        "local": "ok", "state": "started"}, "created": "A01"}}}
    fold(data, {"states": {"db": "deleting", "gone": "x"}})
    assert data["instances"] == {"db": {"template": "db", "readyState": {
        "local": "ok", "state": "deleting"}, "created": "A01"}}
    fold(data, {"states": {"db": None}})
    assert data["instances"]["db"]["readyState"] == {"local": "ok"}
    assert "states" not in data


@pytest.mark.parametrize("case", ["tasks", "created"])
def test_the_recorded_journal_inlines_its_events_and_reads_back_as_the_whole_rewrite(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    case: str,
) -> None:
    """The journal's second write is its first with its events inlined, not every task
    and instance encoded again, when the events hold the full record of every task the
    journal lists, and knew every secret: read back, it is what the whole rewrite reads
    back (here the job writes the whole one, and the inlined one is made from a copy of
    its first write and events). Tasks planned as the job ran (for instances a
    resultTemplate created) are in the events only: that journal is written whole."""
    import shutil

    from tests.run.test_created_instances import HEAD
    from unfurl_lite.record import journal, journal_format

    made: dict[str, Any] = {}
    real = journal_format.write_final

    def whole_instead(path: Path, data: dict[str, Any], seq: int, *args: Any) -> bool:
        side = tmp_path / "side" / path.name
        side.parent.mkdir()
        shutil.copy(path, side)
        shutil.copy(journal_format.events_path(path), journal_format.events_path(side))
        made.update(side=side, data=dict(data), seq=seq)
        return False

    monkeypatch.setattr(journal_format, "write_final", whole_instead)
    if case == "created":
        project.write(HEAD.format(steps="            create:\n            configure:"))
        assert invoke("deploy", "--approve").exit_code == 0
        assert not made
        return
    _deploy(project, invoke, "--jobs", "3")
    assert made, "the events held every task: the journal could be made from them"
    [whole] = project.root.glob("jobs/journal*.yaml")
    assert real(made["side"], made["data"], made["seq"])
    assert not journal_format.events_path(made["side"]).exists()
    inlined = journal.read_journal(made["side"]).data
    expected = journal.read_journal(whole).data
    assert inlined == expected
    assert len(expected["tasks"]) == TASKS and expected["recorded"] is True
    from unfurl_lite.view.dashboard.heads import journal_head  # the history's quick read

    assert "\nevents:\n- {" in made["side"].read_text()
    assert journal_head(made["side"])["state"] == "succeeded" == journal_head(whole)["state"]


def test_each_entry_of_a_jobs_records_is_emitted_once(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job file and the changes file hold the same entries (the changes file's with
    fewer keys): each entry's pairs are written once, for the job file, and the changes
    file's text is made from theirs. Counted by the entries' ``changeId`` pairs: the job's
    and each task's in the job file, and ensemble.yaml's ``lastJob``; none for the changes
    file, which still holds them all."""
    from unfurl_lite.load import emit

    written: Counter[str] = Counter()
    one_line = emit._one_line

    def counted(key: Any, *args: Any) -> Any:
        written[key] += 1
        return one_line(key, *args)

    monkeypatch.setattr(emit, "_one_line", counted)
    _deploy(project, invoke)
    [changes] = project.root.glob("changes/job*.yaml")
    assert changes.read_text().count("\n- changeId: ") == 1 + TASKS
    assert written["changeId"] == (1 + TASKS) + 1
