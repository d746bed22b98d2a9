"""The version line, without click: ``unfurl --version`` answers before the command
group (and click) is imported, so it costs little more than the interpreter's start.
Only ``os`` is used (pathlib alone would bring in ``re``, ``enum`` and ``urllib``)."""

from __future__ import annotations

import os

from unfurl_lite import __version__


def version_text() -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    commit = _source_commit(os.path.join(root, ".git"))
    return f"unfurl-lite {__version__}" + (f" (commit {commit[:12]})" if commit else "")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def _source_commit(git: str | os.PathLike[str]) -> str:
    """The checkout's HEAD commit read from .git's files (no git process, no GitPython):
    a worktree's ``.git`` file, loose and packed refs."""
    path = os.fspath(git)
    try:
        if os.path.isfile(path):  # a worktree or submodule: "gitdir: <path>"
            linked = _read(path).removeprefix("gitdir: ")
            path = os.path.realpath(os.path.join(os.path.dirname(path), linked))
        common = path
        if os.path.exists(os.path.join(path, "commondir")):
            common = os.path.realpath(os.path.join(path, _read(os.path.join(path, "commondir"))))
        ref = _read(os.path.join(path, "HEAD"))
        if not ref.startswith("ref: "):
            return ref
        name = ref[5:]
        for base in (path, common):
            if os.path.exists(os.path.join(base, name)):
                return _read(os.path.join(base, name))
        packed = os.path.join(common, "packed-refs")
        for line in _read(packed).splitlines() if os.path.exists(packed) else ():
            sha, _, ref_name = line.partition(" ")
            if ref_name == name:
                return sha
    except OSError:
        pass
    return ""
