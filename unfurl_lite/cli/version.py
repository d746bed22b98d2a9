"""The version line, without click: ``unfurl --version`` answers before the command
group (and click) is imported, so it costs little more than the interpreter's start."""

from __future__ import annotations

from pathlib import Path

from unfurl_lite import __version__


def version_text() -> str:
    commit = _source_commit(Path(__file__).resolve().parents[2] / ".git")
    return f"unfurl-lite {__version__}" + (f" (commit {commit[:12]})" if commit else "")


def _source_commit(git: Path) -> str:
    """The checkout's HEAD commit read from .git's files (no git process, no GitPython):
    a worktree's ``.git`` file, loose and packed refs."""
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            git = (git.parent / git.read_text().strip().removeprefix("gitdir: ")).resolve()
        common = git
        if (git / "commondir").exists():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        ref = (git / "HEAD").read_text().strip()
        if not ref.startswith("ref: "):
            return ref
        name = ref[5:]
        for base in (git, common):
            if (base / name).exists():
                return (base / name).read_text().strip()
        packed = common / "packed-refs"
        for line in packed.read_text().splitlines() if packed.exists() else ():
            sha, _, ref_name = line.partition(" ")
            if ref_name == name:
                return sha
    except OSError:
        pass
    return ""
