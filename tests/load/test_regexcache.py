"""The patterns module bodies compile, built once and kept beside the bytecode
(``load/regexcache.py``): a pattern made from the kept code matches as ``re.compile``'s
own does, a second process finds what the first built, only a module body's patterns are
kept (never one made at run time from a document), and a file not to be trusted, or
damaged, or holding code the engine refuses, is never used."""

from __future__ import annotations

import marshal
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unfurl_lite.load import regexcache

PATTERNS: list[tuple[str | bytes, int]] = [
    (r"^(?P<indent> *)(?P<key>[\w.-]+):(?: +(?P<value>.*))?$", 0),
    (r"(?i)true|yes|on", 0),
    (r"(?:^|[\[{,])\s*&[^\s\[\]{},]+", re.M),
    (r"(\w+)\s+\1", 0),  # a back reference
    (r"(?<=@)\w+(?!\.)", 0),  # look behind and ahead
    (r"a*+b++c?+", 0),  # possessive
    (r"[^\x00-\x7f]+|\d{2,4}", re.A),
    (r"""
        (?P<number> -?\d+(?:\.\d+)?)   # a number
      | (?P<word> [^\W\d]\w*)          # a word
    """, re.X),
    (r".+\n.+", re.S),
    (rb"(?P<b>[\x80-\xff]+)\0?", 0),
    (rb"[a-z]+", re.I | re.L),
    (r"\bé[^\W\d_]?\B", re.I | re.U),
]


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The cache enabled over ``tmp_path``, this test's alone: ``re.compile``, re's own
    cache and the module's state are put back afterwards."""
    monkeypatch.setattr(re, "compile", regexcache._compile)
    monkeypatch.setattr(re, "_cache", {})
    monkeypatch.setattr(regexcache, "_entries", {})
    monkeypatch.setattr(regexcache, "_added", [])
    monkeypatch.setattr(regexcache.atexit, "register", lambda *args: None)
    monkeypatch.setattr(regexcache.sys, "dont_write_bytecode", False)
    directory = tmp_path / "__pycache__"
    directory.mkdir()
    regexcache.enable(str(directory))
    return directory


def _module_compiles(patterns: list[tuple[str | bytes, int]]) -> dict[str, Any]:
    """Each pattern compiled by a module's body, as a module being imported compiles it."""
    namespace: dict[str, Any] = {"PATTERNS": patterns}
    exec(compile("import re\nCOMPILED = [re.compile(p, f) for p, f in PATTERNS]\n"
                 "ONE = re.compile(*PATTERNS[0])\n", "<a module>", "exec"), namespace)
    return namespace


def _entries_kept(cache: Path) -> list[Any]:
    return regexcache._read(str(cache / regexcache.FILE))


def test_a_module_bodys_patterns_are_kept_and_a_second_process_finds_them(cache: Path) -> None:
    _module_compiles(PATTERNS)
    regexcache._store(str(cache))
    kept = _entries_kept(cache)
    assert {(e[0], e[1]) for e in kept} == {(p, int(f)) for p, f in PATTERNS[:1]}
    # the list comprehension is a function of its own: only the body's own call is kept
    assert all(regexcache._build(e) is not None for e in kept)


def test_a_class_bodys_patterns_are_kept_as_a_modules_are(cache: Path) -> None:
    """textwrap's and logging's patterns are compiled by class statements at import."""
    namespace: dict[str, Any] = {"PATTERNS": PATTERNS}
    exec(compile("import re\nclass Wrapper:\n    ONE = re.compile(*PATTERNS[1])\n"
                 "    def later(self):\n        return re.compile(*PATTERNS[2])\n",
                 "<a module>", "exec"), namespace)
    namespace["Wrapper"]().later()
    regexcache._store(str(cache))
    assert {(e[0], e[1]) for e in _entries_kept(cache)} == {(PATTERNS[1][0], 0)}


def test_patterns_made_at_run_time_are_never_kept(cache: Path) -> None:
    def from_a_document(text: str) -> re.Pattern[str]:
        return re.compile(text)

    from_a_document("s3cr[e]t-(?P<name>.*)")
    regexcache._store(str(cache))
    assert not (cache / regexcache.FILE).exists()


@pytest.mark.parametrize(("pattern", "flags"), PATTERNS)
def test_a_pattern_built_from_kept_code_is_the_one_re_builds(
        pattern: str | bytes, flags: int) -> None:
    entry = regexcache.entry_for(pattern, int(flags))
    assert entry is not None
    restored = marshal.loads(marshal.dumps([entry]))[0]  # as the next process reads it
    built = regexcache._build(restored)
    made = re.compile(pattern, flags)
    assert built is not None
    assert (built.pattern, built.flags, built.groups, built.groupindex) == (
        made.pattern, made.flags, made.groups, made.groupindex)


@settings(max_examples=60)
@given(st.sampled_from(PATTERNS), st.text(alphabet="aAbc1 \n@é.-_:&[{\\xé", max_size=40))
def test_a_pattern_built_from_kept_code_matches_as_re_does(
        case: tuple[str | bytes, int], text: str) -> None:
    pattern, flags = case
    entry = regexcache.entry_for(pattern, int(flags))
    assert entry is not None
    built, made = regexcache._build(entry), re.compile(pattern, flags)
    assert built is not None
    subject: Any = text.encode("utf-8") if isinstance(pattern, bytes) else text

    def seen(p: re.Pattern[Any]) -> list[Any]:
        return [(m.span(), m.groups(), m.groupdict()) for m in p.finditer(subject)]

    assert seen(built) == seen(made)
    assert bool(built.fullmatch(subject)) == bool(made.fullmatch(subject))


def test_the_next_start_takes_the_pattern_from_the_kept_code(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _module_compiles(PATTERNS)
    regexcache._store(str(cache))
    monkeypatch.setattr(re, "_cache", {})
    monkeypatch.setattr(regexcache, "_entries", {})
    built: list[Any] = []
    build = regexcache._build
    monkeypatch.setattr(regexcache, "_build", lambda e: built.append(e) or build(e))
    regexcache.enable(str(cache))
    assert [e[0] for e in built] == [PATTERNS[0][0]]
    namespace = _module_compiles(PATTERNS[:1])
    assert namespace["ONE"].match("  name: value").group("value") == "value"
    key = (PATTERNS[0][0], int(PATTERNS[0][1]))
    assert key not in regexcache._added  # found in the file: nothing new to keep


def test_nothing_is_written_where_python_writes_no_bytecode(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regexcache.sys, "dont_write_bytecode", True)
    _module_compiles(PATTERNS)
    regexcache._store(str(cache))
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("damage", ["writable by others", "a symlink", "not marshal",
                                    "not a list", "not an entry", "code the engine refuses"])
def test_a_file_not_to_be_trusted_damaged_or_refused_is_not_used(
        cache: Path, damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cache / regexcache.FILE
    good = regexcache.entry_for(r"(a)(b)", 0)
    assert good is not None
    if damage == "a symlink":
        target = cache / "elsewhere"
        target.write_bytes(marshal.dumps([good]))
        path.symlink_to(target)
    else:
        payload = {"not marshal": b"\x00garbage",
                   "not a list": marshal.dumps({"a": 1}),
                   "not an entry": marshal.dumps([("a", 0, 0, ["x"], 0, {}, ())]),
                   "code the engine refuses": marshal.dumps(
                       [(good[0], good[1], good[2], [99999, 1, 2], good[4], good[5], good[6])]),
                   }.get(damage, marshal.dumps([good]))
        path.write_bytes(payload)
        if damage == "writable by others":
            os.chmod(path, 0o666)
    monkeypatch.setattr(re, "_cache", {})
    monkeypatch.setattr(regexcache, "_entries", {})
    regexcache.enable(str(cache))
    assert re._cache == {}  # type: ignore[attr-defined]
    assert re.compile(r"(a)(b)").match("ab") is not None  # re builds it as always
