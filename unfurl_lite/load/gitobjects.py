"""Earlier versions of a file, read from git's object database through GitPython.

Reading history is many small reads: ``unfurl show``'s redaction reads the ensemble at
both ends of a diff, an update looks through up to 50 commits of ensemble.yaml for the
templates the spec dropped. GitPython answers them all from one ``git cat-file --batch``
process, where a ``git show`` each would start a process per version. Its import costs
about as much as a whole deploy's git commands, so nothing on a job's path comes here
(tests/test_import_budget.py): only the commands that read history, and an update that
removed templates. Every read that cannot be answered (no repository, no such commit or
path, a damaged object) is None or nothing: history is best effort, never a job's failure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from unfurl_lite.load.gitrepo import ENV

if TYPE_CHECKING:
    import git


def _gitpython() -> ModuleType:
    """GitPython, imported with the git layer's environment: its import runs ``git
    version``, which must run in a C locale without a pager or a prompt as every other."""
    if "git" in sys.modules:
        return sys.modules["git"]
    # without a git executable the import still works, and each read answers None
    quiet = {**ENV, "GIT_PYTHON_REFRESH": "quiet"}
    saved = {name: os.environ.get(name) for name in quiet}
    os.environ.update(quiet)
    try:
        import git  # start-up: lazy: GitPython costs ~70 ms of import, only history reads need it
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return git


@contextmanager
def _repository(path: Path) -> Iterator[git.Repo | None]:
    """The repository holding ``path`` (None outside one), its git processes ended after."""
    git = _gitpython()
    try:
        repo = git.Repo(str(path), search_parent_directories=True)
    except (git.GitError, OSError):  # not a repository, no such path
        yield None
        return
    repo.git.update_environment(**ENV)
    try:
        yield repo
    finally:
        repo.close()


def _in_tree(repo: git.Repo, path: Path) -> str | None:
    """``path`` as the repository's trees name it (relative to the top, slashes)."""
    top = repo.working_tree_dir
    if top is None:
        return None
    try:
        return path.resolve().relative_to(Path(top).resolve()).as_posix()
    except ValueError:
        return None


def _text(repo: git.Repo, commit: str, name: str) -> str | None:
    git = _gitpython()
    try:
        blob = repo.commit(commit).tree / name
        data: bytes = blob.data_stream.read()
    except (git.BadName, git.BadObject, git.GitError, OSError, KeyError, ValueError,
            TypeError):
        return None
    return data.decode("utf-8", errors="replace")


def file_at(root: Path, commit: str, path: str) -> str | None:
    """A file's text at a commit (``path`` relative to ``root``), None if it was not there."""
    with _repository(root) as repo:
        name = _in_tree(repo, root / path) if repo is not None else None
        return _text(repo, commit, name) if repo is not None and name else None


def versions(path: Path, depth: int) -> Iterator[str]:
    """A file's text at each of the last ``depth`` commits that changed it, newest first,
    read one at a time; nothing outside a work tree or without git."""
    git = _gitpython()
    with _repository(path.parent) as repo:
        name = _in_tree(repo, path) if repo is not None else None
        if repo is None or not name:
            return
        try:
            commits = [c.hexsha for c in repo.iter_commits(paths=name, max_count=depth)]
        except (git.GitError, OSError, ValueError):
            return
        for commit in commits:
            text = _text(repo, commit, name)
            if text is not None:
                yield text
