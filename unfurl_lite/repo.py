"""The ensemble's git repository: dirty checks, the job's commit, history look-ups.

GitPython is imported only here and only when needed, so commands that never touch git
(``--version``, ``--help``, ``validate``) start fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unfurl_lite.errors import GitError


@dataclass(frozen=True)
class Repo:
    root: Path
    handle: Any  # git.Repo

    def relative(self, path: Path) -> str:
        return str(path.resolve().relative_to(self.root))

    def head(self) -> str | None:
        try:
            return str(self.handle.head.commit.hexsha)
        except ValueError:  # no commits yet
            return None

    def dirty_files(self) -> list[str]:
        """Tracked files with uncommitted changes (staged or not)."""
        output = self.handle.git.status("--porcelain", "--untracked-files=no")
        return [line[3:].split(" -> ")[-1] for line in output.splitlines() if line.strip()]

    def commit(self, paths: list[Path], message: str) -> str:
        """Commit exactly these paths (added if new); returns the new commit's hash."""
        import git

        relative = [self.relative(p) for p in paths if p.exists()]
        if self.handle.head.is_detached:
            raise GitError(
                "git commit refused: HEAD is detached, so the commit would belong to no branch",
                hint="the ensemble and records are saved; switch to a branch "
                "(git switch -c NAME) and commit them: git add -A && git commit",
            )
        try:
            self.handle.git.add("--", *relative)
            self.handle.git.commit("-m", message, "--", *relative)
        except git.GitCommandError as exc:
            stderr = (exc.stderr or "").strip().replace("stderr: ", "")
            hint = "the ensemble and records are saved; fix git and commit them by hand"
            if "index.lock" in stderr:
                hint = (
                    "another git process is running, or one crashed and left "
                    ".git/index.lock: if no git command is running, delete it; " + hint
                )
            elif "user.email" in stderr or "identity" in stderr.lower():
                hint = (
                    "set your identity: git config user.email you@example.com && "
                    "git config user.name 'Your Name'; " + hint
                )
            raise GitError(f"git commit failed: {stderr or exc}", hint=hint) from None
        return str(self.handle.head.commit.hexsha)


def find_repo(path: Path) -> Repo | None:
    import git

    try:
        handle = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if handle.bare or handle.working_tree_dir is None:
        return None
    return Repo(Path(handle.working_tree_dir).resolve(), handle)


def init_repo(path: Path) -> Repo:
    import git

    handle = git.Repo.init(path)
    return Repo(Path(handle.working_tree_dir or path).resolve(), handle)
