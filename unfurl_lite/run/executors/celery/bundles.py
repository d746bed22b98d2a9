"""How a job's commit reaches workers that do not share the controller's files: a git
bundle through the broker.

Chosen over pushing to a remote because it needs nothing more than the broker every
worker already reaches: no remote to configure, no credentials on the controller, no
refs pushed anywhere, and a commit that was never pushed (a local project) still runs.
When a job starts, the controller stores a bundle of its commit in Redis, built on the
project's previous bundle when that one is an ancestor (so a job costs the size of what
changed, not of the repository), a whole one every ``CHAIN`` jobs. A worker missing the
commit reads the bundles it lacks, newest first down to a commit it has, and fetches
them in order. Bundles expire after ``KEEP_SECONDS``; a worker that finds a chain broken
fetches from the repository's URL instead (``remote.origin.url``).

Keys are by the project's root commit, so clones of one project share them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from unfurl_lite.errors import GitError
from unfurl_lite.load import gitrepo
from unfurl_lite.run.executors.celery.lineage import PREFIX, text

BUNDLE_KEY = PREFIX + "bundle:"  # + root:commit -> the bundle's bytes
BASE_KEY = PREFIX + "bundle-base:"  # + root:commit -> the commit it builds on ("": whole)
LAST_KEY = PREFIX + "bundle-last:"  # + root -> "commit depth"
KEEP_SECONDS = 7 * 24 * 3600
CHAIN = 20
MAX_BYTES = 256 * 1024 * 1024  # Redis keeps strings up to 512 MB

log = logging.getLogger(__name__)


def publish(client: Any, top: str, commit: str, root: str) -> str | None:
    """Make ``commit`` of the repository at ``top`` fetchable through the broker; a
    warning (the bundle would be too large) or None."""
    name = f"{root}:{commit}"
    if client.expire(BUNDLE_KEY + name, KEEP_SECONDS):
        client.expire(BASE_KEY + name, KEEP_SECONDS)
        return None
    base, depth = "", 0
    last, _, last_depth = text(client.get(LAST_KEY + root)).partition(" ")
    if last and last != commit and int(last_depth or 0) < CHAIN \
            and client.exists(BUNDLE_KEY + f"{root}:{last}") and _is_ancestor(top, last, commit):
        base, depth = last, int(last_depth or 0) + 1
    data = _bundle(top, commit, base)
    if len(data) > MAX_BYTES:
        return (f"the job's commit is {len(data) // 2**20} MB as a bundle: too large for "
                "the broker; workers fetch it from the repository's URL (push it first)")
    with client.pipeline() as pipe:
        pipe.set(BUNDLE_KEY + name, data, ex=KEEP_SECONDS)
        pipe.set(BASE_KEY + name, base, ex=KEEP_SECONDS)
        pipe.set(LAST_KEY + root, f"{commit} {depth}", ex=KEEP_SECONDS)
        pipe.execute()
    return None


def fetch(client: Any, repository: Path, commit: str, root: str) -> bool:
    """Fetch ``commit`` into ``repository`` from the broker's bundles; False when they
    do not reach it (expired, or never published)."""
    chain: list[bytes] = []
    wanted = commit
    while wanted and not gitrepo.has_commit(repository, wanted):
        name = f"{root}:{wanted}"
        data = client.get(BUNDLE_KEY + name)
        if data is None:
            return False
        chain.append(data)
        wanted = text(client.get(BASE_KEY + name))
    for data in reversed(chain):
        with tempfile.NamedTemporaryFile(suffix=".bundle", delete=False) as handle:
            handle.write(data)
        try:
            gitrepo.output(repository, "fetch", "--quiet", handle.name,
                           "+HEAD:refs/unfurl-lite/fetched")
        except GitError as exc:
            log.warning("could not fetch a bundle of %s: %s", commit[:12], exc.message)
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(handle.name)
    return gitrepo.has_commit(repository, commit)


def root_commit(top: str) -> str:
    """The project's identity: its first commit (the oldest root, for a merged history)."""
    try:
        roots = gitrepo.output(top, "rev-list", "--max-parents=0", "HEAD").split()
    except GitError:
        return ""
    return roots[-1] if roots else ""


def _is_ancestor(top: str, older: str, newer: str) -> bool:
    return gitrepo.run(top, "merge-base", "--is-ancestor", older, newer).ok


def _bundle(top: str, commit: str, base: str) -> bytes:
    """A bundle whose HEAD is ``commit`` (with everything since ``base``)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "job.bundle"
        head = gitrepo.head_of(top)
        ref = "HEAD"
        if head != commit:  # the controller's HEAD moved since: a ref of our own, briefly
            ref = f"refs/unfurl-lite/bundle-{os.getpid()}"
            gitrepo.output(top, "update-ref", ref, commit)
        try:
            gitrepo.output(top, "bundle", "create", "--quiet", str(path), ref,
                           *([f"^{base}"] if base else []))
        finally:
            if ref != "HEAD":
                gitrepo.run(top, "update-ref", "-d", ref)
        return path.read_bytes()
