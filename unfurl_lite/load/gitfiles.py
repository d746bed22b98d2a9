"""The commit HEAD points at, read from ``.git``'s files: no git process, no import.

Asked often and cheaply (``unfurl --version``'s source commit, a job's branch check, a
worker's HEAD before each task); a layout these files cannot answer (a bare repository,
a ref store other than loose and packed refs) answers ``""`` and the caller asks git.
Only ``os``: ``--version`` imports this module, and pathlib would bring ``re``, ``enum``
and ``urllib``.
"""

from __future__ import annotations

import os


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def git_dir(top: str) -> str:
    """The git directory of the work tree at ``top``: its ``.git`` directory, or the one a
    linked worktree's or a submodule's ``.git`` file names; ``""`` when it has neither."""
    dot = os.path.join(top, ".git")
    try:
        if os.path.isdir(dot):
            return dot
        if os.path.isfile(dot):
            text = _read(dot)
            if text.startswith("gitdir: "):
                return os.path.realpath(os.path.join(top, text.removeprefix("gitdir: ")))
    except (OSError, UnicodeDecodeError):
        pass
    return ""


def work_tree(path: str) -> str:
    """The nearest directory at or above ``path`` that is a work tree's top (it holds a
    ``.git``), as git finds it; ``""`` when there is none."""
    current = os.path.abspath(path)
    while True:
        if git_dir(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return ""
        current = parent


def head(git: str) -> tuple[str, str]:
    """(the ref HEAD names, ``""`` when detached; the commit, ``""`` when unknown here)."""
    try:
        text = _read(os.path.join(git, "HEAD"))
        if not text.startswith("ref: "):
            return "", text
        name = text.removeprefix("ref: ")
        return name, _ref(git, name)
    except (OSError, UnicodeDecodeError):
        return "", ""


def _ref(git: str, name: str, depth: int = 0) -> str:
    """A ref's commit, loose (in the worktree's own directory or the common one) or packed;
    a symbolic ref is followed a few levels deep, as git does."""
    if depth > 5:
        return ""
    common = git
    commondir = os.path.join(git, "commondir")
    if os.path.exists(commondir):
        common = os.path.realpath(os.path.join(git, _read(commondir)))
    for base in (git, common):
        loose = os.path.join(base, name)
        if os.path.isfile(loose):
            value = _read(loose)
            if value.startswith("ref: "):
                return _ref(git, value.removeprefix("ref: "), depth + 1)
            return value
    packed = os.path.join(common, "packed-refs")
    for line in _read(packed).splitlines() if os.path.exists(packed) else ():
        sha, _, ref_name = line.partition(" ")
        if ref_name == name:
            return sha
    return ""
