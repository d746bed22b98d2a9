"""The clone's own key for digests of environment values (see
:mod:`unfurl_lite.expressions.digest`): kept in the git directory, which git never commits,
so the digests in the committed records cannot be brute-forced to the values.

Found without running git: ``.git`` is the directory, or (in a worktree or submodule) a
file naming it, whose ``commondir`` names the repository's shared one. Outside a git
repository there is no key, and environment values take no part in digests.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

KEY_FILE = "unfurl-lite-digest-key"


def git_dir(start: Path) -> Path | None:
    """The repository's (common) git directory holding ``start``, or None."""
    for folder in (start, *start.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return marker
        if marker.is_file():
            text = marker.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            found = (folder / text[len("gitdir:"):].strip()).resolve()
            common = found / "commondir"
            if common.is_file():
                found = (found / common.read_text(encoding="utf-8").strip()).resolve()
            return found if found.is_dir() else None
    return None


def digest_key(project_root: Path) -> bytes | None:
    """The key, made on first use (random, readable by its owner only); None outside git."""
    directory = git_dir(project_root.resolve())
    if directory is None:
        return None
    path = directory / KEY_FILE
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    key = os.urandom(32)  # what secrets.token_bytes gives (secrets imports hmac: OpenSSL)
    temporary = path.with_name(f"{KEY_FILE}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(key.hex() + "\n")
        os.link(temporary, path)  # the first writer wins; a racing one reads its key
    except FileExistsError:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except OSError:
        return None  # a read-only repository: no key, so no environment digests
    finally:
        temporary.unlink(missing_ok=True)
    return key


def key_provider(project_root: Path) -> Callable[[], bytes | None]:
    """A provider for :func:`unfurl_lite.expressions.digest.input_digest`, asked only when an
    environment value is digested."""
    return lambda: digest_key(project_root)
