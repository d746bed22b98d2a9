"""What Unfurl's ``get_ensemble_metadata`` gives: the deployment (the folder holding the
ensemble), the job's changeId, and the ensemble's repository as Unfurl names it
(``unfurlproject``: its remote's path, else its folder's; ``revision``: HEAD's first eight
hex digits). The repository is read only when an expression asks (most jobs never do)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from urllib.parse import urlparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def project_path(url: str) -> str:
    """Unfurl's name for a repository from its URL (or folder): the path without its
    leading slash and its extension (``https://host/a/b.git`` is ``a/b``)."""
    parts = urlparse(url)
    if parts.scheme == "git-local":
        return parts.netloc.partition(":")[1]
    return os.path.splitext(parts.path.strip("/"))[0] or parts.netloc


class EnsembleMetadata(Mapping[str, "Any"]):
    """The mapping ``get_ensemble_metadata`` reads, one per job."""

    def __init__(self, ensemble_path: Path, job_id: str) -> None:
        self._path = ensemble_path
        self._job = job_id

    @cached_property
    def _values(self) -> dict[str, Any]:
        # start-up: keeps load.gitrepo (23 modules) off metadata's import until _values() runs
        from unfurl_lite.load.gitrepo import find_repo, remote_url

        values: dict[str, Any] = {"deployment": self._path.parent.name, "job": self._job}
        repo = find_repo(self._path.parent)
        if repo is not None:
            values["unfurlproject"] = project_path(remote_url(repo.root) or str(repo.root))
            values["revision"] = (repo.head() or "")[:8]
        return values

    def __getitem__(self, key: str) -> Any:
        if key in ("deployment", "job"):
            return self._path.parent.name if key == "deployment" else self._job
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)
