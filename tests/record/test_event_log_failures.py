"""A journal's event log after a write that failed: no start may go ahead without its event.

With ``--jobs 2`` two starts can be held together; the spawning thread that flushes first
takes both lines, and when its write fails, the other start must not find an empty queue
and start its command as though its event were written (the kill-anywhere guarantee).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from unfurl_lite.record.journal_format import EventLog


def test_every_flush_after_a_failed_write_fails_held_lines_or_not(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "no-such-dir" / "journal.yaml")  # its events file cannot open
    log.append({"task": "a", "state": "running"}, 1, hold=True, covered=True)
    log.append({"task": "b", "state": "running"}, 2, hold=True, covered=True)
    with pytest.raises(OSError):
        log.flush()  # the first start's write takes both lines, and fails
    with pytest.raises(OSError):
        log.flush()  # the second start: nothing held, yet its event was lost
    with pytest.raises(OSError):
        log.append({"task": "c", "state": "running"}, 3)
    assert not (tmp_path / "no-such-dir").exists()
