"""Records are forced to disk unless ``UNFURL_LITE_FSYNC=off`` says the environment is
throwaway (the test suite's conftest sets it): then the same bytes are written, only
without waiting for the disk."""

from __future__ import annotations

import os
import time
from pathlib import Path

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
