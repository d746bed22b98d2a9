"""What an executor sends to an operation and what comes back: plain, picklable data.

The controller (the job process) renders inputs and owns every status decision; an
operation only runs and reports. Keeping both ends plain data is what lets the same task
run on a local thread or on a remote Celery worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from unfurl_lite.model.narrow import new_dict, new_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Unfurl's message for a task asked to dry-run an operation that has no dry-run form
DRYRUN_NOT_SUPPORTED = "could not run: dry run not supported"


@dataclass
class OperationRequest:
    """Everything an executor needs to run one operation, rendered."""
    task_id: str  # the task's changeId
    kind: str  # Shell, Template, Python
    class_name: str
    target: str  # instance name
    operation: str  # qualified, e.g. Standard.create
    inputs: dict[str, Any] = field(default_factory=new_dict)
    cwd: str = "."
    env: dict[str, str] = field(default_factory=new_dict)
    timeout: float | None = None
    dryrun: bool = False
    attributes: dict[str, Any] = field(default_factory=new_dict)
    properties: dict[str, Any] = field(default_factory=new_dict)
    queue: str | None = None  # agent queue, for distributed executors
    allow_outside_paths: bool = False  # cwd may leave the project (--allow-outside-paths)
    #: the task's number in its plan: the same in a job and the jobs that resume it (a
    #: distributed executor keys its lease on it)
    number: int = 0
    #: why it may not run (its implementation's ``preConditions`` not met): it fails so
    refused: str | None = None


@dataclass
class OperationResult:
    """What an operation reported: success, changes, status and outputs."""
    success: bool
    modified: bool | None = None  # None: the operation did not say
    #: ``modified`` came from a ``done`` input or a resultTemplate, not the operation's own
    #: default (Unfurl's Shell says nothing on success: only what the user says counts)
    said_modified: bool = False
    status: str | None = None  # an explicit operational status, e.g. from a check
    #: a node state it set (an output mapped to ``.state``): the task's own end state
    #: then does not apply, as in Unfurl
    state: str | None = None
    attributes: dict[str, Any] = field(default_factory=new_dict)
    outputs: dict[str, Any] = field(default_factory=new_dict)
    error: str | None = None
    retry: bool = False  # the operation asked to be tried again
    worker: str = "local"
    skipped: bool = False  # e.g. a dry run of a command without a dryrun form
    resources: list[dict[str, Any]] = field(default_factory=new_list)  # discovered instances
    protected: bool | None = None  # a resultTemplate marked the target (un)protected
    #: False when the operation never started (no worker took it, the worker could not
    #: get the job's commit, it was cancelled while queued): nothing about its instance
    #: changed, whatever a ``done`` input or a check's status rules would say
    ran: bool = True


class RetryOperation(Exception):
    """Raised by a Python operation to ask for the task to be rescheduled."""
