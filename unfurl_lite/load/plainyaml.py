"""YAML 1.2 text to plain data: ruamel's C composer, then a constructor for what ensembles use.

ruamel's safe constructor spends most of a parse resolving each scalar's type through
version-aware lookups and tag objects. Here the C composer tags every plain scalar
as plain and :func:`implicit_type` (YAML 1.2's core schema, exactly as ruamel resolves
it) decides once per distinct value. Anything outside the everyday subset (explicit tags,
timestamps, merge keys, duplicate or non-scalar keys, recursive aliases) raises
:class:`NeedsFullLoader`, and the caller loads the text with ruamel's own safe loader instead,
so the two roads never disagree about a document.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator
from functools import lru_cache

from unfurl_lite.load import blockyaml
from unfurl_lite.load.blockyaml import NeedsFullLoader
from unfurl_lite.load.guard import DATA_KEYS, MAX_DEPTH, MAX_EXPANDED_CHARS, MAX_EXPANDED_NODES
from unfurl_lite.security.characters import control_character

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_PLAIN = "\x00plain"  # no tag written in a document can contain NUL

_TYPES = (
    ("bool", r"true|True|TRUE|false|False|FALSE"),
    ("float", r"""[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                | [-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
                | [-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
                | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)"""),
    ("int", r"[-+]?0b[0-1_]+ | [-+]?0o?[0-7_]+ | [-+]?[0-9_]+ | [-+]?0x[0-9a-fA-F_]+"),
    ("null", r"~ | null|Null|NULL"),
    ("timestamp", r"""[0-9]{4}-[0-9]{2}-[0-9]{2}
                    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[\ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}
                      (?:\.[0-9]*)?(?:[\ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"""),
    ("merge", r"<<"),
    ("value", r"="),
    ("yaml", r"! | & | \*"),
)
# ruamel tries a type only for the first characters it can start with; none starts with _
_IMPLICIT = re.compile(
    r"^(?!_)(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _TYPES) + r")$",
    re.X,
)


@lru_cache(maxsize=65536)
def implicit_type(text: str) -> str:
    """What a plain scalar ``text`` loads as under YAML 1.2: 'str', 'int', 'bool'..."""
    if text == "":
        return "null"
    match = _IMPLICIT.match(text)
    return "str" if match is None else str(match.lastgroup)


def load(text: str) -> Any:
    if "%" in text and ("%YAML" in text or "%TAG" in text):  # directives: scalars resolve otherwise
        raise NeedsFullLoader("a directive")
    with no_collection():
        try:
            return blockyaml.load(text, _scalar, implicit_type)[0]
        except NeedsFullLoader:
            pass  # outside the everyday subset: the C composer's road reads it
        composer = _composer_class()(text)
        node = composer.get_single_node()
        return None if node is None else _Builder().build(node)


class Guarded:
    """Plain data that already passed the guard's checks, and whether any mapping key is a
    merge directive (``+...``): facts gathered in the one walk that built the data."""

    __slots__ = ("data", "directives")

    def __init__(self, data: Any, directives: bool) -> None:
        self.data, self.directives = data, directives


def load_guarded(text: str) -> Guarded:
    """:func:`load` (by lines, :mod:`blockyaml`, for the everyday subset) with
    :func:`guard.check` and :func:`merge.has_directives` answered in the same walk: at
    N=10,000 the two extra walks cost more than building the data. Whatever the guard
    would refuse raises :class:`NeedsFullLoader` too, so the caller's full road reports
    it, with its line."""
    if "%" in text and ("%YAML" in text or "%TAG" in text):  # "%" first: a hundredth of the time
        raise NeedsFullLoader("a directive")
    with no_collection():
        try:
            return Guarded(*blockyaml.load(text, _scalar, implicit_type))
        except NeedsFullLoader:
            pass  # outside the everyday subset: the C composer's road reads it
        composer = _composer_class()(text)
        node = composer.get_single_node()
        builder = _GuardedBuilder()
        data = None if node is None else builder.build(node)
    return Guarded(data, builder.directives)


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """The parse allocates a node and a value for every scalar and creates no reference
    cycles: the collector, rescanning the growing heap every few hundred allocations, cost
    as much as the parse itself at N=10,000. Off while parsing, as it was before after
    (the loader keeps it off through the checks and the model's build too: the same
    allocations without cycles, a sixth of a cold load's CPU at N=10,000 even at the
    command's higher thresholds)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if _freezing[0]:
                gc.freeze()
                _froze[0] = True
            gc.enable()


#: callers inside :func:`loads_frozen`, and whether a load froze anything for them
_freezing, _froze = [0], [False]


@contextlib.contextmanager
def loads_frozen() -> Iterator[None]:
    """For a command that loads an ensemble, uses it and ends (validate, plan, a job): what
    a load built is moved out of the collector's generations as the load ends
    (``gc.freeze``) instead of being walked. The objects a load makes while the collector is
    off all wait in its youngest generation, so the first collection after the load walked
    every one of them and moved them on to be walked again (a seventh of validate's CPU at
    N=10,000, 0.3 s). Unfrozen as the command ends: a library caller's heap is collected as
    before, and a long-running process (a worker) does not enter this."""
    _freezing[0] += 1
    try:
        yield
    finally:
        _freezing[0] -= 1
        if not _freezing[0] and _froze[0]:
            _froze[0] = False
            gc.unfreeze()


@lru_cache(maxsize=1)
def _composer_class() -> Any:
    # start-up: keeps ruamel (36 modules) off `plan`, `validate` until _composer_class() runs
    from _ruamel_yaml import CParser  # optional: ruamel.yaml.clib; ImportError: use ruamel's loader
    from ruamel.yaml.nodes import MappingNode, ScalarNode

    class Composer(CParser):
        def descend_resolver(self, parent: Any, index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            if kind is ScalarNode:
                return _PLAIN if implicit[0] else _STR
            return _MAP if kind is MappingNode else _SEQ

    return Composer


class _Builder:
    """Nodes to values; a node reached twice (an alias) gives the same object, as ruamel's
    safe loader does."""

    def __init__(self) -> None:
        self.built: dict[int, Any] = {}
        self.building: set[int] = set()

    def build(self, node: Any) -> Any:
        known = self.built.get(id(node))
        if known is not None:
            return known
        tag = node.ctag.suffix  # node.tag would decode a URI for every node
        if tag == _PLAIN:
            return _scalar(node.value)
        if tag == _STR:
            return node.value
        if id(node) in self.building:
            raise NeedsFullLoader("a recursive alias")
        self.building.add(id(node))
        if tag == _MAP:
            value: Any = {}
            self.built[id(node)] = value
            for key_node, value_node in node.value:
                key = self.build(key_node)
                if not isinstance(key, str) or key in value or key == "<<":
                    raise NeedsFullLoader("a key ruamel must judge")
                value[key] = self.build(value_node)
        elif tag == _SEQ:
            value = []
            self.built[id(node)] = value
            value.extend(self.build(item) for item in node.value)
        else:
            raise NeedsFullLoader(f"the tag {tag}")
        self.building.discard(id(node))
        return value


class _GuardedBuilder:
    """Nodes to values, as :class:`_Builder`, measuring what :func:`guard.check` measures
    as it goes: names (keys outside ``attributes``) without control characters, and each
    container's size, depth and characters with every alias expanded (kept per container,
    so an alias costs nothing more: linear in the parsed size, as the guard is). Whatever
    the guard would refuse raises :class:`NeedsFullLoader`."""

    def __init__(self) -> None:
        self.built: dict[int, Any] = {}
        self.building: set[int] = set()
        self.sizes: dict[int, tuple[int, int, int]] = {}  # id(value) -> (nodes, height, chars)
        self.free: set[int] = set()  # containers built as data (under ``attributes``)
        self.data = False
        self.directives = False

    def build(self, node: Any) -> Any:
        """A composed node as plain data, as ruamel's safe loader types it; anything this fast
        path does not read exactly as ruamel does (recursive aliases, unusual tags) raises
        NeedsFullLoader so the full loader reads the file."""
        if id(node) in self.building:
            raise NeedsFullLoader("a recursive alias")
        known = self.built.get(id(node))
        if known is not None:
            if (id(known) in self.free) != self.data:  # an alias both as names and as data
                raise NeedsFullLoader("an alias used as data and as names")
            return known
        tag = node.ctag.suffix
        if tag == _PLAIN:
            return _scalar(node.value)
        if tag == _STR:
            return node.value
        self.building.add(id(node))
        total, height, chars = 1, 0, 0
        sizes = self.sizes
        value: Any
        if tag == _MAP:
            value = {}
            self.built[id(node)] = value
            data = self.data
            for key_node, value_node in node.value:
                key = self.build(key_node)
                if type(key) is not str or key in value or key == "<<":
                    raise NeedsFullLoader("a key ruamel must judge")
                chars += len(key)
                if key[:1] == "+":
                    self.directives = True
                if data:
                    child = self.build(value_node)
                elif key in DATA_KEYS:
                    self.data = True
                    try:
                        child = self.build(value_node)
                    finally:
                        self.data = False
                else:
                    if not key.isprintable() and control_character(key) is not None:
                        raise NeedsFullLoader("a name with a control character")
                    child = self.build(value_node)
                value[key] = child
        elif tag == _SEQ:
            value = []
            self.built[id(node)] = value
            for item in node.value:
                child = self.build(item)
                value.append(child)
        else:
            raise NeedsFullLoader(f"the tag {tag}")
        for child in value.values() if tag == _MAP else value:
            measured = sizes.get(id(child))
            if measured is None:
                total += 1
                chars += len(child) if type(child) is str else 1
            else:
                total += measured[0]
                chars += measured[2]
                if measured[1] >= height:
                    height = measured[1] + 1
        if total > MAX_EXPANDED_NODES or chars > MAX_EXPANDED_CHARS or height > MAX_DEPTH:
            raise NeedsFullLoader("beyond the guard's limits")
        sizes[id(value)] = (total, height, chars)
        if self.data:
            self.free.add(id(value))
        self.building.discard(id(node))
        return value


def _scalar(text: str) -> Any:
    kind = implicit_type(text)
    if kind == "str":
        return text
    if kind == "null":
        return None
    if kind == "bool":
        return text in ("true", "True", "TRUE")
    try:
        if kind == "int":
            return _int(text)
        if kind == "float":
            return _float(text)
    except ValueError:  # "-_": ruamel's loaders fail on it too, and say so better
        raise NeedsFullLoader(f"the {kind} {text!r}") from None
    raise NeedsFullLoader(f"a {kind} value")


def _int(text: str) -> int:
    digits = text.replace("_", "")
    sign = -1 if digits[0] == "-" else 1
    digits = digits.lstrip("+-")
    for prefix, base in (("0b", 2), ("0x", 16), ("0o", 8)):
        if digits.startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits)


def _float(text: str) -> float:
    digits = text.replace("_", "").lower()
    sign = -1.0 if digits[0] == "-" else 1.0
    digits = digits.lstrip("+-")
    if digits == ".inf":
        return sign * float("inf")
    if digits == ".nan":
        return float("nan")
    return sign * float(digits)
