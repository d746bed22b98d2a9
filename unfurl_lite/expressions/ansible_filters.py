"""Ansible's core Jinja2 filters and tests (ansible-core 2.15, which Unfurl 1.2.0 renders
its templates with), written to give what Ansible gives, minus what reaches outside a
template: reading files or the environment, expanding ``~``, vault and password hashing
are refused by name (:data:`REFUSED_FILTERS`, :data:`REFUSED_TESTS`).

Every filter here runs in the sandbox (``expressions/sandbox.py`` wraps each one with its
size limits and taint rules).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import itertools
import json
import math
import ntpath
import posixpath
import random
import re
import shlex
import time
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote_plus, urlsplit

from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.scope import current_ctx
from unfurl_lite.expressions.yaml_filters import from_yaml, from_yaml_all, to_nice_yaml, to_yaml

if TYPE_CHECKING:
    from unfurl_lite.model.narrow import YAMLValue

UUID_NAMESPACE_ANSIBLE = uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E")


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else str(value)


def _path(value: Any) -> str:
    """Text, as os.path takes it: Ansible's path filters and tests fail on others."""
    if not isinstance(value, str | bytes):
        raise ExpressionError(f"expected text, not {type(value).__name__}")
    return _text(value)


def _sequence(value: Any) -> Any:  # (Ansible's is_sequence)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ExpressionError(f"expects a sequence, not {type(value).__name__}")
    return value


def _plain(value: YAMLValue) -> Any:
    """Mappings and lists as plain dicts and lists (the read-only views templates see)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# --- serialization ------------------------------------------------------------------------


class _Encoder(json.JSONEncoder):
    def default(self, o: Any) -> Any:
        value: YAMLValue | set[Any] = o
        if isinstance(value, Mapping):
            return dict(value)
        if isinstance(value, datetime.date | datetime.datetime):
            return value.isoformat()
        if isinstance(value, set | tuple):
            return list(value)
        as_ref = getattr(o, "as_ref", None)
        if callable(as_ref):
            return as_ref()
        return super().default(o)


def to_json(value: Any, *args: Any, **kw: Any) -> str:
    kw.pop("vault_to_text", None)
    kw.pop("preprocess_unsafe", None)
    return json.dumps(value, *args, cls=_Encoder, **kw)


def to_nice_json(value: Any, indent: int = 4, sort_keys: bool = True, *args: Any,
                 **kw: Any) -> str:
    return to_json(value, *args, indent=indent, sort_keys=sort_keys, separators=(",", ": "),
                   **kw)


def from_json(data: Any) -> Any:
    return json.loads(data)


def type_debug(value: Any) -> str:
    """The value's type's name; a mark an evaluation keeps on a value (quoting.py) shows
    the type Unfurl's value has."""
    kind = type(value)
    return str(getattr(kind, "debug_name", kind.__name__))


def b64encode(value: Any, encoding: str = "utf-8") -> str:
    return base64.b64encode(_text(value).encode(encoding, "surrogateescape")).decode()


def b64decode(value: Any, encoding: str = "utf-8") -> str:
    text = _text(value).encode("utf-8", "surrogateescape")
    return base64.b64decode(text).decode(encoding, "surrogateescape")


def to_uuid(value: Any, namespace: Any = UUID_NAMESPACE_ANSIBLE) -> str:
    space = namespace if isinstance(namespace, uuid.UUID) else uuid.UUID(str(namespace))
    return str(uuid.uuid5(space, _text(value)))


# --- scalars ------------------------------------------------------------------------------


def to_bool(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        value = value.lower()
    return value in ("yes", "on", "1", "true", 1)


def quote(value: Any) -> str:
    return shlex.quote("" if value is None else _text(value))


def ternary(value: Any, true_val: Any, false_val: Any, none_val: Any = None) -> Any:
    if value is None and none_val is not None:
        return none_val
    return true_val if value else false_val


def mandatory(value: Any, msg: Any = None) -> Any:
    from jinja2.runtime import Undefined  # start-up: keeps jinja2 off ansible_filters's import

    if isinstance(value, Undefined):
        if msg is not None:
            raise ExpressionError(str(msg))
        name = getattr(value, "_undefined_name", None)
        raise ExpressionError(f"Mandatory variable {repr(name) + ' ' if name else ''}not defined.")
    return value


def comment(text: str, style: str = "plain", **kw: Any) -> str:
    styles: dict[str, dict[str, str]] = {
        "plain": {"decoration": "# "}, "erlang": {"decoration": "% "},
        "c": {"decoration": "// "},
        "cblock": {"beginning": "/*", "decoration": " * ", "end": " */"},
        "xml": {"beginning": "<!--", "decoration": " - ", "end": "-->"},
    }
    if style not in styles:
        raise ExpressionError(f"comment: unknown style {style!r}")
    around = kw.get("decoration", styles[style]["decoration"])
    p: dict[str, Any] = {"newline": "\n", "beginning": "", "prefix": around.rstrip(),
                         "prefix_count": 1, "decoration": "", "postfix": around.rstrip(),
                         "postfix_count": 1, "end": ""}
    p.update(styles[style])
    p.update(kw)
    nl = p["newline"]
    beginning = f"{p['beginning']}{nl}" if p["beginning"] else ""
    prefix = ""
    if p["prefix"]:
        prefix = (f"{p['prefix']}{nl}" if p["prefix"] != nl else nl) * int(p["prefix_count"])
    decoration = p["decoration"]
    body = (decoration + text.replace(nl, nl + decoration)).replace(
        decoration + nl, decoration.rstrip() + nl)
    postfix = nl.join([""] + [p["postfix"]] * int(p["postfix_count"]))
    end = f"{nl}{p['end']}" if p["end"] else ""
    return beginning + prefix + body + postfix + end


def get_hash(data: Any, hashtype: str = "sha1") -> str:
    try:
        digest = hashlib.new(hashtype)
    except ValueError as exc:
        raise ExpressionError(f"hash: {exc}") from None
    digest.update(_text(data).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def to_datetime(value: Any, format: str = "%Y-%m-%d %H:%M:%S") -> datetime.datetime:
    return datetime.datetime.strptime(_text(value), format)


def strftime(string_format: str, second: Any = None, utc: bool = False) -> str:
    moment = None if second is None else float(second)
    return time.strftime(string_format, (time.gmtime if utc else time.localtime)(moment))


def rand(end: Any, start: Any = None, step: Any = None, seed: Any = None) -> Any:
    rng: random.Random = random.SystemRandom() if seed is None else random.Random(seed)
    if isinstance(end, int):
        return rng.randrange(start or 0, end, step or 1)
    if hasattr(end, "__iter__"):
        if start or step:
            raise ExpressionError("random: start and step can only be used with integers")
        return rng.choice(end)  # (as Ansible: a mapping is indexed by position, and fails)
    raise ExpressionError("random can only be used on sequences and integers")


def shuffle(items: Any, seed: Any = None) -> Any:
    """Ansible's ``shuffle``: what cannot be a list is given back as it is."""
    try:
        shuffled = list(items)
    except TypeError:
        return items
    (random.Random(seed) if seed else random.SystemRandom()).shuffle(shuffled)
    return shuffled


# --- collections --------------------------------------------------------------------------


def _merge(low: dict[Any, Any], high: dict[Any, Any], recursive: bool,
           list_merge: str) -> dict[Any, Any]:
    if low == {} or low == high:
        return dict(high)
    merged = dict(low)
    high_value: YAMLValue
    for key, high_value in high.items():
        if key not in merged:
            merged[key] = high_value
            continue
        low_value: YAMLValue = merged[key]
        if isinstance(low_value, dict) and isinstance(high_value, dict):
            merged[key] = (_merge(low_value, high_value, recursive, list_merge)
                           if recursive else high_value)
        elif isinstance(low_value, list) and isinstance(high_value, list):
            merged[key] = {
                "replace": high_value, "keep": low_value,
                "append": low_value + high_value, "prepend": high_value + low_value,
                "append_rp": [z for z in low_value if z not in high_value] + high_value,
                "prepend_rp": high_value + [z for z in low_value if z not in high_value],
            }[list_merge]
        else:
            merged[key] = high_value
    return merged


def combine(*terms: Any, **kwargs: Any) -> Any:
    recursive = kwargs.pop("recursive", False)
    list_merge = kwargs.pop("list_merge", "replace")
    if kwargs:
        raise ExpressionError("combine: 'recursive' and 'list_merge' are the only options")
    given = flatten(list(terms), levels=1)
    if not given:
        return {}
    if len(given) == 1:  # nothing to merge: as it is, mapping or not (as Ansible)
        return given[0]
    dictionaries = [_plain(d) for d in given]
    if list_merge not in ("replace", "keep", "append", "prepend", "append_rp", "prepend_rp"):
        raise ExpressionError(f"combine: unknown list_merge {list_merge!r}")
    for item in dictionaries:
        if not isinstance(item, dict):
            raise ExpressionError(f"combine expects mappings, got {type(item).__name__}")
    result = dictionaries[-1]
    for dictionary in reversed(dictionaries[:-1]):
        result = _merge(dictionary, result, recursive, list_merge)
    return result


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping)


def flatten(items: Any, levels: Any = None, skip_nulls: bool = True) -> list[Any]:
    found: list[Any] = []
    for element in items:
        if skip_nulls and element in (None, "None", "null"):
            continue
        if _is_sequence(element):
            if levels is None:
                found.extend(flatten(element, skip_nulls=skip_nulls))
            elif levels >= 1:
                found.extend(flatten(element, levels=int(levels) - 1, skip_nulls=skip_nulls))
            else:
                found.append(element)
        else:
            found.append(element)
    return found


def dict2items(mapping: YAMLValue, key_name: str = "key", value_name: str = "value") -> list[Any]:
    if not isinstance(mapping, Mapping):
        raise ExpressionError(f"dict2items requires a dictionary, got {type(mapping).__name__}")
    return [{key_name: k, value_name: mapping[k]} for k in mapping]


def items2dict(items: Any, key_name: str = "key", value_name: str = "value") -> dict[Any, Any]:
    if not _is_sequence(items):
        raise ExpressionError(f"items2dict requires a list, got {type(items).__name__}")
    try:
        return {item[key_name]: item[value_name] for item in items}
    except (KeyError, TypeError):
        raise ExpressionError(f"items2dict requires each item to have the keys {key_name!r} "
                              f"and {value_name!r}") from None


def subelements(obj: YAMLValue, keys: Any, skip_missing: bool = False) -> list[Any]:
    elements = list(obj.values()) if isinstance(obj, Mapping) else list(obj) \
        if isinstance(obj, list) else None
    if elements is None:
        raise ExpressionError("subelements: obj must be a list of dicts or a nested dict")
    path = keys.split(".") if isinstance(keys, str) else list(keys)
    found: list[Any] = []
    for element in elements:
        values = element
        for key in path:
            try:
                values = values[key]
            except KeyError:
                if skip_missing:
                    values = []
                    break
                raise ExpressionError(f"subelements: could not find {key!r} in an item") from None
        if not isinstance(values, list):
            raise ExpressionError(f"subelements: the key {keys!r} should point to a list")
        found.extend([element, value] for value in cast("list[Any]", values))
    return found


def unique(items: Any, case_sensitive: Any = None, attribute: Any = None) -> list[Any]:
    """Ansible's ``unique``: Jinja2's (first occurrences, text compared without case unless
    ``case_sensitive``, by an ``attribute`` of each item, which each must have), or, when
    an item cannot be hashed and neither option is given, each item compared whole."""
    try:
        return _jinja_unique(items, bool(case_sensitive), attribute)
    except TypeError as exc:
        if case_sensitive is False or attribute:
            raise ExpressionError("unique: Jinja2's unique filter failed and Ansible's does "
                                  f"not take case_sensitive=False or attribute: {exc}") from None
        return _unique(items)


def _jinja_unique(items: Any, case_sensitive: bool, attribute: Any) -> list[Any]:
    seen: set[Any] = set()
    found: list[Any] = []
    for item in items:
        key = item if attribute is None else _attribute_of(item, attribute)
        if isinstance(key, str) and not case_sensitive:
            key = key.lower()
        if key not in seen:
            seen.add(key)
            found.append(item)
    return found


def _attribute_of(item: Any, attribute: Any) -> Any:
    """Jinja2's ``attribute=`` of an item: dotted keys, whole numbers as indexes."""
    parts = str(attribute).split(".") if isinstance(attribute, str) else [attribute]
    value = item
    for part in parts:
        key = int(part) if isinstance(part, str) and part.isdigit() else part
        try:
            value = value[key]
        except (LookupError, TypeError):
            raise ExpressionError(f"{type(value).__name__} value has no attribute or key "
                                  f"{part!r}") from None
    return value


def _unique(items: Iterable[Any]) -> list[Any]:
    found: list[Any] = []
    for item in items:
        if item not in found:
            found.append(item)
    return found


def _set_op(name: str) -> Callable[[Any, Any], Any]:
    """Ansible's set filters: as sets when both sides are hashable (text, numbers: which
    fail as Ansible's do), else as lists, first occurrences kept."""
    def apply(a: Any, b: Any) -> Any:
        hashable = isinstance(a, Hashable) and isinstance(b, Hashable)
        if hashable:
            ops: dict[str, Callable[[set[Any], set[Any]], set[Any]]] = {
                "intersect": lambda x, y: x & y, "difference": lambda x, y: x - y,
                "symmetric_difference": lambda x, y: x ^ y, "union": lambda x, y: x | y}
            return ops[name](set(a), set(b))
        if name == "intersect":
            return _unique(x for x in a if x in b)
        if name == "difference":
            return _unique(x for x in a if x not in b)
        if name == "union":
            return _unique(a + b)
        both = _unique(x for x in a if x in b)
        return [x for x in _unique(a + b) if x not in both]
    return apply


def extract(item: Any, container: Any, morekeys: Any = None) -> Any:
    keys = [item] + (morekeys if isinstance(morekeys, list) else [] if morekeys is None
                     else [morekeys])
    value = container
    for key in keys:
        value = value[key]
    return value


def rekey_on_member(data: Any, key: Any, duplicates: str = "error") -> dict[Any, Any]:
    if duplicates not in ("error", "overwrite"):
        raise ExpressionError(f"rekey_on_member: unknown duplicates {duplicates!r}")
    items: Iterable[Any] = (cast("Mapping[Any, Any]", data).values() if isinstance(data, Mapping)
                            else data)
    found: dict[Any, Any] = {}
    for item in items:
        if not isinstance(item, Mapping) or key not in item:
            raise ExpressionError(f"rekey_on_member: key {key!r} was not found")
        if found.get(item[key]) and duplicates == "error":
            raise ExpressionError(f"rekey_on_member: key {item[key]!r} is not unique")
        found[item[key]] = item
    return found


# --- numbers and sizes ----------------------------------------------------------------------

_SIZES = {"Y": 1 << 80, "Z": 1 << 70, "E": 1 << 60, "P": 1 << 50, "T": 1 << 40, "G": 1 << 30,
          "M": 1 << 20, "K": 1 << 10, "B": 1}


def human_readable(size: Any, isbits: bool = False, unit: Any = None) -> str:
    base = "bits" if isbits else "Bytes"
    suffix, limit = "B", 1
    for suffix, limit in sorted(_SIZES.items(), key=lambda item: -item[1]):
        if (unit is None and size >= limit) or (unit is not None and unit.upper() == suffix):
            break
    suffix = suffix + base[0] if limit != 1 else base
    return f"{size / limit:.2f} {suffix}"


def human_to_bytes(size: Any, default_unit: Any = None, isbits: bool = False) -> int:
    found = re.search(r"^\s*(\d*\.?\d*)\s*([A-Za-z]+)?", str(size))
    try:
        number = float(found.group(1)) if found else float("x")
    except ValueError:
        raise ExpressionError(f"human_to_bytes() can't interpret {size!r}") from None
    unit = (found.group(2) if found else None) or default_unit
    if unit is None:
        return round(number)
    key = unit[0].upper()
    if key not in _SIZES:
        raise ExpressionError(f"human_to_bytes(): the suffix of {size!r} must be one of "
                              + ", ".join(_SIZES))
    kind, kind_name = ("b", "bit") if isbits else ("B", "byte")
    if len(unit) > 1 and kind_name not in unit.lower() and unit[1] != kind:
        raise ExpressionError(f"human_to_bytes(): {size!r} is not a valid size")
    return round(number * _SIZES[key])


def logarithm(x: Any, base: Any = math.e) -> float:
    return math.log10(x) if base == 10 else math.log(x, base)


def inverse_power(x: Any, base: Any = 2) -> float:
    return math.sqrt(x) if base == 2 else math.pow(x, 1.0 / float(base))


# --- paths and URLs ---------------------------------------------------------------------------


def path_join(paths: Any) -> str:
    if isinstance(paths, str):
        return posixpath.join(paths)
    return posixpath.join(*[_path(p) for p in _sequence(paths)])


def urlsplit_filter(value: Any, query: str = "") -> Any:
    parts = urlsplit(_text(value))
    fields = {"fragment": parts.fragment, "hostname": parts.hostname, "netloc": parts.netloc,
              "password": parts.password, "path": parts.path, "port": parts.port,
              "query": parts.query, "scheme": parts.scheme, "username": parts.username}
    if not query:
        return fields
    if query not in fields:
        raise ExpressionError(f"urlsplit: unknown URL component {query!r}")
    return fields[query]


def _split(value: Any, *args: Any) -> list[str]:
    if not isinstance(value, str):  # (Ansible's is str.split itself)
        raise ExpressionError(f"split expects text, not {type(value).__name__}")
    return value.split(*args)


def _relpath(path: Any, start: Any = None) -> str:
    """Ansible's: from ``start``, else from the ensemble's folder (Unfurl's cwd)."""
    if start:
        return posixpath.relpath(_path(path), _path(start))
    ctx = current_ctx.get()
    base = str(ctx.project_root) if ctx is not None and ctx.project_root else "/"
    return posixpath.relpath(posixpath.join(base, _path(path)), base)


def _permutations(items: Any, r: int | None = None) -> Any:
    return itertools.permutations(items, r)


def _product(*lists: Any, **kw: Any) -> Any:
    return itertools.product(*lists, **kw)


def _zip(*lists: Any) -> Any:
    return zip(*lists, strict=False)


def _zip_longest(*lists: Any, fillvalue: Any = None) -> Any:
    return itertools.zip_longest(*lists, fillvalue=fillvalue)


#: the filters of one value (typed: each lambda's argument is any value)
_OF_ONE: dict[str, Callable[[Any], Any]] = {
    "basename": lambda p: posixpath.basename(_path(p)),
    "dirname": lambda p: posixpath.dirname(_path(p)),
    "splitext": lambda p: posixpath.splitext(_path(p)),
    "win_basename": lambda p: ntpath.basename(_path(p)),
    "win_dirname": lambda p: ntpath.dirname(_path(p)),
    "win_splitdrive": lambda p: ntpath.splitdrive(_path(p)),
    "commonpath": lambda paths: posixpath.commonpath([_path(p) for p in _sequence(paths)]),
    "normpath": lambda p: posixpath.normpath(_path(p)),
    "md5": lambda d: get_hash(d, "md5"), "sha1": lambda d: get_hash(d, "sha1"),
    "checksum": lambda d: get_hash(d, "sha1"),
    "type_debug": type_debug,
    "urldecode": lambda s: unquote_plus(_path(s)),
}
#: the filters of a value and an argument (some optional)
_OF_TWO: dict[str, Callable[[Any, Any], Any]] = {
    "pow": lambda x, y: math.pow(x, y),
    "combinations": lambda items, r: itertools.combinations(items, r),
}
FILTERS: dict[str, Callable[..., Any]] = {
    **_OF_ONE, **_OF_TWO,
    "split": _split, "relpath": _relpath, "permutations": _permutations,
    "b64decode": b64decode, "b64encode": b64encode, "to_uuid": to_uuid,
    "to_json": to_json, "to_nice_json": to_nice_json, "from_json": from_json,
    "to_yaml": to_yaml, "to_nice_yaml": to_nice_yaml, "from_yaml": from_yaml,
    "from_yaml_all": from_yaml_all,
    "path_join": path_join,
    "bool": to_bool, "to_datetime": to_datetime, "strftime": strftime, "quote": quote,
    "hash": get_hash,
    "ternary": ternary, "random": rand, "shuffle": shuffle, "mandatory": mandatory,
    "comment": comment,
    "combine": combine, "extract": extract, "flatten": flatten,
    "dict2items": dict2items, "items2dict": items2dict, "subelements": subelements,
    "unique": unique, "log": logarithm, "root": inverse_power,
    "intersect": _set_op("intersect"), "difference": _set_op("difference"),
    "symmetric_difference": _set_op("symmetric_difference"), "union": _set_op("union"),
    "product": _product,
    "human_readable": human_readable, "human_to_bytes": human_to_bytes,
    "rekey_on_member": rekey_on_member,
    "zip": _zip, "zip_longest": _zip_longest,
    "urlsplit": urlsplit_filter,
}


#: Ansible's filters that reach outside a template, refused by name
REFUSED_FILTERS = {
    "expanduser": "it reads the user's home directory",
    "expandvars": "it reads the environment (use get_env)",
    "realpath": "it reads the file system",
    "fileglob": "it lists files",
    "password_hash": "it needs a crypt library",
    "vault": "Ansible vault is not supported",
    "unvault": "Ansible vault is not supported",
}
