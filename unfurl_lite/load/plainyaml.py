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

from functools import lru_cache

from unfurl_lite.load import blockyaml
from unfurl_lite.load.blockyaml import NeedsFullLoader
from unfurl_lite.load.collector import no_collection
from unfurl_lite.load.guard import DATA_KEYS, MAX_DEPTH, MAX_EXPANDED_CHARS, MAX_EXPANDED_NODES
from unfurl_lite.load.scalars import implicit_type
from unfurl_lite.security.characters import control_character

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_PLAIN = "\x00plain"  # no tag written in a document can contain NUL

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
