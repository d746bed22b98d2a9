"""Installing shell completion the way click documents it: a line in the shell's start-up
file that sources ``_UNFURL_COMPLETE=<shell>_source unfurl`` (for fish, a completions file).

Installing twice changes nothing, and nothing but that one line (or file) is touched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import UnfurlLiteError

SHELLS = ("bash", "zsh", "fish")
MARKER = "# unfurl shell completion"


@dataclass(frozen=True)
class Installed:
    """Where a completion script was installed, and whether this run changed anything."""
    shell: str
    path: Path
    changed: bool  # False: it was already installed

    def as_json(self) -> dict[str, object]:
        return {"shell": self.shell, "file": str(self.path), "changed": self.changed}


def detect_shell(env_shell: str | None = None) -> str:
    """The login shell from $SHELL, when it is one we complete for; else bash."""
    name = Path(env_shell if env_shell is not None else os.environ.get("SHELL", "")).name
    return name if name in SHELLS else "bash"


def source_line(shell: str) -> str:
    if shell == "fish":
        return "_UNFURL_COMPLETE=fish_source unfurl | source"
    return f'eval "$(_UNFURL_COMPLETE={shell}_source unfurl)"'


def target_file(shell: str, home: Path) -> Path:
    if shell == "fish":
        return home / ".config" / "fish" / "completions" / "unfurl.fish"
    return home / (".zshrc" if shell == "zsh" else ".bashrc")


def install(shell: str, home: Path | None = None) -> Installed:
    if shell not in SHELLS:
        raise UnfurlLiteError(f"no completion for shell {shell!r}", hint="use bash, zsh or fish")
    path = target_file(shell, home or Path.home())
    line = source_line(shell)
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
        if line in existing.splitlines():
            return Installed(shell, path, changed=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        separator = "" if not existing or existing.endswith("\n") else "\n"
        with path.open("a", encoding="utf-8") as out:
            out.write(f"{separator}{MARKER}\n{line}\n")
    except OSError as exc:
        raise UnfurlLiteError(
            f"could not install completion in {path}: {exc.strerror or exc}",
            hint=f"add this line yourself: {line}",
        ) from None
    return Installed(shell, path, changed=True)
