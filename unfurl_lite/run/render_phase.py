"""The render phase: every operation's inputs rendered before the job runs anything.

Unfurl 1.2.0 renders each task of a job before it runs the first one. A task whose render
read a *live* value of another instance that a task of the same job may still change (an
attribute: declared as one, not a declared property, or one an operation set) waits for
that instance's tasks ("Cannot render yet, depends on ['::db::url']"): it is moved after
them and rendered again when it runs; in deploy it never runs when that instance did not
end operational ("Never ran: non-operational dependencies"). Any other render failure is
a configuration error, and the job is aborted before anything runs ("Aborting job: there
were errors during rendering"): nothing is recorded or committed, and the job's status is
error (exit 64 with ``--jobexitcode error``).

In undeploy a task whose render fails is left out of the job instead (Unfurl keeps it
waiting for a render that never comes: "Can not render yet, found errors"), and the rest
runs. Relationship operations render here too (their own instance is the relationship
instance: what they read of their source and target can make them wait). Cloudify's
workflows, guarded tasks and a resumed job (its first run rendered them) render nothing in
advance.

Just before a rendered task runs, what it read decides whether it may (:func:`unready_reads`,
Unfurl's check of a task's own dependencies).
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

from unfurl_lite.errors import ExpressionError, RenderCancelled, UnfurlLiteError
from unfurl_lite.expressions.context import POST_INPUTS, plain_inputs, render_inputs
from unfurl_lite.expressions.expr import evaluate
from unfurl_lite.expressions.limits import task_deadline
from unfurl_lite.expressions.reads import Reads, evaluated_reads, watch_reads
from unfurl_lite.model.entities import Instance, NodeTemplate, Priority, Status
from unfurl_lite.model.narrow import new_dict, new_list
from unfurl_lite.plan.tasks import Plan, Task
from unfurl_lite.run.outcome import TaskRun
from unfurl_lite.run.requests import RequestBuilder, Trial
from unfurl_lite.run.results import keep_defaults_read

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: an instance a task waited for is operational (deploy runs the task) with these
OPERATIONAL = (Status.ok, Status.degraded)
ABORT_MESSAGE = "Aborting job: there were errors during rendering"


@dataclass
class Rendered:
    """What the render phase found: ``errors`` (the job is aborted) and, per task that
    waits, the live values it read (``::db::url``) of instances other tasks change."""

    errors: list[str] = field(default_factory=new_list)
    waits: dict[int, tuple[str, ...]] = field(default_factory=new_dict)
    #: undeploy's tasks that cannot render, and why: left out of the job
    dropped: dict[int, str] = field(default_factory=new_dict)
    #: per task that waits, the value its render saw of each live value it waits for: the
    #: wait is over when a task changes it (see :func:`never_ran`)
    seen: dict[int, dict[str, Any]] = field(default_factory=new_dict)


def renders_first(plan: Plan, task: Task, templates: Mapping[str, NodeTemplate]) -> bool:
    """Whether ``task`` is rendered in the render phase (see the module's docstring)."""
    op = task.operation
    if op is None or op.implementation is None or task.failure is not None:
        return False
    if task.guard is not None:
        return False
    template = templates.get(task.template)
    return template is None or template.priority == Priority.required


def render_all(plan: Plan, instances: dict[str, Instance], builder: RequestBuilder,
               carried: Iterable[int] = ()) -> Rendered:
    """Render each task of ``plan`` the phase renders, with the instances as the job
    starts; nothing is sent and nothing is changed but the secrets the builder learns."""
    found = Rendered()
    if plan.cloudify:
        return found
    done = set(carried)
    templates = builder.ensemble.topology.templates
    changing = {t.target for t in plan.tasks if not t.is_passthrough and t.number not in done}
    for task in plan.tasks:
        if task.number in done or not renders_first(plan, task, templates):
            continue
        error, read, kept = _trial(task, instances[task.target], builder)
        if task.workflow == "undeploy":  # nothing waits: what is being removed stays put
            if error is not None:
                found.dropped[task.number] = error
            continue
        own = None if task.requirement is not None else task.target  # a relationship's: its own
        live = tuple(f"::{name}::{key}" for name, keys in read.items()
                     if name != own and name in changing
                     for key in keys if _is_live(instances.get(name), templates, key))
        if live:
            found.waits[task.number] = live
            found.seen[task.number] = {v: read[v[2:].partition("::")[0]].get(
                v[2:].partition("::")[2]) for v in live}
            if plan.affects_history and not builder.options.dryrun:
                # as Unfurl, the declared attributes its render read are the instances' own
                # from now on (null ones too), even if it never runs (unfurl-cases 192)
                keep_defaults_read(instances, builder.ensemble.topology, Reads((), tuple(
                    (f"::{name}::{key}", value) for name, values in read.items()
                    for key, value in values.items())), computed=False)
        elif error is not None:
            op = task.operation
            assert op is not None
            found.errors.append(f"{task.target} {op.qualified_name}: {error}")
        elif kept is not None:
            builder.trials[task.number] = kept
    return found


def _trial(task: Task, instance: Instance, builder: RequestBuilder
           ) -> tuple[str | None, dict[str, dict[str, Any]], Trial | None]:
    """Render the task's inputs (and environment) once, watching what is read: the error
    it failed with (None: it rendered), the values read, by instance, and the render
    itself when the task may run with it (see :class:`requests.Trial`).

    One evaluation serves both the render and what the operation read (its digest's
    keys): the inputs and environment are evaluated in the order Unfurl resolves them,
    watched, and the render takes the values that pass found."""
    op = task.operation
    assert op is not None and op.implementation is not None
    if op.environment is None and plain_inputs(
            op.run_inputs, task.extra_inputs, task.allow_override) is not None:
        return None, {}, None  # nothing to evaluate: nothing can fail or be read
    run = TaskRun(task)
    ctx = builder.context(run)
    ctx.deadline, ctx.time_limit = task_deadline(op.timeout, time.monotonic())
    ctx.extra = {**ctx.extra, "task": builder.task_settings(run)}
    raw = op.run_inputs | dict(task.extra_inputs)
    watch = watch_reads(ctx)
    error, kept = None, None
    try:
        found = evaluated_reads(raw, op.environment, op.implementation.kind, ctx, watch=watch)
        known = None if any(k in raw for k in POST_INPUTS) else found.inputs
        inputs = render_inputs(op.run_inputs, task.extra_inputs, ctx, task.allow_override,
                               known)
        environment = {k: found.environment[k] if k in found.environment else evaluate(v, ctx)
                       for k, v in (op.environment or {}).items()}
        if not watch.unstable and op.implementation.kind != "Python":
            kept = Trial(inputs, environment if op.environment is not None else None,
                         found.reads, {n: dict(v) for n, v in watch.values.items()})
    except RenderCancelled:
        raise
    except (ExpressionError, UnfurlLiteError) as exc:
        error = exc.message
    except Exception as exc:  # whatever fails a render is the configuration's error
        error = f"{type(exc).__name__}: {exc}"
    finally:
        builder.secrets.update(ctx.secrets)
    return error, {name: dict(values) for name, values in watch.values.items()}, kept


def _is_live(instance: Instance | None, templates: Mapping[str, NodeTemplate],
             key: str) -> bool:
    """Unfurl's live value: an attribute its template declares, a name that is not a
    declared property, or one an operation already set."""
    if instance is None:
        return False
    if key in instance.attributes:
        return True
    template = templates.get(instance.template)
    if template is None:
        return True
    return key in template.attributes or key not in template.properties


def waiting_plan(plan: Plan, waits: Mapping[int, tuple[str, ...]]) -> Plan:
    """``plan`` with each waiting task after every task of the instances it waits for
    (unless that would make a cycle), and moved, with what follows it, after the tasks
    that do not wait: as Unfurl runs the tasks it could render first, and numbers tasks
    in the order they run."""
    if not waits:
        return plan
    by_number = {t.number: t for t in plan.tasks}
    after = {t.number: list(t.after) for t in plan.tasks}
    # a deadlock broken for one wait can free an order an earlier wait had to skip
    while _add_waits(plan, waits, by_number, after):
        pass
    deferred = _followers(after, set(waits))
    position = {t.number: i for i, t in enumerate(plan.tasks)}
    order = _ordered([t.number for t in plan.tasks if t.number not in deferred], after,
                     position) + _ordered([n for n in position if n in deferred], after, position)
    tasks = [replace(by_number[n], after=tuple(after[n]), waits_on=waits.get(n, ()))
             if n in waits or tuple(after[n]) != by_number[n].after else by_number[n]
             for n in order]
    return replace(plan, tasks=tasks)


def _add_waits(plan: Plan, waits: Mapping[int, tuple[str, ...]], by_number: Mapping[int, Task],
               after: dict[int, list[int]]) -> bool:
    """One pass putting each waiting task after the tasks of what it waits for, unless that
    would make a cycle; whether it added an order."""
    added = False
    for number, values in waits.items():
        instances = {v[2:].partition("::")[0] for v in values}
        waiting = by_number[number].target
        for other in plan.tasks:
            if other.target not in instances or other.is_passthrough \
                    or other.number in after[number]:
                continue
            if _reaches(after, other.number, number):
                # Unfurl breaks the deadlock: an instance whose requirement waits on its
                # live values goes first (the order requirements give yields), when that
                # is what stands between them
                kept = {n: list(b) for n, b in after.items()}
                _yield(after, other.number, {t.number for t in plan.tasks
                                             if t.target == waiting}, by_number)
                if _reaches(after, other.number, number):
                    after.clear()
                    after.update(kept)
            if not _reaches(after, other.number, number):
                after[number].append(other.number)
                added = True
    return added


def _yield(after: dict[int, list[int]], number: int, waiting: set[int],
           planned: Mapping[int, Task]) -> None:
    """``number`` and the tasks it follows no longer follow the ``waiting`` instance's
    in the plan's own order (what another wait added stays)."""
    seen: set[int] = set()
    todo = [number]
    while todo:
        current = todo.pop()
        if current in seen or current in waiting:
            continue
        seen.add(current)
        after[current] = [b for b in after[current]
                          if b not in waiting or b not in planned[current].after]
        todo.extend(after[current])


def without(plan: Plan, dropped: Mapping[int, str]) -> Plan:
    """``plan`` without the ``dropped`` tasks; those that followed them no longer wait."""
    if not dropped:
        return plan
    for number, error in dropped.items():
        task = next(t for t in plan.tasks if t.number == number)
        logging.getLogger(__name__).warning(
            "%s %s: not run: its inputs cannot be rendered: %s", task.target, task.name, error)
    return replace(plan, tasks=[
        replace(t, after=tuple(a for a in t.after if a not in dropped))
        for t in plan.tasks if t.number not in dropped])


def _reaches(after: Mapping[int, list[int]], start: int, goal: int) -> bool:
    """Whether ``start`` (transitively) follows ``goal``."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        number = todo.pop()
        if number == goal:
            return True
        if number not in seen:
            seen.add(number)
            todo.extend(after.get(number, ()))
    return False


def _followers(after: Mapping[int, list[int]], roots: set[int]) -> set[int]:
    """``roots`` and every task that (transitively) follows one of them."""
    dependents: dict[int, list[int]] = {}
    for number, befores in after.items():
        for before in befores:
            dependents.setdefault(before, []).append(number)
    found, todo = set(roots), list(roots)
    while todo:
        for dependent in dependents.get(todo.pop(), ()):
            if dependent not in found:
                found.add(dependent)
                todo.append(dependent)
    return found


def _ordered(numbers: list[int], after: Mapping[int, list[int]],
             position: Mapping[int, int]) -> list[int]:
    """``numbers`` in an order that keeps every task after those it follows, plan order
    otherwise."""
    chosen = set(numbers)
    waiting = {n: sum(1 for b in after[n] if b in chosen) for n in numbers}
    dependents: dict[int, list[int]] = {}
    for n in numbers:
        for b in after[n]:
            if b in chosen:
                dependents.setdefault(b, []).append(n)
    heap = [(position[n], n) for n in numbers if not waiting[n]]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, number = heapq.heappop(heap)
        order.append(number)
        for dependent in dependents.get(number, ()):
            waiting[dependent] -= 1
            if not waiting[dependent]:
                heapq.heappush(heap, (position[dependent], dependent))
    return order


def never_ran(task: Task, instances: Mapping[str, Instance],
              seen: Mapping[str, Any]) -> str | None:
    """Why a deploy task that waited for values of other instances never runs, as Unfurl
    1.2.0: a value still what its render saw (``seen``: no task of this job changed it,
    not even one that set it again to the same), on an instance that did not end
    operational ("Never ran: non-operational dependencies"). Unfurl says so before it says
    a previous operation failed: the scheduler asks this first. A value that changed is
    fulfilled: the task renders, and :func:`unready_reads` decides whether it may run."""
    if not task.waits_on or task.workflow != "deploy":
        return None
    never = []
    for value in task.waits_on:
        name, _, key = value[2:].partition("::")
        instance = instances.get(name)
        if instance is None or instance.status in OPERATIONAL:
            continue
        if key not in instance.attributes or instance.attributes[key] == seen.get(value):
            never.append(value)
    return f"Never ran: non-operational dependencies: {never}" if never else None


#: what Unfurl runs whatever the state of the values it read: these operations, and a
#: task run for these reasons (``--force``, ``unfurl run``)
UNCHECKED_OPERATIONS = frozenset({"check", "delete"})
UNCHECKED_REASONS = frozenset({"force", "run"})


def unready_reads(task: Task, reads: Reads | None, instances: Mapping[str, Instance],
                  templates: Mapping[str, NodeTemplate],
                  computed: Callable[[], Collection[str]]) -> str | None:
    """Why a rendered task may not run, as Unfurl 1.2.0 checks it just before it runs (its
    ``_dependency_check`` of the task's own dependencies): every live value the render read
    of another instance counts, so one read from an instance that is not ok or degraded
    stops it ("could not run: required dependencies not ready: ::db::url is error"; "is
    not set yet" while pending). The task's own instance does not count, nor the values of
    relationship instances (``::src::.requirements::[.name=r]::k``: a relationship
    operation's own instance is one; its source and target do count), nor an instance
    whose template only sums its parts (``computed()``, asked only of an instance that is
    not operational: templates with no operation of their own)."""
    if reads is None or task.name in UNCHECKED_OPERATIONS or task.reason in UNCHECKED_REASONS:
        return None
    own = None if task.requirement is not None else task.target
    missing: dict[str, Status] = {}
    for expr, _ in reads.dependencies:
        name, _, key = expr[2:].partition("::")
        instance = instances.get(name)
        if name == own or instance is None or key.startswith(".") \
                or instance.status in OPERATIONAL or not _is_live(instance, templates, key) \
                or instance.template in computed():
            continue
        missing.setdefault(expr, instance.status)
    if not missing:
        return None
    why = ", ".join(f"{v} is {'not set yet' if s == Status.pending else s}"
                    for v, s in missing.items())
    return f"could not run: required dependencies not ready: {why}"


__all__ = ["ABORT_MESSAGE", "Rendered", "never_ran", "render_all", "unready_reads",
           "waiting_plan", "without"]
