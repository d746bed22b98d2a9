"""The version line, without click: ``unfurl --version`` answers before the command
group (and click) is imported, so it costs little more than the interpreter's start.
Only ``os`` is used (pathlib alone would bring in ``re``, ``enum`` and ``urllib``; the
package's lazy ``__version__`` would import ``importlib``)."""

from __future__ import annotations

import os

from unfurl_lite import _package_version
from unfurl_lite.load import gitfiles


def version_text() -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    commit = _source_commit(root)
    return f"unfurl-lite {_package_version()}" + (f" (commit {commit[:12]})" if commit else "")


def _source_commit(root: str) -> str:
    """The checkout's HEAD commit, when the package runs from a git checkout."""
    git = gitfiles.git_dir(root)
    return gitfiles.head(git)[1] if git else ""
