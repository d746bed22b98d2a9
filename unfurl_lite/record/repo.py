"""Which uncommitted files a job may run with, and which of them its commit takes along.

A job's commit is the deployment's history: what it ran and what it left. When the spec
the job ran from was edited and not committed (``ensemble.yaml`` itself, or a file it
reads through ``+include`` or a TOSCA ``imports:``), committing only the status would
record a job against a spec git never saw. So, with ``--dirty=auto``, the ensemble's own
spec files are committed with the job (Unfurl's job commit takes every changed file of
the ensemble's repository); any other uncommitted change still stops the job, since it
may be a half-finished edit nobody meant to deploy.
"""

from __future__ import annotations

import os
from pathlib import Path

from unfurl_lite.errors import JobError, UnfurlLiteError
from unfurl_lite.load.gitrepo import Repo
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.record import lock

#: --dirty's values, in the order of how much they let through
MODES = ("abort", "auto", "ok")


def spec_files(ensemble: Ensemble) -> list[Path]:
    """The files the ensemble's spec is made of: the ensemble and every existing file its
    merge directives and TOSCA imports read, however deep."""
    from unfurl_lite.load import imports, merge  # start-up: keeps ruamel (59 modules) off `deploy`

    reads: dict[str, str | None] = {}
    root = ensemble.project_root
    try:
        merged = merge.expand(ensemble.document, ensemble.path, root, reads=reads)
        imports.apply(merged, ensemble.path, root, reads=reads)
    except UnfurlLiteError:  # it loaded a moment ago: a file changed since; what was read
        pass
    return [ensemble.path, *(Path(name) for name, digest in reads.items() if digest is not None)]


def dirty_check(repo: Repo | None, ensemble: Ensemble, mode: str,
                status: list[tuple[str, str]] | None = None) -> list[Path]:
    """The uncommitted spec files to commit with the job; a JobError naming the other
    uncommitted changes when ``mode`` does not let them through.

    ``abort``: any uncommitted tracked change stops the job. ``auto``: the ensemble, its
    records and its spec files (committed with the job, new ones too) do not. ``ok``:
    nothing stops it, and only the job's own files are committed. ``status``: what
    :meth:`Repo.status` found, read instead of asking git again."""
    if repo is None or mode == "ok":
        return []
    everything = repo.dirty_files(status)
    dirty = everything
    if mode == "auto":
        # start-up: keeps record.leftovers (62 modules) off repo's import until dirty_check() runs
        from unfurl_lite.record.leftovers import is_record

        own = {repo.relative(ensemble.path), repo.relative(ensemble.jobs_tsv)}
        dirty = [f for f in dirty
                 if f not in own and not is_record(repo.root / f, ensemble.project_root)
                 and not being_recorded(repo.root, repo.root / f)]
        if dirty:  # asked again: another ensemble's job may have committed them meanwhile
            # (its lock, which being_recorded looks for, is gone once its commit is made)
            still = set(repo.dirty_files())
            dirty = [f for f in dirty if f in still]
    spec: list[Path] = []
    if mode == "auto" and (dirty or repo.relative(ensemble.path) in everything):
        spec = [p for p in repo.uncommitted(spec_files(ensemble)) if p != ensemble.path]
        taken = {repo.relative(p) for p in spec}
        dirty = [f for f in dirty if f not in taken]
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        ours = " (the ensemble's own spec files are committed with the job)" \
            if mode == "auto" else ""
        raise JobError(
            f"the repository has uncommitted changes: {shown}",
            hint=f"commit or stash them, or pass --dirty=ok to run anyway{ours}",
        )
    return spec


def being_recorded(root: Path, path: Path) -> bool:
    """Is ``path`` in the directory of another ensemble whose job is running now (it is
    between its ``git add`` and ``git commit``)? Ensembles sharing a repository deploy
    at once."""
    for directory in path.parents:
        info = lock.holder(directory)
        if info is not None and info.alive and info.pid not in (-1, os.getpid()):
            return True
        if directory == root:
            return False
    return False
