"""Generated expressions evaluated by Unfurl 1.2.0 itself and here: the same value (or both
an error). Filters chained on generated values, tests, the eval functions that compute
from their arguments, and queries over the query keys, on the `names-probes` ensemble
(opt-in: needs Unfurl 1.2.0's virtualenv, UNFURL120_VENV;
tests/data/unfurl120/queries/oracle.py answers for Unfurl)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples, unfurl120
from tests.expressions import query_grammar
from tests.expressions.test_unfurl_expressions import comparable
from tests.expressions.unfurl_probes import CASES, Probes, copy_case

UNFURL = unfurl120()
CASE = "names-probes"

pytestmark = [
    pytest.mark.unfurl120, pytest.mark.slow,
    pytest.mark.skipif(not UNFURL.exists(),
                       reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0"),
]

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                    st.sampled_from(["", "a", "B c", "1", "x,y", "true", " sp ", "a/b.txt"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "key", "value"]), inner, max_size=3)),
    max_leaves=6)

#: filters that compute from their input only, with arguments
FILTERS = [
    "abs", "b64encode", "b64decode", "basename", "bool", "capitalize", "combine({'a': 1})",
    "count", "default('d')", "dict2items", "dictsort", "dirname", "first", "flatten",
    "from_json", "from_yaml", "hash('md5')", "int", "float", "items2dict", "join(',')",
    "last", "length", "list", "lower", "max", "min", "md5", "quote", "regex_escape",
    "regex_replace('a', 'b')", "regex_search('a')", "reverse", "sha1", "sort", "string",
    "sum", "title", "to_json", "to_nice_json", "to_yaml", "to_nice_yaml", "trim",
    "ternary('y', 'n')", "type_debug", "unique", "upper", "wordcount", "difference([1])",
    "union(['a'])", "intersect(['a'])", "map('string') | list", "select | list",
    "reject | list", "splitext", "split(',')", "mandatory", "tojson", "to_uuid",
    "urlencode", "batch(2) | list", "slice(2) | list", "center(5)", "indent(2)",
    "truncate(5, leeway=0)", "replace('a', 'x')", "round", "items | list", "zip([1]) | list",
    "normpath", "path_join", "commonpath", "win_splitdrive", "relpath", "urldecode",
]
#: filters given unusual arguments (options, positions, defaults)
FILTERS_WITH_ARGUMENTS = [
    "sort(reverse=true)", "unique(case_sensitive=false)", "unique(attribute='a')",
    "flatten(1)", "flatten(levels=0)", "map(attribute='a') | list", "selectattr('a') | list",
    "rejectattr('a') | list", "dictsort(reverse=true)", "combine",
    "combine({'b': [1]}, recursive=true)", "combine({'a': [2]}, list_merge='append')",
    "to_json(sort_keys=true)", "to_nice_yaml(indent=2)", "to_yaml(default_flow_style=true)",
    "regex_findall('a')", "regex_search('(a)', '\\\\1')", "regex_replace('(a)', '<\\\\1>')",
    "int(base=16)", "int(7)", "float(1.5)", "join", "join(attribute='a')", "sum(start=1)",
    "default(none, true)", "default('x', true)", "items2dict(key_name='a', value_name='b')",
    "dict2items(key_name='k')", "to_label", "to_dns_label(max=5)", "to_kubernetes_label",
    "to_label(sep='.')", "rekey_on_member('a')", "random(seed=1)", "shuffle(seed=1)",
    "min(attribute='a')", "max(case_sensitive=true)", "batch(2, 'x') | list",
    "slice(2, 'x') | list", "bool | string", "ternary('y', 'n', 'z')", "human_readable",
    "human_to_bytes", "comment", "xmlattr", "wordwrap(3)", "center(7)", "indent(2, true)",
    "truncate(3, true, '!', 0)", "replace('a', 'x', 1)", "round(1, 'floor')",
    "subelements('a')", "extract({'a': 1})", "zip_longest([1]) | list",
    "product([1]) | list", "permutations | list", "combinations(1) | list",
    "symmetric_difference([1])", "attr('a')", "tojson(indent=1)", "striptags",
    "filesizeformat", "format(1)", "pprint", "regex_escape('posix_basic')",
    "b64decode(encoding='latin-1')", "hash('sha256')", "log(2)", "pow(2)", "root",
    "mandatory('m')", "from_yaml_all | list", "selectattr('a', 'defined') | list",
    "map('default', 1) | list", "select('string') | list", "reject('none') | list",
]
TESTS = ["defined", "none", "string", "number", "integer", "float", "mapping", "sequence",
         "iterable", "boolean", "true", "false", "truthy", "falsy", "odd", "even",
         "lower", "upper", "contains(1)", "in([1, 'a'])", "eq(1)", "match('a')",
         "search('a')", "subset([1, 'a'])", "superset([])", "divisibleby(2)", "abs",
         "is_abs", "uri", "url", "version('1.0', '>')"]


def jinja(value: Any) -> str:
    """``value`` written as a Jinja2 literal."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(jinja(v) for v in value) + "]"
    return "{" + ", ".join(f"{jinja(k)}: {jinja(v)}" for k, v in value.items()) + "}"


@st.composite
def templates(draw: Any) -> str:
    value = jinja(draw(VALUES))
    if draw(st.booleans()):
        test = draw(st.sampled_from(TESTS))
        return f"{{{{ {value} is {'not ' if draw(st.booleans()) else ''}{test} }}}}"
    chain = draw(st.lists(st.sampled_from(FILTERS + FILTERS_WITH_ARGUMENTS), min_size=1,
                          max_size=2))
    text = "{{ (" + value + ") | " + " | ".join(chain) + " }}"
    return "x " + text if draw(st.booleans()) else text  # (a whole value, or in text)


def functions() -> st.SearchStrategy[dict[str, Any]]:
    texts = st.lists(st.sampled_from(["a", "b c", "-", "1", ""]), max_size=3)
    return st.one_of(
        st.builds(lambda c, t, e: {"eval": {"if": c, "then": t, "else": e}}, VALUES, VALUES,
                  VALUES),
        st.builds(lambda v: {"eval": {"and": v}}, st.lists(SCALARS, max_size=3)),
        st.builds(lambda v: {"eval": {"or": v}}, st.lists(SCALARS, max_size=3)),
        st.builds(lambda v: {"eval": {"not": v}}, VALUES),
        st.builds(lambda a, b: {"eval": {"eq": [a, b]}}, VALUES, VALUES),
        st.builds(lambda v, s: {"eval": {"concat": v, "sep": s}}, texts,
                  st.sampled_from(["", ",", " - "])),
        st.builds(lambda v: {"concat": v}, texts),
        st.builds(lambda v: {"eval": {"q": v}}, VALUES),
        st.builds(lambda v: {"eval": {"to_label": v}}, texts),
        st.builds(lambda v: {"eval": {"to_dns_label": v}}, texts),
        st.builds(lambda v: {"eval": {"to_kubernetes_label": v}}, texts),
        st.builds(lambda v: {"eval": {"urljoin": v}}, texts),
        st.builds(lambda t: {"eval": {"template": t}}, templates()),
        st.builds(lambda v: {"eval": {"validate": [v, {"type": "string"}]}}, VALUES),
        st.builds(lambda q, v, each: {"eval": q, "vars": {"x": v}, **each},
                  st.sampled_from(VARIABLE_QUERIES), VALUES,
                  st.one_of(st.just({}), st.builds(lambda k, e: {k: e},
                                                   st.sampled_from(["foreach", "select"]),
                                                   st.sampled_from(FOREACH)))),
    )


#: queries from a variable, and what foreach/select do with their results (not templates
#: of a whole item: Unfurl writes its own Python objects' text there)
VARIABLE_QUERIES = ["$x", "$x::*", "$x::a", "$x::0", "$x::-1", "$x?", "$x[a]", "$x::a::0",
                    "$x::*::*", "$x[0]", "$x[!a]", "$x::a=1", "$x[a=1]"]
FOREACH: list[Any] = ["$item", "$key", "$index", {"key": "$key", "value": "$item"},
                      {"value": {"eval": "$item"}}, {"a": "$item"}, "$item::a", "$item::*",
                      "$item::0", "$item[a]", "$true", "$break", "$continue", "",
                      {"key": "$item"}]


#: query keys both define, less the listed deliberate differences (`.names`, the root's
#: `.requirements`, later versions' `.owner`/`.super`) and the ensemble's own paths
#: (`.base_dir`, `.last_config_change`...: each run's folder and change ids)
KEYS = [".name", ".type", ".parents", ".ancestors", ".instances", ".descendants",
        ".targets", ".sources", ".hosted_on", ".configured_by", ".capabilities",
        ".relationships", ".source", ".target", ".capability", ".root", ".parent", ".apex",
        ".status", ".local_status", ".state", ".priority", ".required", ".readonly",
        ".present", ".operational", ".active", ".missing", ".tosca_name", ".tosca_id",
        ".key", ".nested_name", ".nested_key", ".dependencies", ".customized", ".protected",
        ".manual_override_status", ".imported", "..", "."]
INSTANCES = ["volume", "server", "app", "db", "dbms"]
ATTRIBUTES = ["name", "size", "location", "port", "nosuch", "0", "-1", "*"]


@st.composite
def queries(draw: Any) -> dict[str, Any]:
    start = draw(st.sampled_from(["::root", "::*", ".", "", "0",
                                  *(f"::{n}" for n in INSTANCES)]))
    segment = st.one_of(
        st.sampled_from(KEYS), st.sampled_from(ATTRIBUTES),
        st.builds(lambda k: f"[{k}]", st.sampled_from([".name", "name", "size", ".present"])),
        st.builds(lambda k, v: f"[{k}={v}]", st.sampled_from([".name", ".type", "name"]),
                  st.sampled_from([*INSTANCES, "tosca.nodes.Compute", "db1"])))
    parts = draw(st.lists(segment, min_size=1, max_size=3))
    if not start and parts[0] in ("0", "-1", "*"):
        parts[0] = "name"  # (a relative query starting at an index: Unfurl's IndexError)
    text = "::".join([start, *parts]) if start else "::".join(parts)
    at = draw(st.sampled_from([None, *INSTANCES]))
    return {"q": text, **({"at": at} if at else {})}


#: relationship contexts of the names-probes ensemble: SELF the relationship, SOURCE and
#: TARGET its ends, HOST its target's host (probe.py's task_vars); not `name`, read here from an
#: instance without a value of that name (a deliberate difference)
RELATIONSHIPS = ["server~storage_attachment", "app~host", "db~host", "dbms~host"]
VIEWS = ["SELF", "SOURCE", "TARGET", "HOST"]
VIEW_KEYS = ["size", "location", "port", "nosuch", "public_address", "volume_id"]
RELATIVE = [".name", ".type", ".source::.name", ".target::.name", ".target::size",
            ".source::name", "location", ".capability::.name", ".::location", ".parents",
            ".source::.parents::.name", ".target::.sources::.name", "..::.name",
            ".source::.targets::.name", "::volume::size", ".source::local_storage::size"]


@st.composite
def relationship_probes(draw: Any) -> dict[str, Any]:
    at = draw(st.sampled_from(RELATIONSHIPS))
    view = draw(st.sampled_from(VIEWS))
    value = draw(st.one_of(
        st.builds(lambda k: f"{{{{ {view}.{k} }}}}", st.sampled_from(VIEW_KEYS)),
        st.builds(lambda k: f"{{{{ {view}.{k} | default('d') }}}}", st.sampled_from(VIEW_KEYS)),
        st.just(f"{{{{ {view} | list | sort }}}}"),
        st.just(f"{{% if {view} %}}t{{% else %}}f{{% endif %}}"),
        st.just(f"{{{{ {view} is defined }}}}"),
        st.builds(lambda q: {"eval": q}, st.sampled_from(RELATIVE)),
        st.builds(lambda q: f"{{{{ '{q}' | eval }}}}", st.sampled_from(RELATIVE)),
    ))
    return {"at": at, "v": value}


class Oracle:
    """Unfurl 1.2.0 evaluating probes, one process for the module."""

    def __init__(self, case: str = CASE) -> None:
        script = CASES / "oracle.py"
        self.process = subprocess.Popen(
            [str(UNFURL.parent / "python"), str(script), case], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PROBE_SECRET": "s3cr3t-value", "PROBE_PLAIN": "plain-value"})
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def evaluate(self, probe: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(probe) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _both(tmp_path_factory: pytest.TempPathFactory, case: str
          ) -> Iterator[tuple[Oracle, Probes]]:
    folder = tmp_path_factory.mktemp("ours") / "project"
    folder.mkdir()
    ours = Probes(copy_case(case, folder))
    oracle = Oracle(case)
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        yield oracle, ours
    finally:
        os.chdir(cwd)
        oracle.close()


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Oracle, Probes]]:
    yield from _both(tmp_path_factory, CASE)


@pytest.fixture(scope="module")
def grammar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Oracle, Probes]]:
    yield from _both(tmp_path_factory, query_grammar.CASE)


def _same(both: tuple[Oracle, Probes], probe: dict[str, Any]) -> None:
    oracle, ours = both
    theirs = {k: v for k, v in oracle.evaluate(probe).items() if k in ("value", "one", "list")}
    here = ours.evaluate(probe)
    assert comparable(here) == comparable(theirs), (probe, theirs, here)


@settings(max_examples=examples(400))
@given(text=templates())
def test_templates_render_as_in_unfurl(both: tuple[Oracle, Probes], text: str) -> None:
    _same(both, {"at": "app", "v": text})


@settings(max_examples=examples(300))
@given(value=functions())
def test_eval_functions_give_unfurls_values(both: tuple[Oracle, Probes],
                                            value: dict[str, Any]) -> None:
    _same(both, {"at": "app", "v": value})


@settings(max_examples=examples(400))
@given(probe=queries())
def test_queries_give_unfurls_results(both: tuple[Oracle, Probes],
                                      probe: dict[str, Any]) -> None:
    _same(both, probe)


@settings(max_examples=examples(200))
@given(probe=relationship_probes())
def test_relationship_contexts_give_unfurls_values(both: tuple[Oracle, Probes],
                                                   probe: dict[str, Any]) -> None:
    _same(both, probe)


@settings(max_examples=examples(400))
@given(probe=query_grammar.query_probes())
def test_generated_queries_give_unfurls_results(grammar: tuple[Oracle, Probes],
                                                probe: dict[str, Any]) -> None:
    """The whole grammar (nested and consecutive predicates, tests against text and
    variables, `?`, `$var` keys, every start) over the query-grammar ensemble."""
    _same(grammar, probe)


@settings(max_examples=examples(300))
@given(probe=query_grammar.value_probes())
def test_generated_expressions_give_unfurls_values(grammar: tuple[Oracle, Probes],
                                                   probe: dict[str, Any]) -> None:
    """Queries in each form an input holds them: eval, ref, foreach/select, the eval
    filter, vars, strict, the foreach function."""
    _same(grammar, probe)
