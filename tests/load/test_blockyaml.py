"""The line reader of everyday block YAML (load/blockyaml.py) never disagrees with ruamel:
it gives ruamel's data or declines (the composer's road then reads the document)."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.conftest import ENSEMBLE_HEAD
from tests.load.test_fast_paths import SETTINGS, records, ruamel_safe_load
from unfurl_lite.load import blockyaml, plainyaml
from unfurl_lite.load.guard import MAX_DEPTH


def read(text: str) -> Any:
    return blockyaml.load(text, plainyaml._scalar, plainyaml.implicit_type)[0]


def same(value: Any) -> Any:
    """NaN as a marker (never equal to itself), and the types compared with the values
    (1 == 1.0 == True in Python, not in YAML)."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, dict):
        return {k: same(v) for k, v in value.items()}
    if isinstance(value, list):
        return [same(v) for v in value]
    return (type(value).__name__, value)


def agrees(text: str) -> bool:
    """The property: declined, or exactly what ruamel reads (never data from a text ruamel
    refuses). True when the reader gave data."""
    try:
        found = read(text)
    except blockyaml.NeedsFullLoader:
        return False
    expected = ruamel_safe_load(text)  # raises if the reader accepted what ruamel refuses
    assert same(found) == same(expected), text
    return True


def block_dump(data: Any, mapping: int, sequence: int, offset: int, width: int = 4096) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.width = width  # long values folded over several lines, as records are written
    stream = io.StringIO()
    yaml.dump(data, stream)
    return stream.getvalue()


@SETTINGS
@given(st.dictionaries(st.sampled_from(["template", "a.b", "x-y", "k 1", "+include"]),
                       records, min_size=1, max_size=5),
       st.sampled_from([(2, 2, 0), (2, 4, 2), (4, 4, 2), (3, 5, 3), (2, 2, 2)]),
       st.sampled_from([20, 80, 4096]))
def test_what_ruamel_writes_in_block_style_reads_back_the_same(
        data: dict[str, Any], indents: tuple[int, int, int], width: int) -> None:
    agrees(block_dump(data, *indents, width))


#: pieces of lines: keys, items, scalars of every kind, comments, block scalars
_KEYS = ["a", "b", "c d", "'q'", '"dq"', "'it''s'", "true", "1", "~", "+include", "x-y",
         "...", "a.b/c", "k$", "é", "a#b", "a :", "[k]", "&a k", "? k"]
_VALUES = ["", "v", "1", "-1", "0x1f", "1.5", ".nan", "true", "null", "~", "'s'", '"d"',
           "'it''s'", '"a #b"', "a #c", "::db", "?x", ":x", "-x", "- x", "a: b", "a:b",
           "[]", "{}", "[a, b]", "{a: 1}", "|", "|-", "|+", ">", "|2", "&x v", "*x",
           "!!str 1", "'a", '"b', "x:", "%x", "@x", "`x", "v  ", "2020-01-01", "=", "<<",
           "http://x/y", "a, b", "{{ x }}", "# c", "'' #c", '"x\\ty"']


_BODIES = ["text", "more  text", "  deeper", "", "   ", "# not a comment", "- not an item",
           "k: not a key", "tab\there"]


@st.composite
def block_text(draw: Any) -> str:
    """A random tree written as block YAML with drifting choices: how deep each level is
    indented, lists at their key's column or deeper, compact ``- k: v`` items, literal
    block scalars with blank and space-only lines, comments and blank lines between; then
    maybe one line's indentation nudged. Mostly valid, sometimes not."""
    lines: list[str] = []

    def node(indent: int, depth: int, first: str | None) -> None:
        """A container at ``indent``; ``first`` is what precedes its first line (an
        item's dash written on the same line) or None."""
        mapping = depth > 2 or draw(st.booleans())
        for index in range(draw(st.integers(1, 3))):
            pad = first if (index == 0 and first is not None) else " " * indent
            if draw(st.integers(0, 5)) == 0:
                lines.append(draw(st.sampled_from(["", " " * indent + "# c", "  "])))
            head = f"{pad}{draw(st.sampled_from(_KEYS))}:" if mapping else f"{pad}-"
            choice = draw(st.integers(0, 5 if depth < 3 else 1))
            if choice <= 1:
                value = draw(st.sampled_from(_VALUES))
                lines.append(f"{head} {value}".rstrip(" ") if value else head)
                if value in ("|", "|-", "|+", ">"):
                    body = " " * (indent + draw(st.integers(1, 3)))
                    for _ in range(draw(st.integers(1, 4))):
                        text = draw(st.sampled_from(_BODIES))
                        lines.append(body + text if text.strip() else text)
                elif value and draw(st.integers(0, 3)) == 0:  # folded over more lines
                    for _ in range(draw(st.integers(1, 3))):
                        text = draw(st.sampled_from([*_BODIES, "two words", "1", "x #y"]))
                        lines.append(" " * (indent + draw(st.integers(0, 4))) + text
                                     if text.strip() else text)
            elif choice == 2 and not mapping:
                node(indent + 2, depth + 1, f"{head} ")  # - k: v, the compact form
            else:
                lines.append(head)
                same_column = mapping and draw(st.booleans())
                child = indent if same_column else indent + draw(st.integers(1, 4))
                if same_column:
                    lines.append(f"{' ' * indent}- {draw(st.sampled_from(_VALUES[:12]))}")
                else:
                    node(child, depth + 1, None)

    node(0, 0, None)
    if len(lines) > 1 and draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = " " * draw(st.integers(0, 3)) + lines[at]
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n", "\n  \n"]))


_FLOW_SCALARS = ["a", "exit 0", "1", "-1", "- x", "-", "true", "~", "null", "'s'", '"d"',
                 "'it''s'", "a:b", "a: b", "http://x", "#x", "a #b", "@x", ".5", "...", "=",
                 "é", "x y ", " x", "?x", "!x", "&a", "*a", "", "a,b", "{{ x }}",
                 "2020-01-01", "0o7", "+1", "$x", "a(b)", "x~", '"a\\"', "'", "<<"]


@st.composite
def flow_text(draw: Any, depth: int = 0) -> str:
    """A random one-line flow collection: nested lists and mappings of scalars of every
    kind, spaced and separated in the ways YAML allows and some it does not."""
    if depth > 0 and (depth >= 3 or draw(st.integers(0, 2)) > 0):
        return draw(st.sampled_from(_FLOW_SCALARS))
    opening = draw(st.sampled_from("[{"))
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        value = draw(flow_text(depth + 1))
        if opening == "{":
            separator = draw(st.sampled_from([": ", ":", " : ", ":  "]))
            value = f"{draw(st.sampled_from(_FLOW_SCALARS))}{separator}{value}"
        parts.append(value)
    inside = draw(st.sampled_from([", ", ",", " , "])).join(parts)
    return (opening + draw(st.sampled_from(["", " "])) + inside
            + draw(st.sampled_from(["", ",", " "])) + ("]" if opening == "[" else "}"))


@SETTINGS
@given(flow_text(), st.sampled_from(["k: {}\n", "- {}\n", "k: {} # c\n", "k: {}#c\n",
                                     "a:\n  - {}\n  - x\n", "a:\n  b: {}\n  c: {}\n"]))
@example("{className: Shell}", "k: {}\n")
@example("[a, 'b', \"c\", 1, {d: [e, ~]}]", "k: {}\n")
def test_one_line_flow_collections_read_as_ruamel_reads_them(flow: str, frame: str) -> None:
    agrees(frame.format(flow, flow))


@SETTINGS
@given(block_text())
@example("a:\n- 1\n- 2\nb: 3\n")
@example("- a: 1\n  b:\n  - x\n- c\n")
@example("a: |\n  one\n\n   two\n  three\n\nb: |-\n  x\n\n")
@example("a: |\n  x\n  \nb: 1\n")
@example("a: |\n    x\n   \n")
@example("- |\n text")
@example("a: 10000 tasks (1,\n  0 skipped)\nb: x\n\n  y\n\n\n  z\n")
@example("a: |\n\n  x\n")
@example("a: 1\n  b: 2\n")
@example("a:\n    b: 1\n  c: 2\n")
@example("k: v  \n")
@example("- - 1\n  - 2\n")
@example("a: b # c\n'x': 'it''s' # d\n")
@example("'': ''\n\"\": x\n")
@example("summary: 200 tasks (1, 0 \n  skipped)\nb: x \n\n  y  \nc: z\n")
@example("- a b \n  c\n- d   \n   e\n")
def test_every_line_the_reader_accepts_is_what_ruamel_reads(text: str) -> None:
    agrees(text)


def test_the_reader_reads_the_everyday_ensemble_and_declines_the_rest() -> None:
    text = ENSEMBLE_HEAD + """\
        # a comment, and a blank line

        db:
          type: tosca.nodes.Root
          requirements:
            - host: server
            - dependency:
                node: other
          properties:
            port: 5432
            ratio: 0.5
            name: 'db''s'
            quoted: "a #b"
            empty: []
            none:
            target: ::server
          interfaces:
            Standard:
              create:
                implementation: |
                  echo one

                  echo two
"""
    assert agrees(text)
    # a record's summary as the emitter folds it at width 80: a space ends the first line
    deployed = "lastJob:\n  summary: 200 tasks (0 unknown, 0 \n    skipped)\n  ok: 1\n"
    assert read(deployed) == {"lastJob": {"summary": "200 tasks (0 unknown, 0 skipped)", "ok": 1}}
    flows = "implementation: {className: Shell}\nk: [a, 'b', \"c\", 1, {d: [e]}, []]\n"
    assert read(flows) == {"implementation": {"className": "Shell"},
                           "k": ["a", "b", "c", 1, {"d": ["e"]}, []]}
    for declined in ["a: &x 1\nb: *x\n", "a: {b: 1,\n  c: 2}\n", "a: {b: c: d}\n",
                     "a: !!str 1\n", "a: >\n  x\n",
                     "a: 'x\n  y'\n", "a: x\n  y: z\n", "---\na: 1\n", "a:\tb\n", "a: 1\r\n",
                     '"a\\tb": 1\n', "1: x\n", "a: 1\na: 2\n", "a: b: c\n", "- x\n  - y\n"]:
        with pytest.raises(blockyaml.NeedsFullLoader):
            read(declined)


def test_an_ascii_text_with_a_character_outside_the_subset_is_declined() -> None:
    """Every ASCII control character but the line break, and DEL, anywhere in a value:
    the text goes to the composer's road (as a non-ASCII one beside it does too)."""
    for code in [*range(0x20), 0x7F]:
        char = chr(code)
        if char == "\n":
            continue
        for text in (f"a: x{char}y\n", f"a: x{char}y\nb: \u00e9\n"):
            with pytest.raises(blockyaml.NeedsFullLoader):
                read(text)
    printable = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in "'\\")
    assert read(f"a: '{printable}'\n") == {"a": printable}


def test_the_guarded_road_reads_by_lines_and_keeps_the_guards_verdicts() -> None:
    deep = "".join(" " * (2 * level) + f"k{level}:\n" for level in range(MAX_DEPTH + 20))
    with pytest.raises(blockyaml.NeedsFullLoader):
        read(deep)  # the guard's depth limit: the full road refuses it with its line
    found = plainyaml.load_guarded("a:\n  +include: x\n")
    assert found.data == {"a": {"+include": "x"}}
    assert found.directives
    with pytest.raises(plainyaml.NeedsFullLoader):
        plainyaml.load_guarded(deep)
