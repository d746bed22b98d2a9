"""The ensemble's repository as the records see it: the git layer's work tree.

Git itself is reached only through :mod:`unfurl_lite.load.gitrepo` (GitPython); these
names stay importable from here for the record package's callers.
"""

from __future__ import annotations

from unfurl_lite.load.gitrepo import (
    INDEX_LOCK_WAIT,
    Repo,
    find_repo,
    identity_problem,
    init_repo,
    is_ignored,
)

__all__ = ["INDEX_LOCK_WAIT", "Repo", "find_repo", "identity_problem", "init_repo", "is_ignored"]
