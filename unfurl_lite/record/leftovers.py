"""Records a job wrote but never committed: it was killed between writing and committing
(or between ``git add`` and ``git commit``), git failed (a full disk, a stale
index.lock), or it ran with ``--no-commit``. The next job on the ensemble, or ``unfurl
resume``, commits them first, in a commit of their own, so no record stays staged or
untracked forever and none blocks later jobs as "uncommitted changes".

Only files that are records of this ensemble's directory are taken: jobs.tsv, job and
changelog files, and journals already marked recorded (a journal still being resumed is
not, nor any events file). The caller holds the ensemble's lock, so no job is writing them.
"""

from __future__ import annotations

import re
from pathlib import Path

from unfurl_lite.load.gitrepo import Repo
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.record import records
from unfurl_lite.record.journal import PREFIX, read_journal

_JOB_FILE = re.compile(r"^job[-\d]+-(A[0-9A-Za-z]{7})\.yaml$")


def is_record(path: Path, root: Path) -> bool:
    parent = path.parent
    if parent == root / records.CHANGES_DIR:
        return bool(_JOB_FILE.match(path.name))
    if parent != root / records.JOBS_DIR:
        return False
    if _JOB_FILE.match(path.name):
        return True
    if path.name.startswith(PREFIX) and path.suffix == ".yaml":
        try:
            return read_journal(path).recorded
        except Exception:  # a damaged journal is resume's to report, not ours to commit
            return False
    return False


def uncommitted_records(repo: Repo, ensemble: Ensemble, with_ensemble: bool,
                        status: list[tuple[str, str]] | None = None) -> list[Path]:
    """The records under jobs.tsv, jobs/ and changes/ that are untracked or differ from
    HEAD; read from ``status`` (:meth:`Repo.status`, the whole work tree) when given and
    it lists them file by file, else asked of git for those paths alone."""
    root = ensemble.project_root
    candidates = [p for p in (ensemble.jobs_tsv, root / records.JOBS_DIR,
                              root / records.CHANGES_DIR)
                  if p.exists() and (p != ensemble.jobs_tsv or p.is_file())]
    listed = _listed(repo, candidates, status) if status is not None and candidates else None
    found = [p for p in (repo.uncommitted(candidates) if listed is None else listed)
             if p == ensemble.jobs_tsv or is_record(p, root)]
    if with_ensemble and found and repo.uncommitted([ensemble.path]):
        found.append(ensemble.path)
    return found


def _listed(repo: Repo, candidates: list[Path], status: list[tuple[str, str]]
            ) -> list[Path] | None:
    """The entries of ``status`` under ``candidates``; None when one of them (or a
    directory above one) is untracked as a whole, which status lists as one entry."""
    found: list[Path] = []
    for code, name in status:
        path = repo.root / name.rstrip("/")
        if code == "??" and name.endswith("/") and any(
                c == path or c.is_relative_to(path) or path.is_relative_to(c)
                for c in candidates):
            return None
        if any(path == c or path.is_relative_to(c) for c in candidates):
            found.append(path)
    return found


def commit_leftovers(repo: Repo, ensemble: Ensemble, with_ensemble: bool = False,
                     status: list[tuple[str, str]] | None = None,
                     committed: list[Path] | None = None) -> list[str]:
    """Commit what earlier jobs left uncommitted; the job prefixes it held ([] if none).

    ``with_ensemble`` (resume) commits ensemble.yaml too: its status is the killed job's.
    A new job leaves it to its own commit, since it may also hold the user's edits.
    ``status``: what :meth:`Repo.status` found, read instead of asking git again;
    ``committed`` is given the paths committed."""
    paths = uncommitted_records(repo, ensemble, with_ensemble, status)
    if not paths:
        return []
    jobs = sorted({m.group(1) for p in paths if (m := _JOB_FILE.match(p.name))})
    named = ", ".join(jobs) if jobs else "an earlier job"
    repo.commit(paths, f"Recording what job {named} left uncommitted")
    if committed is not None:
        committed.extend(paths)
    return jobs
