"""What an operation read: the inputs and the instance values its digest covers.

Unfurl's ``digestKeys`` name the inputs its configurator resolved while the task ran (in
the order it resolved them: those its ``environment`` read first, then the rest in the
order they are declared; never one it leaves out such as ``resultTemplate``), then every
other value the task read: ``::root::inputs`` when a ``get_input`` was evaluated,
``::svc::greeting`` for ``{{ SELF.greeting }}``. Its ``digestValue`` hashes the same
values, so a changed property an operation read reconfigures it. Our inputs are rendered
all at once, so this module evaluates them again, watching what is read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.expressions.analysis import analyse, is_template
from unfurl_lite.expressions.context import INPUTS_LABEL
from unfurl_lite.expressions.digest import (
    CONFIGURATOR_INPUTS,
    EXCLUDED,
    Key,
    KeyProvider,
    digest,
    takes_part,
)
from unfurl_lite.expressions.expr import EvalContext, Sensitive, evaluate
from unfurl_lite.expressions.lazy import (
    InstanceView,
    Labelled,
    LazyValues,
    instance_name,
    present,
    template_name,
)
from unfurl_lite.expressions.names import VIEW_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from unfurl_lite.model.narrow import YAMLValue

#: evaluated after the run, with its result: only what they name is read
_AFTER_RUN = ("done", "resultTemplate")
#: an instance view's own fields, not values the spec or an operation set
_FIXED = VIEW_FIELDS
_ROOT = "\0root"  # never an instance's name


@dataclass(frozen=True)
class Reads:
    """``inputs``: operation inputs in digest order; ``dependencies``: (Unfurl's
    expression, the value read), e.g. ``("::svc::greeting", "hello")``."""

    inputs: tuple[str, ...]
    dependencies: tuple[tuple[str, Any], ...] = ()
    #: how many of ``inputs`` were resolved before the run (the environment's; a Shell's
    #: render): what is resolved while it runs, its results too, follows in declared order
    fixed: int = 0
    #: instances a secret of which an input read (see :meth:`_Watch.hides`): what is
    #: rendered later in the task through them is secret too
    secret_read: frozenset[str] = frozenset()

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.inputs, *(expr for expr, _ in self.dependencies))


#: an instance's own fields that never change while a job runs
_STATIC_FIELDS = frozenset({"name", "template", "type"})


class _Watch:
    """Collects reads: inputs by name, other values grouped by instance in the order
    each instance was first read (as Unfurl's attribute manager does). ``unstable``: the
    evaluation also saw what the values read do not pin down (an instance's status, a
    key it lacks, its keys as a whole, the instances walked by a query), so only
    evaluating it again can tell what it gives later."""

    def __init__(self) -> None:
        self.inputs: list[str] = []
        self.values: dict[str, dict[str, Any]] = {}
        self.topology_inputs: Mapping[str, Any] = {}
        self.known = 0  # how many instances the task knew before it read anything
        self.unstable = False
        #: inputs Unfurl resolves as sensitive (see :meth:`hides`): not digested
        self.hidden: set[str] = set()
        #: instances a secret of which an input read, or a resultTemplate set, so far
        self.secret_set: set[str] = set()
        #: whether reads now count for :attr:`secret_set` (the environment's do not)
        self.inputs_reading = True

    def read_input(self, name: str, raw: Any = None, ctx: EvalContext | None = None) -> None:
        """``name`` was read; given its expression ``raw`` and the context it renders in,
        it is also noted as hidden when Unfurl resolves it as sensitive (:meth:`hides`)."""
        if name not in self.inputs:
            self.inputs.append(name)
        if ctx is not None and self.hides(raw, ctx):
            self.hidden.add(name)

    def read_value(self, instance: str, name: str, value: Any) -> None:
        self.values.setdefault(instance, {}).setdefault(name, value)
        if self.inputs_reading and isinstance(value, Sensitive):
            self.secret_set.add(instance)

    def hides(self, raw: Any, ctx: EvalContext) -> bool:
        """Whether Unfurl resolves the input ``raw`` as sensitive, so leaves it out of its
        digest: a Jinja template that names an instance (``SELF``, ``HOST``, ``SOURCE``,
        ``TARGET``) once a secret of that instance was resolved in this task (read by an
        input, or set by the resultTemplate; not read by the environment), whatever it
        reads of it. Unfurl marks a template's result sensitive when a value it referenced
        holds a resolved secret, and naming the instance references its whole map
        (unfurl-cases 201: ``{{ SELF['ports'] }}`` after the resultTemplate set the
        sensitive ``private_address``; 258)."""
        if not self.secret_set or not isinstance(raw, str) or not is_template(raw):
            return False
        views = {"SELF": ctx.self_view, "HOST": ctx.host, "SOURCE": ctx.source,
                 "TARGET": ctx.target}
        return any((view := views.get(name)) is not None and _key(view) in self.secret_set
                   for name in analyse(raw).free)


class _Guarded(Mapping[str, "Any"]):
    """A mapping an evaluation reads through, marking the watch unstable when what it
    learns is more than the value of a key it has: a missing key, the keys themselves."""

    def __init__(self, inner: Mapping[str, Any], watch: _Watch, every: bool = False) -> None:
        self._inner, self._watch, self._every = inner, watch, every  # every: any read

    def __getitem__(self, key: str) -> Any:
        if self._every:
            self._watch.unstable = True
        try:
            return self._inner[key]
        except KeyError:
            self._watch.unstable = True
            raise

    def __iter__(self) -> Iterator[str]:
        self._watch.unstable = True
        return iter(self._inner)

    def __len__(self) -> int:
        self._watch.unstable = True
        return len(self._inner)

    def __contains__(self, key: object) -> bool:
        self._watch.unstable = True
        return key in self._inner


def _watched_view(view: Mapping[str, Any] | None, watch: _Watch) -> Mapping[str, Any] | None:
    if view is None:
        return None
    name = _key(view)
    own: set[str] = {*(view.get("attributes") or {}), *(view.get("properties") or {})}

    def noted(key: str, value: Any) -> Any:
        if key == "attributes":
            return _watched_attributes(view, name, watch)
        if key not in _FIXED or key in own:
            watch.read_value(name, key, value)
        elif key not in _STATIC_FIELDS:
            watch.unstable = True
        return value

    return InstanceView(_Guarded(view, watch), noted, str(instance_name(view)),
                        template_name(view), name, link=getattr(view, "link", None),
                        unset=getattr(view, "unset", frozenset()))


def _key(view: Mapping[str, Any]) -> str:
    """The instance a read is noted under, as Unfurl keys it (less its leading ``::``)."""
    return str(getattr(view, "key", None) or instance_name(view))


def _watched_attributes(view: Mapping[str, Any], name: str, watch: _Watch) -> Mapping[str, Any]:
    """What ``get_attribute`` reads: an attribute, else the property of that name (as
    Unfurl's attributes are layered over the properties); each read is noted, as Unfurl
    notes ``::db::url`` (``get_property`` reads are not)."""
    attributes: Mapping[str, Any] = view.get("attributes") or {}
    properties: Mapping[str, Any] = view.get("properties") or {}

    def noted(key: str, value: Any) -> Any:
        if key in attributes:
            value = attributes[key]
        else:  # (not what the instance's view gives by that name: an attribute may come)
            watch.unstable = True
            value = properties[key]
        watch.read_value(name, key, value)
        return value

    keys = {**dict.fromkeys(properties), **dict.fromkeys(attributes)}
    return LazyValues(_Guarded(keys, watch), noted)


def _quietly(read: Callable[[], Any]) -> None:
    with contextlib.suppress(UnfurlLiteError, RecursionError):
        read()  # an error: the real rendering reports it; this pass only watches


def _plain(value: YAMLValue) -> bool:
    if isinstance(value, str):
        return not is_template(value)
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, bool | int | float)


def plain_reads(
    raw_inputs: Mapping[str, Any], environment: Mapping[str, Any] | None, kind: str
) -> Reads | None:
    """What :func:`operation_reads` finds when nothing needs evaluating (no environment,
    no template, no expression, nothing read after the run): the inputs the kind
    resolves, in declared order. None when the inputs must be watched. (Asked of every
    task a job runs: the answer for the same kind and input names is made once, and
    shared, as a ``Reads`` never changes.)"""
    if environment:
        return None
    for name in _AFTER_RUN:
        if name in raw_inputs:
            return None
    for value in raw_inputs.values():
        if not _plain(value):
            return None
    names = tuple(raw_inputs)
    found = _PLAIN_READS.get((kind, names))
    if found is None:
        roots = set(CONFIGURATOR_INPUTS.get(kind, names))
        excluded = EXCLUDED.get(kind, frozenset())
        inputs = tuple(n for n in names if n in roots and n not in excluded)
        found = Reads(inputs, (), 0 if kind == "Template" else len(inputs))
        if len(_PLAIN_READS) >= _PLAIN_READS_KEPT:
            _PLAIN_READS.clear()
        _PLAIN_READS[(kind, names)] = found
    return found


#: plain_reads' answers, by the operation's kind and its input names in order
_PLAIN_READS: dict[tuple[str, tuple[str, ...]], Reads] = {}
_PLAIN_READS_KEPT = 256


def watch_reads(ctx: EvalContext) -> _Watch:
    """Make a fresh ``ctx`` (from ``make_context``; it is changed here) note every instance
    value and topology input that an evaluation in it reads."""
    watch = _Watch()
    topology_inputs = ctx.inputs

    def input_read(key: str, value: Any) -> Any:
        if not ctx.template_reads:  # get_input reads ::root::inputs; TOPOLOGY.inputs not
            watch.values.setdefault(_ROOT, {})["inputs"] = True
        return value

    ctx.inputs = LazyValues(topology_inputs, input_read)
    # Unfurl's task knows HOST (the root for a top-level instance), then SELF, then a
    # relationship's SOURCE and TARGET, before anything it reads: their reads come first
    # in its digest keys, in that order
    seen = (ctx.host, ctx.self_view) if ctx.source is None and ctx.target is None else (
        ctx.host, ctx.self_view, ctx.source, ctx.target)
    for index, view in enumerate(seen):
        if index < 2 or view is not None:
            watch.values.setdefault(_key(view) if present(view) else _ROOT, {})
    watch.known = len(watch.values)
    watched = _watched_view(ctx.self_view, watch)  # (not `or`: that would ask its length)
    ctx.self_view = {} if watched is None else watched
    ctx.host = _watched_view(ctx.host, watch)
    ctx.source = _watched_view(ctx.source, watch)
    ctx.target = _watched_view(ctx.target, watch)
    lookup = ctx.lookup_node
    instances = ctx.instances

    def watched_lookup(name: str) -> Mapping[str, Any] | None:
        if instances is None or name not in instances:  # a template's first instance
            watch.unstable = True
        return _watched_view(lookup(name), watch)

    ctx.lookup_node = watched_lookup

    def file_read() -> None:  # what a file holds may change while the job runs
        watch.unstable = True

    ctx.on_file_read = file_read
    ctx.on_read = watch.read_value
    if instances is not None:  # what queries walk
        ctx.instances = _Guarded(instances, watch, every=True)
    watch.topology_inputs = topology_inputs
    return watch


def watched_inputs(rendered: Mapping[str, Any], later: _Watch, raw: Mapping[str, Any],
                   reads: Reads | None, ctx: EvalContext) -> NotedInputs:
    """An operation's rendered inputs as its ``done`` and ``resultTemplate`` read them
    (``ctx`` watched by ``later``): Unfurl resolves an input when it is first read, so an
    input they read, and what its expression reads, is digested then, and one they never
    reach (an earlier attribute failed) is not. An input read before the run (``reads``)
    is not evaluated again."""
    if reads is not None:  # Unfurl's task keeps the instances' maps it rendered with
        later.secret_set |= reads.secret_read
    return NotedInputs(rendered, later, raw, set(reads.inputs) if reads else set(), ctx)


class NotedInputs(Labelled):
    def __init__(self, values: Mapping[str, Any], watch: _Watch, raw: Mapping[str, Any],
                 done: set[str], ctx: EvalContext) -> None:
        super().__init__(values, INPUTS_LABEL)
        self._watch, self._raw, self._done, self._ctx = watch, raw, done, ctx

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if key not in self._done:
            self._done.add(key)
            self._watch.read_input(key, self._raw.get(key), self._ctx)
            if key in self._raw and not _plain(self._raw[key]):
                _quietly(partial(evaluate, self._raw[key], self._ctx))
        return _as_secret(value) if key in self._watch.hidden else value

    def as_rendered(self, raw: Any, value: Any) -> Any:
        """A resultTemplate's attribute ``raw`` rendered to ``value``, as Unfurl gives it:
        secret as a whole when the template names an instance a secret of which was
        resolved in this task (:meth:`_Watch.hides`; unfurl-cases 164: ``{{ SELF.user }}``
        after ``{{ SELF.password }}``)."""
        if value is None or isinstance(value, Sensitive) or not self._watch.hides(raw, self._ctx):
            return value
        return Sensitive(str(value)) if isinstance(value, str | int | float | bool) else value

    def attribute_set(self, key: str, value: Any, secret: bool) -> None:
        """The resultTemplate set SELF's ``key`` (``secret``: a name its type declares
        sensitive): an input rendered after it that names SELF is sensitive in Unfurl."""
        if secret or isinstance(value, Sensitive):
            self._watch.secret_set.add(_key(self._ctx.self_view))


def _as_secret(value: Any) -> Any:
    """An input Unfurl resolved as sensitive, as a resultTemplate reads it: text is secret
    (``{{ inputs.x }}`` is redacted); a list or mapping is left as it is, since what is
    computed from it (``inputs.ports | length``) is not secret in Unfurl."""
    if isinstance(value, str) and not isinstance(value, Sensitive):
        return Sensitive(value)
    return value


def merged_reads(reads: Reads | None, later: _Watch, ctx: EvalContext,
                 kind: str = "", declared: Sequence[str] = ()) -> Reads:
    """``reads`` and what the operation's ``resultTemplate`` and ``done`` read once it ran
    (watched by :func:`watch_reads` and :func:`watched_inputs`): Unfurl digests those too
    (an input they name, after those read before; ``SELF.path`` is ``::f::path``), grouped
    by instance as one task's reads are: HOST's and SELF's first, then each instance in
    the order it was first read."""
    def instance(expr: str) -> str:
        return expr[2:].rpartition("::")[0]

    groups: dict[str, dict[str, Any]] = {
        "root" if name == _ROOT else name: {} for name in list(later.values)[:later.known]}
    earlier = reads.dependencies if reads is not None else ()
    for expr, value in (*earlier, *_dependencies(later, later.topology_inputs, ctx)):
        groups.setdefault(instance(expr), {}).setdefault(expr, value)
    inputs = reads.inputs if reads is not None else ()
    fixed = reads.fixed if reads is not None else 0
    excluded = EXCLUDED.get(kind, frozenset())
    running = {*inputs[fixed:], *(n for n in later.inputs
                                  if n not in excluded and n not in later.hidden)}
    running -= set(inputs[:fixed])
    position = {name: index for index, name in enumerate(declared)}
    inputs = (*inputs[:fixed], *sorted(running, key=lambda n: position.get(n, len(position))))
    return Reads(inputs, tuple(item for group in groups.values() for item in group.items()),
                 len(inputs), frozenset(later.secret_set))


def operation_reads(
    raw_inputs: Mapping[str, Any],
    environment: Mapping[str, Any] | None,
    kind: str,
    ctx: EvalContext,
    recorded: Sequence[str] = (),
) -> Reads:
    """Evaluate the operation's environment and the inputs its kind resolves in a fresh
    ``ctx`` (from ``make_context``; it is changed here), and return what they read.
    ``recorded``: an earlier run's digest keys; the inputs among them are resolved too, as
    Unfurl's check of that run resolves them (one its resultTemplate read)."""
    return evaluated_reads(raw_inputs, environment, kind, ctx, recorded).reads


@dataclass
class Evaluated:
    """What :func:`evaluated_reads` found: what was read, the watch that saw it (``ctx``
    goes on being watched), and the values of the inputs and environment it evaluated
    without an error, which a render in the same ``ctx`` need not evaluate again."""

    reads: Reads
    watch: _Watch
    inputs: dict[str, Any]
    environment: dict[str, Any]


def evaluated_reads(
    raw_inputs: Mapping[str, Any],
    environment: Mapping[str, Any] | None,
    kind: str,
    ctx: EvalContext,
    recorded: Sequence[str] = (),
    watch: _Watch | None = None,
) -> Evaluated:
    """:func:`operation_reads`, keeping the values it evaluated and its watch (``watch``:
    the one :func:`watch_reads` already put on ``ctx``)."""
    watch = watch or watch_reads(ctx)
    topology_inputs = watch.topology_inputs
    order = list(raw_inputs)
    found = Evaluated(Reads(()), watch, {}, {})

    def input_value(key: str, value: Any) -> Any:
        watch.read_input(key, value, ctx)
        found.inputs[key] = evaluate(value, ctx)
        return found.inputs[key]

    def environment_value(key: str, value: Any) -> None:
        found.environment[key] = evaluate(value, ctx)

    lazy = LazyValues(raw_inputs, input_value)
    ctx.operation_inputs = lazy
    watch.inputs_reading = False  # as Unfurl: the environment's reads make no input secret
    for key, value in (environment or {}).items():
        _quietly(partial(environment_value, key, value))
    watch.inputs_reading = True
    early = [name for name in order if name in watch.inputs]

    roots = CONFIGURATOR_INPUTS.get(kind, tuple(order))
    for name in roots:
        if name not in raw_inputs:
            continue
        if name in _AFTER_RUN:  # what they read is known once they run: merged_reads
            watch.read_input(name)
        elif kind == "Template" and name == "run":
            watch.read_input(name)
            for part in _rendered_parts(raw_inputs[name], _variables_read(raw_inputs)):
                _quietly(partial(evaluate, part, ctx))
        else:
            _quietly(partial(lazy.__getitem__, name))
    for name in recorded:
        if name in raw_inputs and name not in watch.inputs and name not in _AFTER_RUN:
            _quietly(partial(lazy.__getitem__, name))
    excluded = EXCLUDED.get(kind, frozenset())
    later = [name for name in order if name in watch.inputs and name not in early]
    excluded = excluded | watch.hidden
    inputs = tuple(name for name in (*early, *later) if name not in excluded)
    fixed = len([name for name in early if name not in excluded])
    found.reads = Reads(inputs, _dependencies(watch, topology_inputs, ctx),
                        fixed if kind == "Template" else len(inputs),
                        frozenset(watch.secret_set))
    return found


def _rendered_parts(run: YAMLValue, variables_read: bool) -> Iterator[Any]:
    """The parts of a Template's ``run`` whose reads Unfurl records. It renders ``run``
    lazily: a string or an expression is evaluated then; a list's first item too (Unfurl
    checks it), not its others; a mapping's values are read when the result is used: by a
    resultTemplate, which takes them as its variables (``variables_read``), else when the
    job is recorded, too late to count. What is read after the render goes through the
    objects the render bound: a template's ``SELF.size`` is not recorded, a query
    (``{eval: .::size}``) looks the instance up again and is."""
    # start-up: keeps expressions.resolve (5 modules, 8 ms) off plain jobs until a run is read
    from unfurl_lite.expressions.resolve import is_ref

    if isinstance(run, Mapping) and not is_ref(run):
        if variables_read:
            for item in run.values():
                yield from _queries(item)
    elif isinstance(run, list):
        if run:
            yield from _rendered_parts(run[0], variables_read)
    else:
        yield run


def _variables_read(raw_inputs: Mapping[str, Any]) -> bool:
    """Whether a Template's resultTemplate takes ``run``'s result as its variables (not
    when ``done`` gives its own ``result``)."""
    done = raw_inputs.get("done")
    return bool(raw_inputs.get("resultTemplate")) and not (
        isinstance(done, Mapping) and "result" in done)


def _queries(value: YAMLValue) -> Iterator[Any]:
    # start-up: keeps expressions.resolve (5 modules, 8 ms) off plain jobs until a run is read
    from unfurl_lite.expressions.resolve import is_ref

    if is_ref(value):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _queries(item)
    elif isinstance(value, list):
        for item in value:
            yield from _queries(item)


def _dependencies(
    watch: _Watch, topology_inputs: Mapping[str, Any], ctx: EvalContext
) -> tuple[tuple[str, Any], ...]:
    found: list[tuple[str, Any]] = []
    for instance, values in watch.values.items():
        if instance == _ROOT:
            if values:  # read through get_input
                found.append(("::root::inputs", _all_inputs(topology_inputs, ctx)))
        else:
            found.extend((f"::{instance}::{name}", value) for name, value in values.items())
    return tuple(found)


def _all_inputs(topology_inputs: Mapping[str, Any], ctx: EvalContext) -> dict[str, Any]:
    """The root's ``inputs`` as Unfurl digests them: every topology input, evaluated."""
    values: dict[str, Any] = {}
    for name, value in topology_inputs.items():
        try:
            values[name] = evaluate(value, ctx)
        except UnfurlLiteError:
            values[name] = None
    return values


def reads_digest(reads: Reads, rendered: Mapping[str, Any],
                 key: KeyProvider | None = None) -> tuple[str, str]:
    """(digestKeys, digestValue) over what the operation read, as Unfurl records them:
    the inputs (their rendered values), then the other values; secrets take no part,
    except values read from the environment, digested keyed when ``key`` gives a key."""
    keyed = Key(key)
    keys: list[str] = []
    values: list[Any] = []
    for name in reads.inputs:
        if name in rendered and takes_part(rendered[name], keyed):
            keys.append(name)
            values.append(rendered[name])
    for expr, value in reads.dependencies:
        if takes_part(value, keyed):
            keys.append(expr)
            values.append(value)
    return ",".join(keys), (digest(values, keyed.get) if keys else "")


def dependency_records(reads: Reads) -> list[dict[str, Any]]:
    """The values beyond its inputs an operation read, as Unfurl's job records keep them
    (``ref``, ``expected``); secrets are left out, as from the digest."""
    return [{"ref": expr, "expected": value, "required": True}
            for expr, value in reads.dependencies
            if not isinstance(value, Sensitive)]


def recorded_keys_digest(
    keys: str, reads: Reads, rendered: Mapping[str, Any], ctx: EvalContext,
    secret_key: KeyProvider | None = None,
) -> str | None:
    """Unfurl's check of an earlier run: the digest, now, of the keys that run recorded
    (so a record written before what it read was tracked compares as it was made); None
    when an input it read is gone or the operation now reads an input it did not."""
    old = [key for key in keys.split(",") if key]
    old_inputs = {key for key in old if "::" not in key}
    keyed = Key(secret_key)  # an input that is a secret now was no key then either
    now = {name for name in reads.inputs if name in rendered
           and takes_part(rendered[name], keyed)}
    if old_inputs - set(rendered) or now - old_inputs:
        return None
    read = dict(reads.dependencies)
    values: list[Any] = []
    for key in old:
        if "::" not in key:
            values.append(rendered[key])
        elif key in read:
            values.append(read[key])
        elif key == "::root::inputs":
            values.append(_all_inputs(ctx.inputs, ctx))
        else:
            instance, _, name = key[2:].rpartition("::")
            view = ctx.lookup_node(instance)
            try:
                if view is None and ".artifacts::" in instance:  # an artifact's: a query
                    values.append(evaluate({"eval": key}, ctx))
                    continue
                values.append(view[name] if view is not None and name in view else None)
            except UnfurlLiteError:
                return None
    return digest(values, secret_key) if values else ""
