"""Is the process a lock or a journal names still running? The lock, the notion of a
killed job and the dashboard all ask, so the answer sits below each of them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie (a killed job's unreaped process is gone for our purposes)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        return bool(fields) and fields[0] == "Z"
    return False
