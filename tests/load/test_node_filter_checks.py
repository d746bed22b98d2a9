"""A ``node_filter`` Unfurl 1.2.0 refuses when it loads the service template is refused at
validate, in its words, where load/node_filters.py used to skip a malformed condition or
let a malformed capability entry match nothing; ``match`` and ``requirements`` (its
solver's keys, not built here) are refused by name. Each probe was run with Unfurl 1.2.0
(``unfurl --home '' validate``, ninth sitting): the ``refused`` column is its answer, and
``test_unfurl_still_answers_so`` re-asks it when Unfurl 1.2.0 is installed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_in_process, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse


def ensemble(node_filter: str | None, occurrences: str = "[1, 1]", on_type: str = "") -> str:
    """``app`` requires a DBMS; ``node_filter`` is its requirement's, ``on_type`` its type's."""
    own = f"\n                node_filter: {node_filter}" if node_filter else ""
    typed = f", node_filter: {on_type}" if on_type else ""
    return f"""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      App:
        derived_from: tosca.nodes.Root
        requirements:
          - db: {{node: tosca.nodes.DBMS, occurrences: {occurrences}{typed}}}
    topology_template:
      node_templates:
        mydb:
          type: tosca.nodes.DBMS
          properties: {{port: 3306}}
        app:
          type: App
          requirements:
            - db:
                node: tosca.nodes.DBMS{own}
"""


#: (the template's filter, its type's filter, occurrences, Unfurl 1.2.0's words or None)
PROBES = [
    ("{properties: [{port: 3306}]}", "", "[1, 1]", None),
    ("{properties: [{port: {in_range: [1, 9000]}}]}", "", "[1, 1]", None),
    ("{properties: [{port: {eval: '::mydb::port'}}]}", "", "[1, 1]", None),
    ("{propertiez: [{port: 3306}]}", "", "[0, 1]", None),  # an unknown key: Unfurl ignores it
    (None, "{properties: [{port: 3306, x: 1}]}", "[1, 1]", None),  # a type's: not shaped
    ("{properties: [port]}", "", "[1, 1]",
     'filter in nodefilter on template "app" must be of type "dict"'),
    ("{properties: [{port: 3306, root_password: x}]}", "", "[1, 1]",
     'Invalid nodefilter on template "app": only one property allowed per filter condition'),
    ("{properties: [{}]}", "", "[1, 1]",
     'Invalid nodefilter on template "app": only one property allowed per filter condition'),
    ("{properties: {port: 3306}}", "", "[1, 1]",
     '"properties" of nodefilter on template "app" must be of type "list"'),
    ("{capabilities: {host: {properties: []}}}", "", "[1, 1]",
     '"capabilities" of nodefilter in template "app" must be of type "list"'),
    ("{capabilities: [host]}", "", "[1, 1]",
     'capabilities list item on nodefilter in template "app" must be of type "dict"'),
    ("{capabilities: [{host: {properties: []}, feature: {properties: []}}]}", "", "[1, 1]",
     'Invalid nodefilter on template "app": only one capability name per list item'),
    ("{capabilities: [{host: [x]}]}", "", "[1, 1]",
     'capability "host" on nodefilter on template "app" must be of type "dict"'),
    ("{capabilities: [{host: {properties: {num_cpus: 1}}}]}", "", "[1, 1]",
     '"properties" of capability "host" on nodefilter on template "app" must be of type '
     '"list"'),
    ("{properties: [{port: {equalz: 3306}}]}", "", "[0, 1]", 'Invalid property "equalz"'),
    ("{capabilities: [{host: {properties: [{num_cpus: {equalz: 1}}]}}]}", "", "[1, 1]",
     'Invalid property "equalz"'),
    ("{properties: [{port: {greater_than: 1, less_than: 5000}}]}", "", "[0, 1]",
     "Invalid constraint: {'greater_than': 1, 'less_than': 5000} (must be a map with one "
     "key)"),
    ("{properties: [{and: [{port: {equal: 3306}}]}]}", "", "[1, 1]",
     "'str' object has no attribute 'items'"),
    (None, "{properties: [{port: {equalz: 3306}}]}", "[1, 1]", 'Invalid property "equalz"'),
    (None, "{properties: [port]}", "[0, 1]", None),  # Unfurl fails with no words: see below
]
IDS = [f"probe{i}" for i in range(len(PROBES))]


@pytest.mark.parametrize(("own", "on_type", "occurrences", "refused"), PROBES, ids=IDS)
def test_refused_where_unfurl_refuses_it(own: str | None, on_type: str, occurrences: str,
                                         refused: str | None) -> None:
    text = ensemble(own, occurrences, on_type)
    found = [p.message for p in semantic_problems(parse(text, "e.yaml"), "e.yaml")]
    if refused is None and on_type != "{properties: [port]}":
        assert found == []
    elif refused is None:  # Unfurl's solver fails on an assertion: refused, in our words
        assert found == ['a node_filter condition must be a one-key mapping (requirement '
                         '"db" of node template "app")']
    else:
        assert len(found) == 1 and refused in found[0], found


def test_match_and_requirements_are_refused_by_name(tmp_path: Path) -> None:
    text = ensemble("{match: {get_nodes_of_type: tosca.nodes.DBMS}}")
    (tmp_path / "ensemble.yaml").write_text(text)
    proc = run_in_process(tmp_path, "validate", "ensemble.yaml")
    assert proc.returncode == 1
    output = proc.stdout + proc.stderr
    line = text.splitlines().index(
        "                node_filter: {match: {get_nodes_of_type: tosca.nodes.DBMS}}") + 1
    assert f"ensemble.yaml:{line}:" in output
    assert "node_filter `match` (Unfurl's solver) is not supported" in output
    assert "choose the target with `node: TEMPLATE`" in output  # what to do
    found = semantic_problems(parse(ensemble("{requirements: [{host: {node: x}}]}"), "e.yaml"),
                              "e.yaml")
    assert [p.message for p in found] == [
        "node_filter `requirements` (Unfurl's solver) is not supported (requirement \"db\" "
        "of node template \"app\")"]


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("own", "on_type", "occurrences", "refused"), PROBES, ids=IDS)
def test_unfurl_still_answers_so(tmp_path: Path, own: str | None, on_type: str,
                                 occurrences: str, refused: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(own, occurrences, on_type))
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    failed = refused is not None or on_type == "{properties: [port]}"
    assert proc.returncode == (1 if failed else 0), output
    if refused:
        assert refused in output, output
