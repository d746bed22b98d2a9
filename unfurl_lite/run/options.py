"""What a caller asks of a job, as two typed records side by side: :class:`PlanOptions`
(what to plan: the workflow's parameters) and :class:`JobOptions` (how to run and record
it), with their defaults and what a job records of them in ``lastJob.options``.

The CLI and the library build the same records, so the same job records the same options
whichever way it was asked for. The parameters themselves, with their types, are declared
once in :mod:`unfurl_lite.model.builtin_workflows`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from unfurl_lite.errors import PlanError
from unfurl_lite.model.builtin_workflows import BY_NAME, CUSTOM_TAKES, PARAMETERS, Kind
from unfurl_lite.model.narrow import new_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue


def coerce(name: str, value: YAMLValue, kind: Kind) -> Any:
    """``value`` as a parameter of ``kind`` takes it (a ``-p`` value is read as YAML; a
    list of names may be given as ``a,b``); PlanError naming what was expected."""

    def wrong(expected: str) -> PlanError:
        return PlanError(f"{name}: expected {expected}, got {value!r}")

    if value is None:  # `-p name=`: empty, where empty means something
        if kind in ("flag", "integer"):
            raise wrong("true or false" if kind == "flag" else "an integer")
        return () if kind in ("names", "argv") else {} if kind == "mapping" else None
    if kind in ("names", "argv"):
        if isinstance(value, str) and kind == "names":
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise wrong("a list of names")
    if kind == "mapping":
        if not isinstance(value, Mapping):
            raise wrong('a mapping, e.g. {"port": 8080}')
        return dict(value)
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        return value
    if kind == "text":
        if isinstance(value, Mapping | list | tuple):
            raise wrong("a string")
        return str(value)
    if not isinstance(value, bool):
        raise wrong("true or false")
    return value


class PlanOptions:
    """What to plan, beyond the workflow's name: the parameters given, by their
    (Unfurl's and Cloudify's) names, each checked against its declared type.

    A name given is a choice; a name not given leaves the workflow's own default (Cloudify's
    start runs in dependency order unless told otherwise, execute_operation does not). A
    name no workflow takes is refused at once; one the workflow being planned does not
    take is refused when it is planned (:meth:`for_workflow`), naming those it does.
    """

    __slots__ = ("_given",)

    def __init__(self, **given: Any) -> None:
        unknown = sorted(set(given) - set(PARAMETERS))
        if unknown:
            raise PlanError(f"unknown plan option(s): {', '.join(unknown)}",
                            hint="the options are: " + ", ".join(sorted(PARAMETERS)))
        self._given = {name: coerce(name, value, PARAMETERS[name].kind)
                       for name, value in given.items() if value is not None}

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any]) -> PlanOptions:
        """Options from plain data (a journal's ``planOptions``, a parameters file)."""
        return cls(**{str(k): v for k, v in given.items()})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in PARAMETERS:
            raise AttributeError(name)
        return self._given.get(name)

    def get(self, name: str, default: Any = None) -> Any:
        """The value given for ``name``, else ``default``."""
        return self._given.get(name, default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PlanOptions) and self._given == other._given

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._given)))

    def __repr__(self) -> str:
        return "PlanOptions(" + ", ".join(f"{k}={v!r}" for k, v in self._given.items()) + ")"

    def given(self) -> dict[str, Any]:
        """The options set, as plain data (lists for names), as a journal keeps them."""
        return {name: list(value) if isinstance(value, tuple) else value
                for name, value in self._given.items()}

    def replace(self, **changes: Any) -> PlanOptions:
        return PlanOptions(**{**self._given, **changes})

    def for_workflow(self, workflow: str) -> dict[str, Any]:
        """The keyword arguments of ``workflow``'s planner (any other name is a custom
        TOSCA workflow, or unknown and refused by the planner); an option it does not take
        is an error naming the options it does."""
        declared = BY_NAME.get(workflow)
        takes = declared.takes if declared else CUSTOM_TAKES
        extra = sorted(set(self._given) - set(takes))
        if extra:
            import difflib  # start-up: a misspelled parameter only, not every job's imports

            close = difflib.get_close_matches(extra[0], takes, n=1)
            raise PlanError(
                f"{workflow} does not take the option(s) {', '.join(extra)}",
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"{workflow} takes: " + (", ".join(takes) or "no options"),
            )
        return dict(self._given)


@dataclass(kw_only=True)
class JobOptions:
    """How a job runs and is recorded (Unfurl's job options); the defaults are the CLI's."""

    dryrun: bool = False
    commit: bool = True
    message: str | None = None
    jobs: int = 0  # 0: twice the number of cores, at least 4 (:attr:`parallelism`)
    jobexitcode: str = "error"
    env_passthrough: bool = False
    allow_outside_paths: bool = False
    retries: int = 0
    retry_interval: float = 1.0
    #: what ``lastJob.options`` shows; {} means: work it out (:func:`recorded_options`)
    recorded: dict[str, Any] = field(default_factory=new_dict)

    @property
    def parallelism(self) -> int:
        """Tasks in flight at once. An operation mostly waits (for its command, a cloud's
        API), and the job's one thread hands out, records and finishes every task, so as
        many as there are cores leaves a core idle between short commands: N=200 `true`
        deployed in 0.33-0.36 s with 4 against 0.39-0.49 s with 2 on 2 cores (as Ansible's
        five forks and Terraform's parallelism of ten, more than the cores)."""
        return self.jobs if self.jobs > 0 else max(4, 2 * (os.cpu_count() or 2))


def recorded_options(options: JobOptions, plan_options: PlanOptions,
                     dirty: str = "auto") -> dict[str, Any]:
    """What ``lastJob.options`` shows, as Unfurl records it: the options set to something
    other than their default (the parameters under the names their declarations give),
    and ``commit`` always."""
    recorded: dict[str, Any] = {}
    if options.dryrun:
        recorded["dryrun"] = True
    recorded["commit"] = options.commit
    if dirty != "auto":
        recorded["dirty"] = dirty
    chosen = [(p.recorded_as, plan_options.get(name)) for name, p in PARAMETERS.items()
              if p.recorded_as]
    for name, value in [*chosen, ("jobs", options.jobs), ("retries", options.retries)]:
        if name and value not in (None, False, 0, (), []):
            recorded[name] = list(value) if isinstance(value, tuple) else value
    return recorded
