"""The Ensemble: one project's topology and its recorded instances, as read from disk.

Every layer above works on this one object: planners read its templates and instances,
the scheduler updates its instances, the record layer writes it back. It holds the file's
text too, because a job rewrites only the sections it changed and keeps the rest (comments,
order, quoting) as the user wrote it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from unfurl_lite.model.entities import Instance, Topology

#: beside the ensemble while a job runs on it, and left by a job that was killed: its
#: records are not in the ensemble yet (record/lock.py writes it)
LOCK_NAME = ".unfurl-lite.lock"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from unfurl_lite.model.documents import JobEntry, SpecDoc

#: how the loader parses the file's text into a round-trip document: (text, file) -> document
Parser: TypeAlias = "Callable[[str, str], Any]"


def _no_spec() -> SpecDoc:
    return {}


@dataclass
class Ensemble:
    """An ``ensemble.yaml``: the spec (templates, types, inputs) and the status of each
    instance, with what the loader needs to write it back unchanged where nothing changed.

    The model reads no files: the loader hands over its YAML parser (``parse``), so the
    round-trip document (comments and all, slow to build) is parsed only if a job asks.
    """

    path: Path
    text: str  # the file as read: what the round-trip document and section rewrites start from
    topology: Topology
    instances: dict[str, Instance]  # recorded instances, in recorded order
    last_job: JobEntry | None = None
    jobs_log: str = "jobs.tsv"
    spec: SpecDoc = field(default_factory=_no_spec)  # merged spec as plain data
    #: the file's own data as written (directives unapplied), for section rewrites
    plain: dict[str, Any] | None = None
    #: merge directives made the model's data differ from ``plain``
    merged: bool = False
    #: the file alone validates (False when a job's ``--var input_NAME`` gave a required
    #: input it lacks: what the job writes is not remembered as valid)
    valid_alone: bool = True
    #: the ensemble's own ``changes:`` list (Unfurl's inline job log), None when it has none
    changes: list[dict[str, Any]] | None = None
    #: jobs are logged in ``changes:`` (a list and no ``jobsLog``), as Unfurl does then
    inline_log: bool = False
    parse: Parser | None = field(default=None, repr=False, compare=False)
    _document: Any = field(default=None, repr=False)

    @property
    def document(self) -> Any:
        """The round-trip document (comments and all), parsed on first use."""
        if self._document is None:
            if self.parse is None:
                raise ValueError(f"{self.path}: no parser to read the round-trip document with")
            self._document = self.parse(self.text, str(self.path))
        return self._document

    @property
    def project_root(self) -> Path:
        return self.path.parent

    @property
    def jobs_tsv(self) -> Path:
        return self.project_root / self.jobs_log


def with_inputs(ensemble: Ensemble, values: dict[str, Any]) -> Ensemble:
    """The ensemble with some topology inputs set for one job (Unfurl's ``--var input_NAME
    VALUE``): over ``spec.inputs`` and the defaults, never written back to the spec."""
    if not values:
        return ensemble
    topology = replace(ensemble.topology, inputs={**ensemble.topology.inputs, **values})
    return replace(ensemble, topology=topology)
