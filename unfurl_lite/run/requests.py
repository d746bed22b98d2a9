"""What an operation is sent and what its results are read with: the evaluation
context of a task, its rendered inputs and environment as an OperationRequest, and the
``done``/``resultTemplate`` inputs evaluated against its result.

Kept apart from the scheduler, which decides when a task runs and what its outcome does
to the instance; this module only turns a task and the instances into values, so every
executor gets the same request and every result is read the same way.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from unfurl_lite.expressions.context import (
    POST_INPUTS,
    known_secrets,
    make_context,
    plain_inputs,
    relationship_view,
    render_inputs,
    wrapped_inputs,
)
from unfurl_lite.expressions.expr import EvalContext, evaluate
from unfurl_lite.expressions.lazy import Labelled
from unfurl_lite.expressions.limits import task_deadline
from unfurl_lite.expressions.reads import (
    Reads,
    merged_reads,
    operation_reads,
    plain_reads,
    watch_reads,
    watched_inputs,
)
from unfurl_lite.model import changeid
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.model.entities import Instance, NodeTemplate
from unfurl_lite.model.narrow import new_dict
from unfurl_lite.model.routing import agent_of
from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.run.options import JobOptions
from unfurl_lite.run.outcome import TaskRun
from unfurl_lite.run.relationships import relationship_instance
from unfurl_lite.run.results import apply_post_inputs, map_outputs, secret_name
from unfurl_lite.run.status import in_sequence
from unfurl_lite.security import environment as openv
from unfurl_lite.security.taint import secrets_in

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass
class Trial:
    """A task's render in the render phase, which its run takes instead of rendering
    again while the values it read are unchanged: kept only for a render whose result
    those values decide (it read no instance's status, missing key or keys as a whole,
    walked no query over the instances, and is not a Python operation's, whose code
    reads the instance itself)."""

    inputs: dict[str, Any]
    environment: dict[str, Any] | None
    reads: Reads
    read: dict[str, dict[str, Any]]  # by instance: the values read

    def fresh(self, ctx: EvalContext) -> bool:
        """Whether every value the render read is what ``ctx`` reads now."""
        instances = ctx.instances or {}
        for name, values in self.read.items():
            if not values or (name not in instances and name.startswith("\0")):
                continue  # the root's inputs (get_input): fixed for the job
            view = ctx.lookup_node(name) if name in instances else None
            if view is None:
                return False
            try:
                if any(view[key] != value for key, value in values.items()):
                    return False
            except Exception:  # what fails now rendered then: render again, and say why
                return False
        return _data(self.inputs) and _data(self.environment)


def _data(value: Any) -> bool:
    """Plain data (an evaluation may give a view or a lazy mapping, which read later)."""
    kind = type(value)
    if kind is dict or isinstance(value, Labelled):
        return all(_data(v) for v in value.values())
    if kind is list or kind is tuple:
        return all(_data(v) for v in value)
    return value is None or isinstance(value, str | int | float)


@dataclass
class RequestBuilder:
    """Builds each task's request from the job's shared state; ``secrets`` and
    ``instances`` are the scheduler's own objects, updated as tasks render."""

    ensemble: Ensemble
    instances: dict[str, Instance]
    options: JobOptions
    job_id: changeid.ChangeId
    cancel: threading.Event
    secrets: set[str]
    env: dict[str, str]
    metadata: Mapping[str, Any]
    #: the render phase's renders a task's run may take (see :class:`Trial`), by number
    trials: dict[int, Trial] = field(default_factory=new_dict)
    #: what each template gives every task on its instances, worked out for its first
    #: (the spec does not change while a job runs): the secrets known before rendering,
    #: those its properties hold, its agent's queue
    _by_template: dict[str | None, tuple[set[str], list[str], str | None]] = field(
        default_factory=new_dict, init=False, repr=False)
    #: the topology's inputs with the sensitive ones wrapped, and the project directory as
    #: text: the same for every task (each template's facts are asked once, by its task)
    _inputs: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _cwd: str = field(default="", init=False, repr=False)
    #: every task's environment but its changeId (the same for the job), made once
    _job_env: dict[str, str] | None = field(default=None, init=False, repr=False)

    @property
    def cwd(self) -> str:
        if not self._cwd:
            self._cwd = str(self.ensemble.project_root)
        return self._cwd

    def _template_facts(self, template: NodeTemplate | None, name: str
                        ) -> tuple[set[str], list[str], str | None]:
        found = self._by_template.get(name)
        if found is None:
            topology = self.ensemble.topology
            if self._inputs is None:
                self._inputs = wrapped_inputs(topology)
            found = (known_secrets(self._inputs, template),
                     list(secrets_in(template.properties)) if template else [],
                     agent_of(topology, name))
            self._by_template[name] = found
        return found

    def task_settings(self, run: TaskRun) -> dict[str, Any]:
        """The ``task`` variable of templates, with the keys Unfurl's TaskView gives it."""
        task, op = run.task, run.task.operation
        return {
            "name": op.qualified_name if op else task.name,
            "operation": task.name,
            "workflow": task.workflow,
            "reason": task.reason,
            "target": task.target,
            "dryrun": self.options.dryrun,
            "timeout": op.timeout if op else None,
            "cwd": self.cwd,
            "verbose": 0,
        }

    def context(self, run: TaskRun) -> EvalContext:
        task = run.task
        ctx = make_context(
            self.ensemble.topology, self.instances, task.target, task.source, task.peer
        )
        ctx.project_root = self.ensemble.project_root
        ctx.allow_outside_paths = self.options.allow_outside_paths
        ctx.env_passthrough = self.options.env_passthrough
        ctx.metadata = self.metadata
        ctx.cancel = self.cancel  # a render stops when the job is cancelled
        if task.requirement is not None and task.source:
            link = relationship_instance(self.instances, task, attach=False)
            view = relationship_view(ctx, task.source, task.requirement.name,
                                     link.attributes if link is not None else {})
            if view is not None:
                ctx.self_view = view
        return ctx

    def request(self, run: TaskRun, instance: Instance) -> OperationRequest:
        """Render the task's inputs and environment (recording what they read) into the
        request an executor runs; raises what rendering raises."""
        task = run.task
        op = task.operation
        assert op is not None and op.implementation is not None
        began = time.monotonic()
        inputs = op.run_inputs
        template = self.ensemble.topology.templates.get(instance.template)
        known, held, queue = self._template_facts(template, instance.template)
        properties = dict(template.properties) if template else {}
        own_properties = True  # the template's: their secrets are known (``held``)
        attributes = dict(instance.attributes)
        plain = None
        if op.environment is None and op.implementation.kind != "Python":
            self.secrets.update(known)
            plain = plain_inputs(inputs, task.extra_inputs, task.allow_override)
        environment, ctx = None, None
        trial = self.trials.pop(task.number, None)
        if plain is not None:  # nothing to evaluate: no evaluation context to build
            run.inputs = plain
        elif trial is not None and trial.fresh(self.context(run)):  # rendered once
            run.inputs, environment, run.reads = trial.inputs, trial.environment, trial.reads
        else:
            trial = None
            ctx = self.context(run)
            ctx.deadline, ctx.time_limit = task_deadline(op.timeout, began)
            ctx.extra = {**ctx.extra, "task": self.task_settings(run)}
            try:
                run.inputs = render_inputs(inputs, task.extra_inputs, ctx, task.allow_override)
                if op.implementation.kind == "Python":  # its code may read any: send values
                    properties = dict(ctx.self_view.get("properties") or {})
                    own_properties = False
                    attributes = dict(ctx.self_view.get("attributes") or {})
                if op.environment is not None:
                    environment = {k: evaluate(v, ctx) for k, v in op.environment.items()}
            finally:
                self.secrets.update(ctx.secrets)
        raw = inputs | dict(task.extra_inputs)
        if trial is None:
            run.reads = plain_reads(raw, op.environment, op.implementation.kind)
        if run.reads is None:  # something is evaluated: watch what it reads
            watching = self.context(run)
            if ctx is not None:
                watching.extra = ctx.extra
            else:
                watching.extra = {**watching.extra, "task": self.task_settings(run)}
            watching.deadline, watching.time_limit = task_deadline(op.timeout, time.monotonic())
            run.reads = operation_reads(raw, op.environment, op.implementation.kind, watching)
        refused = unmet_preconditions(op.implementation.preconditions, attributes, properties)
        if refused:  # as Unfurl: a task that could not run digests nothing
            run.reads = Reads(())
        elif op.implementation.preconditions and run.reads is not None:
            run.reads = whole_target_read(run.reads, instance.name, attributes, properties)
        run.digest = None  # taken again from the new inputs and reads
        self.secrets.update(secrets_in(run.inputs))
        if not own_properties:
            self.secrets.update(secrets_in(properties))
        elif held:
            self.secrets.update(held)
        if attributes:
            self.secrets.update(secrets_in(attributes))
        if self._job_env is None:  # resume tells its orphans by the job and the ensemble
            self._job_env = {**self.env, "UNFURL_JOB": str(self.job_id), "UNFURL_CHANGEID": "",
                             "UNFURL_ENSEMBLE": str(self.ensemble.path)}
        env = {**self._job_env, "UNFURL_CHANGEID": run.change_id or ""}
        if environment is not None:
            self.secrets.update(secrets_in(environment))
            env = openv.apply_rules(environment, env)
        return OperationRequest(
            task_id=run.change_id or "",
            kind=op.implementation.kind,
            class_name=op.implementation.class_name,
            target=instance.name,
            operation=op.qualified_name,
            inputs=run.inputs,
            cwd=self.cwd,
            env=env,
            timeout=max(0.001, op.timeout - (time.monotonic() - began)) if op.timeout else None,
            dryrun=self.options.dryrun,
            attributes=attributes,
            properties=properties,
            queue=queue,
            allow_outside_paths=self.options.allow_outside_paths,
            number=task.number,
            refused=refused,
        )

    def read_result(self, run: TaskRun, result: OperationResult) -> None:
        """Evaluate the task's ``done``/``resultTemplate`` against its result (what they
        read is digested too, as in Unfurl), then map its outputs to attributes: even when
        the resultTemplate failed, as Unfurl maps ``done``'s outputs first."""
        try:
            self._read_post_inputs(run, result)
        finally:
            map_outputs(run.task.operation, result, not in_sequence(run.task))

    def _read_post_inputs(self, run: TaskRun, result: OperationResult) -> None:
        """A context is built only when there is a ``done`` or a resultTemplate."""
        if not any(run.inputs.get(k) is not None for k in POST_INPUTS):
            return
        op = run.task.operation
        assert op is not None and op.implementation is not None
        ctx = self.context(run)
        current = ctx.self_view
        instance = self.instances[run.task.target]
        template = self.ensemble.topology.templates.get(instance.template)
        properties = frozenset(k for k in (template.properties if template else ())
                               if k not in instance.attributes)
        later = watch_reads(ctx)
        raw = op.run_inputs | dict(run.task.extra_inputs)
        noted = watched_inputs(run.inputs, later, raw, run.reads, ctx)
        ctx.operation_inputs = noted
        ctx.extra = {"task": self.task_settings(run)}
        topology = self.ensemble.topology

        def attribute_set(key: str, raw: Any, value: Any) -> Any:
            value = noted.as_rendered(raw, value)
            noted.attribute_set(key, value, template is not None
                                and secret_name(topology, template, key))
            return value

        try:
            apply_post_inputs(run.inputs, result, ctx, op.implementation.kind, current,
                              properties, attribute_set)
        finally:
            self.secrets.update(ctx.secrets)
            run.reads = merged_reads(run.reads, later, ctx, op.implementation.kind, list(raw))
            run.digest = None


def _target_values(attributes: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """The target's map as Unfurl's ``target.attributes`` gives it: its attributes, then
    its properties (by name) that no attribute overrides."""
    return {**attributes, **{k: properties[k] for k in sorted(properties) if k not in attributes}}


def unmet_preconditions(conditions: str | None, attributes: Mapping[str, Any],
                        properties: Mapping[str, Any]) -> str | None:
    """Why the target's values do not meet the operation's ``preConditions`` (a JSON
    schema), in Unfurl's words; None when they do or it has none."""
    if conditions is None:
        return None
    from jsonschema import Draft7Validator  # start-up: jsonschema only for preConditions

    values = _target_values(attributes, properties)
    errors = sorted(Draft7Validator(json.loads(conditions)).iter_errors(values),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    said = "; ".join(f"{e.message} in {'.'.join(str(p) for p in e.absolute_path)}"
                     for e in errors)
    return f"could not run: invalid preconditions: {said}"


def whole_target_read(reads: Reads, name: str, attributes: Mapping[str, Any],
                      properties: Mapping[str, Any]) -> Reads:
    """Unfurl checks ``preConditions`` against the target's whole map: each of its values
    is read first (see :func:`_target_values`), so each is in the task's digest."""
    seen = {expr for expr, _ in reads.dependencies}
    first = tuple((f"::{name}::{key}", value)
                  for key, value in _target_values(attributes, properties).items()
                  if f"::{name}::{key}" not in seen)
    return replace(reads, dependencies=first + reads.dependencies)
