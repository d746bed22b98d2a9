"""Mappings whose values are expressions, each evaluated when first read."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from unfurl_lite.errors import ExpressionError
from unfurl_lite.model.narrow import is_mapping, overload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

    from unfurl_lite.model.narrow import YAMLValue


class _Over(Mapping[str, "Any"]):
    """A mapping whose keys are those of ``_inputs`` (what the subclass reads them as is
    its own)."""

    _inputs: Mapping[str, Any]

    def __iter__(self) -> Iterator[str]:
        return iter(self._inputs)

    def __len__(self) -> int:
        return len(self._inputs)

    def __contains__(self, key: object) -> bool:
        return key in self._inputs


class LazyInputs(_Over):
    """``TOPOLOGY.inputs`` for templates: an input given as an expression (``{eval:
    {get_env: PW}}``) is evaluated when read, so its secret stays wrapped."""

    def __init__(self, inputs: Mapping[str, Any], read: Callable[[str], Any],
                 label: str = "there is no topology input {name}") -> None:
        self._label = label  # how an error names it
        self._inputs = inputs
        self._read = read
        self._cache: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._cache:
            if key not in self._inputs:
                raise KeyError(key)  # a template sees it undefined, with its name
            self._cache[key] = self._read(key)
        return self._cache[key]


class OperationInputs(_Over):
    """``inputs`` as a template sees it. In Unfurl it is a ``ResultsMap``, and Jinja2's
    ``inputs.name`` looks for an attribute before an item: an input named like one of the
    map's own attributes reads that attribute (``inputs.validate`` is False, never the
    input; ``inputs['validate']`` is the input), and the input is not read, so not
    digested. Methods (``keys``, ``items``, ``get``) are a mapping's here too."""

    validate = False
    applyTemplates = True

    def __init__(self, inputs: Mapping[str, Any]) -> None:
        self._inputs = inputs
        self._label = getattr(inputs, "_label", "")

    def __getitem__(self, key: str) -> Any:
        return self._inputs[key]


class Labelled(dict[str, "Any"]):
    """A plain mapping a template reads, with the name an error gives it."""

    def __init__(self, values: Mapping[str, Any], label: str) -> None:
        super().__init__(values)
        self._label = label


def instance_name(view: Any) -> str | None:
    """The name of the instance a view shows (a property may be called ``name``)."""
    name = getattr(view, "instance", None)
    if name is None and is_mapping(view):
        name = view.get("name")
    return None if name is None else str(name)


def present(view: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """Whether a view stands for something: an instance's view does even without values
    (its truth as a mapping is its values', which is what ``{% if SELF %}`` tests, as in
    Unfurl), another mapping when it has items."""
    return isinstance(view, InstanceView) or bool(view)


def template_name(view: Any) -> str | None:
    name = getattr(view, "template_name", None)
    if name is None and is_mapping(view):
        name = view.get("template")
    return None if name is None else str(name)


def _container(raw: YAMLValue) -> TypeGuard[Mapping[str, Any]]:
    """A mapping of values (not itself an expression): read while its own evaluation is
    under way, its keys are evaluated one by one, as Unfurl's nested results are."""
    from unfurl_lite.expressions import catalog  # start-up: keeps expressions.catalog off `export`

    if not isinstance(raw, Mapping) or not raw or "eval" in raw or "ref" in raw:
        return False
    return not (len(raw) == 1 and next(iter(raw)) in catalog.top_level_functions())


class LazyValues(Mapping[str, "Any"]):
    """Values that may be expressions (a node's properties, an operation's inputs), each
    evaluated when first read, as Unfurl does: ``{{ SELF.port }}``, ``{{ inputs.url }}`` and
    ``get_property`` see the value, never the ``{eval: ...}`` text, and a value nobody reads
    is never evaluated (so it cannot fail). ``evaluator(key, raw)`` gives the value; a value
    that needs itself (``a: "{{ inputs.b }}"``, ``b: "{{ inputs.a }}"``) is an error."""

    def __init__(self, raw: Mapping[str, Any],
                 evaluator: Callable[[str, Any], Any], label: str = "") -> None:
        self._label = label  # how an error names it ("instance 'app'")
        self._raw = raw
        self._evaluator = evaluator
        self._cache: dict[str, Any] = {}
        self._busy: set[str] = set()
        self._partial: dict[str, LazyValues] = {}  # a mapping read while being evaluated

    def __getitem__(self, key: str) -> Any:
        if key in self._cache:
            return self._cache[key]
        raw: YAMLValue = self._raw[key]
        if key in self._busy:
            if _container(raw):  # `f: {a: 1, b: {eval: .::f::a}}`: its other keys, as Unfurl
                if key not in self._partial:
                    self._partial[key] = LazyValues(
                        raw, lambda _, item: self._evaluator(key, item), self._label)
                return self._partial[key]
            if isinstance(raw, list) and raw:  # `d: ["2", {eval: a::d::0}]`: its other items
                if key not in self._partial:
                    self._partial[key] = LazyValues(
                        {str(i): item for i, item in enumerate(raw)},
                        lambda _, item: self._evaluator(key, item), self._label)
                return _Items(self._partial[key], len(raw))
            raise ExpressionError(f"{key!r} refers to itself (a circular reference)")
        self._busy.add(key)
        try:
            value = self._evaluator(key, raw)
        finally:
            self._busy.discard(key)
        self._cache[key] = value
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __repr__(self) -> str:  # `{{ SELF.properties }}` shows the values, as a dict would
        return repr(dict(self))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        # start-up: keeps jinja2, markupsafe (30 modules) off `deploy` until _read_only() runs
        from jinja2.exceptions import SecurityError

        raise SecurityError("values read by a template cannot be changed")

    update = pop = popitem = setdefault = clear = _read_only  # as the sandbox says of a dict


class _Items(Sequence["Any"]):
    """A list read while its own evaluation is under way: each item evaluated when read."""

    def __init__(self, values: LazyValues, length: int) -> None:
        self._values, self._length = values, length

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(self._length)[index]]
        if not -self._length <= index < self._length:
            raise IndexError(index)
        return self._values[str(index % self._length)]

    def __len__(self) -> int:
        return self._length


class InstanceView(LazyValues):
    """An instance's values as templates see them (``SELF``, ``HOST``...): its attributes
    over its properties by name, as in Unfurl (``SELF.name`` is a property called
    ``name`` when there is one), then its own fields (``name``, ``template``, ``type``,
    ``status``, ``state``); which instance it is, in ``instance``; ``key``: how Unfurl
    names it in a digest key, when not by ``instance`` (a relationship:
    ``source::.requirements::[.name=r]``); ``link``: a relationship's source instance and
    requirement, where its relative queries start."""

    def __init__(self, raw: Mapping[str, Any], evaluator: Callable[[str, Any], Any],
                 instance: str, template: str | None, key: str | None = None,
                 hidden: frozenset[str] = frozenset(),
                 link: tuple[str, str] | None = None, unset: frozenset[str] = frozenset()
                 ) -> None:
        super().__init__(raw, evaluator, f"instance {instance!r}")
        self.instance = instance
        self.link = link
        self.template_name = template
        self.key = key or instance
        #: its own fields that are not properties or attributes: read by name, never
        #: listed (Unfurl's SELF lists only those), so `SELF | list` is Unfurl's
        self.hidden = hidden
        #: properties its type declares optional with no default that its template leaves
        #: unset: not there (``SELF.x`` fails, queries see nothing), but ``get_property``
        #: of one is null, as in Unfurl 1.2.0
        self.unset = unset

    def __iter__(self) -> Iterator[str]:
        if not self.hidden:
            return iter(self._raw)
        return (key for key in self._raw if key not in self.hidden)

    def __len__(self) -> int:
        return len(self._raw) - len(self.hidden)

    def __contains__(self, key: object) -> bool:
        return key in self._raw and key not in self.hidden

    def __getitem__(self, key: str) -> Any:
        if key in self._busy and key not in self._cache:  # the layer below says if it is
            return self._evaluator(key, self._raw[key])  # a cycle (or a container)
        return super().__getitem__(key)
