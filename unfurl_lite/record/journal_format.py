"""The journal's file format: a YAML document whose values are JSON, plus an event log.

Each top-level key sits on one line as ``key: <JSON>`` (JSON is valid YAML flow style, so
any YAML reader still reads the file); it is only ever replaced atomically, so it is valid
YAML at every instant. Task transitions go to a sibling ``.events`` file, one JSON line
each, appended in O(1); JSON is two orders of magnitude faster than ruamel's round trip.
A line torn by SIGKILL mid-write is ignored by the reader, so the journal is exact up to
the last complete transition. Events carry a sequence number and the whole file records
the last one it already holds, so a crash between the two writes never replays old
events over newer state.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from pathlib import Path

from unfurl_lite.load import yamlio
from unfurl_lite.record.liveness import pid_alive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVENTS = "events"
#: keyed digests of the secrets the job knows (see security/digested.py)
SECRET_DIGESTS = "secretDigests"
#: instances' node states an event changes and nothing else of them: {name: state or null}
STATES = "states"
#: a task record's fields a journal leaves out at these values (journal_tasks.task_record),
#: which :func:`read_journal` gives back: a record read back is whole
TASK_DEFAULTS: dict[str, Any] = {
    "previousId": None, "status": None, "changed": False, "priorState": None,
    "endedAt": None, "message": None, "carried": False, "interrupted": None, "retries": [],
    "worker": None,
}
#: a value that is not valid text (a lone surrogate a Python operation returned) is
#: written as its JSON escape (``\\ud800``), which reads back as the same value
JSON_ERRORS = "backslashreplace"


#: one encoder for every event (json.dumps with options builds a new one each call); the
#: journal's values are copies made for it, never cyclic: no check for cycles (a tenth
#: of an event's encoding; a cycle would still fail, by recursion)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str,
                            check_circular=False)
#: the same encoder's C half, made once and called directly: ``encode`` makes a new one
#: (and a closure) for every value before calling it, 40% of a task event's encoding;
#: None without json's C accelerator. Its arguments: no markers (no check for cycles),
#: ``default``, the text encoder, no indent, the separators, sort_keys, skipkeys,
#: allow_nan: what ``_ENCODER`` hands it.
_C_ENCODER = (json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    if getattr(json.encoder, "c_make_encoder", None) is not None else None)


def _json(value: Any) -> str:
    if _C_ENCODER is not None and type(value) is dict:
        return "".join(_C_ENCODER(value, 0))
    return _ENCODER.encode(value)


def events_path(path: Path) -> Path:
    return path.with_suffix(".events")


def write_journal(path: Path, data: dict[str, Any], seq: int = 0,
                  writes: yamlio.Writes | None = None) -> None:
    """The whole journal, atomically, holding every event up to ``seq`` (with ``writes``,
    when they are committed: see yamlio.Writes); its events file goes once it is."""
    data = {**data, "eventSeq": seq}
    lines = [f"{key}: {_json(value)}" for key, value in data.items() if key != EVENTS]
    lines.append(f"{EVENTS}:")
    private_directory(path.parent)
    text = "\n".join(lines) + "\n"
    if writes is not None:
        writes.replace(path, text, private=True, errors=JSON_ERRORS,
                       after=lambda: events_path(path).unlink(missing_ok=True))
        return
    yamlio.atomic_write(path, text, private=True, errors=JSON_ERRORS)
    events_path(path).unlink(missing_ok=True)


#: the journal's keys the first write holds whole and its events change (its tasks, its
#: instances) or add to (the secrets' digests): kept as written, the events inlined after
_FOLDED = ("startInstances", "instances", "tasks", SECRET_DIGESTS)
#: an events file line's start, up to its first field: ``{"seq":12,`` (``{"seq":12`` alone),
#: after a line break (a literal to search for: ten times faster than ``^`` at each byte)
_SEQ = re.compile(rb'\n\{"seq":\d+,?')
_FIRST_SEQ = re.compile(rb'\{"seq":\d+,?')


def write_final(path: Path, data: dict[str, Any], seq: int,
                writes: yamlio.Writes | None = None) -> bool:
    """The journal once its job is recorded, from its first write and its events as
    they were written, not encoded again (a quarter of a second at N=10,000): the head's
    small values from ``data`` (the job's state, ``recorded``), its tasks, instances and
    digests as the first write had them, then every event inlined (``- {...}``, which
    :func:`read_journal` folds as it folds the events file), ``eventSeq`` the last. What
    it reads back is what the whole rewrite reads back, when the events hold every task's
    full record and were redacted with every secret the job knows (the caller's test).
    False, with nothing written, when the file is not a first write."""
    try:  # as bytes: at N=10,000 the events are 10 MB, copied as few times as can be
        first = path.read_bytes().split(b"\n")
        events = events_path(path).read_bytes()
    except OSError:
        return False
    if first[-2:] != [f"{EVENTS}:".encode(), b""]:  # a first write has no events inline
        return False
    kept = {key: line for line in first
            if (key := line[:max(line.find(b": "), 0)].decode("latin-1")) in _FOLDED}
    if len(kept) != len(_FOLDED):
        return False
    order = [*data, *(key for key in ("instances", "tasks") if key not in data), "eventSeq"]
    head = {**data, "eventSeq": seq}
    lines = [kept[key] if key in _FOLDED
             else f"{key}: {_json(head[key])}".encode("utf-8", JSON_ERRORS)
             for key in order if key != EVENTS]
    # each event's line less its sequence number: {"seq":N,...} -> - {...}
    text: list[bytes | memoryview] = [
        piece for line in [*lines, f"{EVENTS}:".encode()] for piece in (line, b"\n")]
    if events:  # the large pieces written as they are, not joined
        inlined = _SEQ.sub(b"\n- {", events)  # every line but the first
        first_seq = _FIRST_SEQ.match(inlined)
        text += [b"- {", memoryview(inlined)[first_seq.end() if first_seq else 0:]]
    del first, events, kept
    private_directory(path.parent)
    if writes is None:
        writes = yamlio.Writes()
        writes.replace(path, text, private=True)
        writes.commit()
        events_path(path).unlink(missing_ok=True)
    else:
        writes.replace(path, text, private=True,
                       after=lambda: events_path(path).unlink(missing_ok=True))
    return True


def private_directory(directory: Path) -> None:
    """jobs/ holds the journals of running jobs: readable by their owner only (0700)."""
    directory.mkdir(parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o077:
        os.chmod(directory, 0o700)


class EventLog:
    """The open ``.events`` file of one journal, with a group commit.

    Each event is written (to the kernel: one ``write`` on a raw descriptor, no buffer of
    Python's) before anything outside the process depends on its transition, so killing
    the process loses nothing: a task's start before its operation is sent, its outcome
    at the latest before the next task starts or the job waits (``hold``; a kill before
    that is a kill before the outcome). Forcing it to disk is batched and off the job's
    threads: one thread per log makes one fsync for every event written since the last
    one, at most one per ``sync_interval`` and within that interval of the first event it
    covers, so a power cut loses at most that much. An fsync per transition, and reopening
    the file for each, were a third of a large job; an fsync on the scheduler's thread
    (milliseconds each) held every task up while it waited; a timer's thread started for
    each interval made the scheduler wait for the new thread to run, at every interval.
    """

    def __init__(self, journal: Path, sync_interval: float = 0.1) -> None:
        self.path = events_path(journal)
        self.sync_interval = sync_interval
        self.fd: int | None = None
        self.held: list[str] = []  # lines appended with ``hold``, not written yet
        #: how many of them an operation's start writes (its own start event the last)
        self.covered = 0
        #: the first write that failed: every later one fails with it (no event is written
        #: after one that was lost), on whichever thread writes
        self.failed: OSError | None = None
        self.synced = 0.0  # monotonic time of the last fsync
        self.pending = False  # events written since the last fsync began
        self.closed = False
        self.syncer: threading.Thread | None = None
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)

    def append(self, event: dict[str, Any], seq: int, hold: bool = False,
               covered: bool = False) -> None:
        """Write the event (with every line held before it) in one ``write``; ``hold``
        keeps it back until the next event that is not held, or :meth:`flush`: the job
        holds a task's events, which nothing outside the process depends on until an
        operation starts or the job waits, so tasks that end and start together cost one
        write. ``covered``: the event of an operation about to start, whose start writes
        it and every line held before it (a flush before the job waits need not)."""
        if self.failed is not None:
            raise self.failed
        body = _json(event)  # one line per event, its sequence number first
        line = f'{{"seq":{seq:d},{body[1:]}\n' if len(body) > 2 else f'{{"seq":{seq:d}}}\n'
        with self.lock:
            self.held.append(line)
            if covered:
                self.covered = len(self.held)
            if not hold:
                self._write_locked()

    def flush(self, covered: bool = True) -> None:
        """The held lines, written now (an operation is about to start, the job is about
        to wait, or to end); ``covered=False``: not when the last of them will be written
        by the start of its operation (the job is about to wait). After a failed write it
        fails too, held lines or not: the failed write took the lines another thread's
        start was waiting for, and that start must not go ahead without its event."""
        with self.lock:
            if self.failed is not None:
                raise self.failed
            if self.held and (covered or self.covered < len(self.held)):
                self._write_locked()

    def _write_locked(self) -> None:
        if self.failed is not None:
            raise self.failed
        data = "".join(self.held).encode("utf-8", JSON_ERRORS)
        self.held.clear()
        self.covered = 0
        try:
            if self.fd is None:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.fchmod(self.fd, 0o600)
            view = memoryview(data)
            while view:  # a regular file takes it whole; a short write is finished
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            exc.filename = exc.filename or str(self.path)
            self.failed = exc
            raise
        if not self.pending and yamlio.syncing():  # reaches the disk with the next fsync
            self.pending = True
            if self.syncer is None:
                self.syncer = threading.Thread(target=self._sync_loop, daemon=True,
                                               name="unfurl-journal-sync")
                self.syncer.start()
            else:
                self.wake.notify()

    def _sync_loop(self) -> None:
        """The syncing thread: waits for events, lets the interval since the last fsync
        pass, and syncs everything written by then, outside the lock (an fsync takes
        milliseconds, and the job's threads go on appending meanwhile)."""
        with self.lock:
            while True:
                while not self.pending and not self.closed:
                    self.wake.wait()
                wait = self.sync_interval - (time.monotonic() - self.synced)
                if wait > 0 and not self.closed:
                    self.wake.wait(wait)
                if self.closed or self.fd is None:
                    return
                self.pending = False
                started = time.monotonic()
                fd = os.dup(self.fd)  # close() may come while this one syncs
                self.lock.release()
                try:
                    with contextlib.suppress(OSError):  # the job's next write (or the final
                        os.fsync(fd)  # rewrite of the journal) meets and reports it
                finally:
                    os.close(fd)
                    self.lock.acquire()
                self.synced = started

    def close(self) -> None:
        """Before the journal is rewritten whole (which removes this file): the held
        lines are written first."""
        with self.lock:
            self.closed = True
            self.wake.notify()
            with contextlib.suppress(OSError):  # a full disk: the rewrite that follows
                if self.held:  # meets it and reports it
                    self._write_locked()
            if self.fd is not None:
                fd, self.fd = self.fd, None
                os.close(fd)


def fold(data: dict[str, Any], event: dict[str, Any]) -> None:
    """Apply one event to the journal's data: later fields replace earlier ones (an event
    in flight carries only the fields that changed)."""
    task = event.get("task")
    if isinstance(task, dict):
        tasks = data.setdefault("tasks", [])
        for index, known in enumerate(tasks):
            if known.get("number") == task.get("number"):
                tasks[index] = {**known, **task}
                break
        else:
            tasks.append(task)
    instances = event.get("instances")
    if isinstance(instances, dict):
        data.setdefault("instances", {}).update(instances)
    states = event.get(STATES)
    if isinstance(states, dict):
        _fold_states(data.setdefault("instances", {}), states)
    digests = event.get(SECRET_DIGESTS)
    if isinstance(digests, list):  # they only ever grow: each event brings the new ones
        data.setdefault(SECRET_DIGESTS, []).extend(digests)
    for key, value in event.items():
        if key not in ("task", "instances", STATES, SECRET_DIGESTS):
            data[key] = value


def _fold_states(instances: dict[str, Any], states: dict[str, Any]) -> None:
    """An instance's node state in its record's readyState (none: no ``state``), the rest
    of the record as the last event that held it whole left it."""
    for name, state in states.items():
        record = instances.get(name)
        if not isinstance(record, dict):
            continue
        ready = record.get("readyState")
        ready = dict(ready) if isinstance(ready, dict) else {}
        if state is None:
            ready.pop("state", None)
        else:
            ready["state"] = state
        instances[name] = {**record, "readyState": ready}


#: a journal (or its events) larger than this, or holding more JSON values (containers and
#: items), is refused as damaged, so a hostile one is never parsed into gigabytes
#: (``[{},{},…]`` costs 20 times its size once parsed). A 10 000-task job's journal holds a
#: few tens of MiB and about a million values; the bounds leave room for a few times that.
MAX_JOURNAL_BYTES = 128 * 1024 * 1024
MAX_JOURNAL_VALUES = 4_000_000


def _read_bounded(path: Path) -> str:
    with open(path, "rb") as handle:
        data = handle.read(MAX_JOURNAL_BYTES + 1)
    if len(data) > MAX_JOURNAL_BYTES:
        raise ValueError(f"larger than {MAX_JOURNAL_BYTES} bytes")
    values = data.count(b"{") + data.count(b"[") + data.count(b",")
    if values > MAX_JOURNAL_VALUES:
        raise ValueError(f"more than {MAX_JOURNAL_VALUES} values")
    return data.decode("utf-8")


def read_journal(path: Path) -> dict[str, Any] | None:
    """The journal's data with every complete event folded in; None if the file is not
    in this format (an older journal, written whole as block YAML)."""
    text = _read_bounded(path)
    data: dict[str, Any] = {}
    lines = text.split("\n")
    complete = lines[:-1]  # the part after the last newline is torn or empty
    in_events = False
    events: list[dict[str, Any]] = []
    for line in complete:
        if in_events:
            if not line.startswith("- "):
                return None
            try:
                events.append(json.loads(line[2:]))
            except ValueError:
                break  # torn by a crash: nothing after it was written either
            continue
        if line == f"{EVENTS}:":
            in_events = True
            continue
        key, sep, value = line.partition(": ")
        if not sep or not key.isidentifier():
            return None
        try:
            data[key] = json.loads(value)
        except ValueError:
            return None
    if not in_events:
        return None
    held = int(data.pop("eventSeq", 0) or 0)
    try:
        log = _read_bounded(events_path(path)).split("\n")[:-1]
    except FileNotFoundError:
        log = []
    for line in log:
        try:
            event = json.loads(line)
        except ValueError:
            break  # torn by a crash: nothing after it was written either
        if int(event.pop("seq", 0)) > held:
            events.append(event)
    tasks: list[dict[str, Any]] = data.get("tasks") or []
    data["tasks"] = tasks
    by_number = {t.get("number"): i for i, t in enumerate(tasks)}
    for event in events:
        task = event.get("task")
        if isinstance(task, dict) and task.get("number") in by_number:
            index = by_number[task["number"]]
            # a full record replaces; an event in flight carries only what changed
            tasks[index] = task if "inputs" in task else {**tasks[index], **task}
            event = {k: v for k, v in event.items() if k != "task"}
        fold(data, event)
    for index, task in enumerate(tasks):
        if isinstance(task, dict) and "inputs" in task and not task.keys() >= TASK_DEFAULTS.keys():
            tasks[index] = _whole(task)
    return data


def _whole(record: dict[str, Any]) -> dict[str, Any]:
    """A task's record with the fields left out at their defaults put back (a list a new
    one), in the order the record makes them."""
    whole: dict[str, Any] = {}
    for key in _RECORD_ORDER:
        if key in record:
            whole[key] = record[key]
        elif key in TASK_DEFAULTS:
            default = TASK_DEFAULTS[key]
            whole[key] = [] if default == [] else default
    for key, value in record.items():
        if key not in whole:
            whole[key] = value
    return whole


_RECORD_ORDER = ("number", "target", "operation", "state", "changeId", "previousId",
                 "attempts", "status", "changed", "priorState", "startedAt", "endedAt",
                 "message", "carried", "interrupted", "retries", "worker", "inputs", "digest")


def stale_events(events: Path) -> bool:
    """An events file its journal already holds in full (every event's seq at most the
    journal's ``eventSeq``) whose job is recorded or gone: what a process killed between
    rewriting the journal and removing the file leaves. Never a running job's."""
    head: dict[str, Any] = {}
    try:
        for line in events.with_suffix(".yaml").read_text(encoding="utf-8").split("\n"):
            key, sep, value = line.partition(": ")
            if sep and key in ("eventSeq", "recorded", "pid"):
                head[key] = json.loads(value)
        log = events.read_text(encoding="utf-8").split("\n")[:-1]
    except (OSError, ValueError):
        return False
    alive = pid_alive(int(head.get("pid") or 0))
    if "eventSeq" not in head or (alive and not head.get("recorded")):
        return False
    held = int(head["eventSeq"] or 0)
    try:
        return all(int(json.loads(line).get("seq", 0)) <= held for line in log)
    except (ValueError, AttributeError):
        return False

