"""Records are forced to disk unless ``UNFURL_LITE_FSYNC=off`` says the environment is
throwaway (the test suite's conftest sets it): then the same bytes are written, only
without waiting for the disk."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from unfurl_lite.load import yamlio
from unfurl_lite.record.journal_format import EventLog


def write_records(folder: Path) -> None:
    yamlio.atomic_write(folder / "ensemble.yaml", "status: {}\n")
    yamlio.append_lines(folder / "jobs.tsv", "A01\tdeploy\n")
    log = EventLog(folder / "journal.yaml", sync_interval=0)
    log.append({"state": "started"}, 1)
    deadline = time.monotonic() + 30  # the group commit's thread: its fsync, before close()
    while log.syncer is not None and log.synced == 0.0 and time.monotonic() < deadline:
        time.sleep(0.001)
    log.close()


@pytest.mark.parametrize(("setting", "synced"), [(None, True), ("on", True), ("off", False),
                                                 ("OFF", False)])
def test_records_reach_the_disk_unless_syncing_is_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, synced: bool
) -> None:
    if setting is None:
        monkeypatch.delenv("UNFURL_LITE_FSYNC", raising=False)
    else:
        monkeypatch.setenv("UNFURL_LITE_FSYNC", setting)
    calls: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_records(tmp_path)
    # the file and its directory, the appended line, the journal's event
    assert len(calls) >= 4 if synced else calls == []
    assert (tmp_path / "ensemble.yaml").read_text() == "status: {}\n"
    assert (tmp_path / "jobs.tsv").read_text() == "A01\tdeploy\n"
    assert '"state":"started"' in (tmp_path / "journal.events").read_text()


def test_writes_of_a_group_are_on_the_disk_before_they_are_seen_in_their_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group of writes (a job's records, then the journal vouching for them) waits for
    the disk once for all its files, not once per file; each file is still forced to disk
    before its rename, renames come in the order asked, and what follows a barrier is seen
    only once everything before it (directories, appended lines) is on the disk."""

    monkeypatch.delenv("UNFURL_LITE_FSYNC", raising=False)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs.tsv").write_text("A00\tdeploy\n")
    done: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        real_fsync(fd)
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name  # a temporary file: .NAME.*.tmp
        done.append("sync " + (name[1:].split(".")[0] if name.endswith(".tmp") else name))

    def replace(source: str, target: Any) -> None:
        real_replace(source, target)
        done.append("show " + Path(target).name.split(".")[0])

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with yamlio.Writes() as writes:
        writes.replace(tmp_path / "jobs" / "job.yaml", "job\n")
        writes.append_lines(tmp_path / "jobs.tsv", "A01\tdeploy\n")
        writes.replace(tmp_path / "ensemble.yaml", "status: {}\n")
        writes.barrier()
        writes.replace(tmp_path / "jobs" / "journal.yaml", "recorded: true\n",
                       after=lambda: done.append("after journal"))
        assert not (tmp_path / "ensemble.yaml").exists()  # nothing seen before the commit
    assert (tmp_path / "jobs.tsv").read_text() == "A00\tdeploy\nA01\tdeploy\n"
    assert (tmp_path / "ensemble.yaml").read_text() == "status: {}\n"
    assert (tmp_path / "jobs" / "journal.yaml").read_text() == "recorded: true\n"
    shown = [d for d in done if d.startswith("show")]
    assert shown == ["show job", "show ensemble", "show journal"]
    journal = done.index("show journal")
    # every temporary file was forced before anything was renamed
    assert {"sync job", "sync ensemble", "sync journal"} <= set(done[:done.index("show job")])
    # the records' directories and jobs.tsv were forced before the journal was seen
    before = done[done.index("show ensemble"):journal]
    assert {"sync jobs", "sync jobs.tsv", f"sync {tmp_path.name}"} <= set(before)
    # the journal's rename forced, then what follows it (the events file it holds removed)
    assert done[journal + 1:] == ["sync jobs", "after journal"]
    assert sorted(p.name for p in tmp_path.rglob(".*")) == []  # no temporary file left


def test_writes_settled_later_are_seen_at_the_commit_and_forced_at_the_settle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's git reads its records while the journal's rename is forced to disk: with
    ``settle_later`` the commit makes the last stage visible, every stage before it forced
    as usual; its directory is forced and its ``after`` runs at :meth:`settle`, once."""
    monkeypatch.delenv("UNFURL_LITE_FSYNC", raising=False)
    (tmp_path / "jobs").mkdir()
    done: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        done.append("sync " + (name[1:].split(".")[0] if name.endswith(".tmp") else name))

    monkeypatch.setattr(os, "fsync", fsync)
    writes = yamlio.Writes(settle_later=True)
    with writes:
        writes.replace(tmp_path / "ensemble.yaml", "status: {}\n")
        writes.barrier()
        writes.replace(tmp_path / "jobs" / "journal.yaml", "recorded: true\n",
                       after=lambda: done.append("after journal"))
    assert (tmp_path / "jobs" / "journal.yaml").read_text() == "recorded: true\n"
    assert f"sync {tmp_path.name}" in done and "sync jobs" not in done
    assert "after journal" not in done
    seen = len(done)
    writes.settle()
    writes.settle()
    assert done[seen:] == ["sync jobs", "after journal"]


def test_a_group_that_cannot_reach_the_disk_shows_nothing_and_names_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.delenv("UNFURL_LITE_FSYNC", raising=False)
    (tmp_path / "ensemble.yaml").write_text("old\n")

    def fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError) as raised, yamlio.Writes() as writes:
        writes.replace(tmp_path / "job.yaml", "job\n")
        writes.replace(tmp_path / "ensemble.yaml", "new\n")
    assert raised.value.filename in (str(tmp_path / "job.yaml"), str(tmp_path / "ensemble.yaml"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ensemble.yaml"]
    assert (tmp_path / "ensemble.yaml").read_text() == "old\n"
