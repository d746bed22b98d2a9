"""``get_attribute`` and ``get_property`` naming what a template does not have are refused at
validate where Unfurl 1.2.0 refuses the service template when it loads it (tosca-parser's
function validation), and accepted where it accepts them. Each probe below was run with
Unfurl 1.2.0 (``unfurl --home '' validate``, ninth sitting); its answer is the table's
``refused`` column, and ``test_unfurl_still_answers_so`` re-asks it when Unfurl 1.2.0 is
installed (UNFURL120_VENV). unfurl-cases 183 is one of them in the corpus."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_in_process, unfurl120
from unfurl_lite.load.validate import semantic_problems
from unfurl_lite.load.yamlio import parse

TYPES = """\
    capability_types:
      Cap:
        derived_from: tosca.capabilities.Root
        properties:
          capprop: {type: string, default: cp}
        attributes:
          capattr: {type: string, required: false}
    node_types:
      Base:
        derived_from: tosca.nodes.Root
        attributes:
          inherited: {type: string, required: false}
      Custom:
        derived_from: Base
        properties:
          probe: {type: any, required: false}
          unset: {type: map, required: false}
          withdef: {type: string, default: d}
          setmap: {type: map, required: false}
          alist: {type: list, required: false}
          fromin: {type: map, required: false}
        attributes:
          own: {type: string, required: false}
        capabilities:
          mycap: {type: Cap}
        requirements:
          - host: {node: Host, relationship: tosca.relationships.HostedOn, occurrences: [0, 1]}
      Host:
        derived_from: tosca.nodes.Root
        attributes:
          hattr: {type: string, required: false}
        capabilities:
          host: {type: tosca.capabilities.Compute}
          endpoint: {type: tosca.capabilities.Endpoint}
"""


def ensemble(probe: str, where: str = "property") -> str:
    """The probe as the value of ``plain``'s property, of its operation's input, of an output
    or of its hosting relationship's operation input."""
    value = {"property": f"\n            probe: {probe}", "input": "", "output": "",
             "relationship": ""}[where]
    operation = ("\n          interfaces:\n            Standard:\n              operations:\n"
                 f"                configure:\n                  implementation: echo hi\n"
                 f"                  inputs:\n                    probe: {probe}"
                 if where == "input" else "")
    host = ("            - host: h" if where != "relationship" else
            "            - host:\n                node: h\n                relationship:\n"
            "                  type: tosca.relationships.HostedOn\n"
            "                  interfaces:\n                    Configure:\n"
            "                      operations:\n                        pre_configure_source:\n"
            "                          implementation: echo hi\n"
            f"                          inputs: {{probe: {probe}}}")
    outputs = f"      outputs:\n        out: {{value: {probe}}}\n" if where == "output" else ""
    return (
        "apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
        f"{TYPES}    topology_template:\n      inputs:\n"
        "        m: {type: map, default: {k: v}}\n"
        f"{outputs}      node_templates:\n        h:\n          type: Host\n"
        "        vm:\n          type: tosca.nodes.Compute\n"
        "        plain:\n          type: Custom\n          properties:\n"
        "            setmap: {k: v}\n            alist: [a]\n            fromin: {get_input: m}"
        f"{value}\n          requirements:\n{host}{operation}\n")


#: (probe, where, Unfurl 1.2.0's words when it refuses it, or None: it accepts it)
PROBES = [
    ("{get_attribute: [SELF, own]}", "property", None),
    ("{get_attribute: [SELF, inherited]}", "property", None),  # a parent type's
    ("{get_attribute: [SELF, withdef]}", "property", None),  # a property with a default
    ("{get_attribute: [SELF, setmap]}", "property", None),  # a property it sets
    ("{get_attribute: [SELF, tosca_id]}", "property", None),  # tosca.nodes.Root's
    ("{get_attribute: [vm, private_address]}", "property", None),  # Compute's
    ("{get_attribute: [SELF, mycap, capattr]}", "property", None),  # its capability's
    ("{get_attribute: [h, endpoint, ip_address]}", "property", None),  # Endpoint's
    ("{get_attribute: [HOST, hattr]}", "property", None),
    ("{a: {get_attribute: [SELF, nothing]}}", "property", None),  # nested: not checked
    ("{concat: [{get_attribute: [SELF, nothing]}, x]}", "property", None),
    ("{eval: {get_attribute: [SELF, nothing]}}", "property", None),
    ("{get_property: [SELF, setmap, k]}", "property", None),
    ("{get_property: [SELF, alist, 0]}", "property", None),
    ("{get_property: [SELF, mycap, capprop]}", "property", None),
    ("{get_attribute: [TARGET, hattr]}", "relationship", None),
    ("{get_attribute: [plain, own]}", "output", None),
    ("{get_attribute: [SELF, nothing]}", "property",
     'Attribute "nothing" was not found in node template "plain"'),
    ("{get_attribute: [SELF, unset]}", "property",  # an optional property left unset
     'Attribute "unset" was not found in node template "plain"'),
    ("{get_attribute: [SELF, capattr]}", "property",  # a capability's, without its name
     'Attribute "capattr" was not found in node template "plain"'),
    ("{get_attribute: [SELF, nothing]}", "input",
     'Attribute "nothing" was not found in node template "plain"'),
    ("{get_attribute: [Base, nothing]}", "property",  # a type: its first template
     'Attribute "nothing" was not found in node template "plain"'),
    ("{get_attribute: [vm, nothing]}", "property",
     'Attribute "nothing" was not found in node template "vm"'),
    ("{get_attribute: [nosuch, nothing]}", "property", 'Node template "nosuch" was not found'),
    ("{get_attribute: [SELF, own, 0]}", "property",
     'Illegal arguments for function "get_attribute". Unexpected attribute/index value "0"'),
    ("{get_attribute: [SELF, mycap, nothing]}", "property",
     'Attribute "nothing" was not found in capability "mycap" of node template "plain" '
     'referenced from node template "plain"'),
    ("{get_attribute: [SELF, host, hattr]}", "property",  # the requirement's target
     'Attribute "hattr" was not found in capability "host" of node template "h" '
     'referenced from node template "plain"'),
    ("{get_attribute: [TARGET, hattr]}", "property",
     '"TARGET" keyword can only be used in context to "Relationships" target node'),
    ("{get_attribute: [TARGET, nothing]}", "relationship",
     'Attribute "nothing" was not found in node template "h"'),
    ("{get_attribute: [plain, nothing]}", "output",
     'Attribute "nothing" was not found in node template "plain"'),
    ("{get_attribute: [SELF, own]}", "output", 'Node template "SELF" was not found'),
    ("{get_attribute: [SELF, tosca_id]}", "relationship",  # no template named "host"
     'Node template "SELF" was not found'),
    ("{get_property: [SELF, unset, key]}", "property",
     'Requirement/Capability "unset" referenced from node template "plain" was not found in '
     'node template "plain"'),
    ("{get_property: [SELF, unset, key]}", "input",
     'Requirement/Capability "unset" referenced from node template "plain" was not found in '
     'node template "plain"'),
    ("{get_property: [SELF, setmap, zz]}", "property",
     "Property 'zz' found in capability 'setmap' referenced from node template plain must "
     "have an attribute named zz"),
    ("{get_property: [SELF, fromin, k]}", "property",  # the value is a function, unread
     "Property 'k' found in capability 'fromin' referenced from node template plain must "
     "have an attribute named k"),
    ("{get_property: [SELF, withdef, k]}", "property",
     "Property 'k' found in capability 'withdef' referenced from node template plain must "
     "be a dict"),
    ("{get_property: [SELF, alist, 3]}", "property",
     "Property '3' found in capability 'alist' referenced from node template plain must "
     "have an element with index 3"),
    ("{get_property: [SELF, mycap, zz]}", "property",
     'Property "zz" was not found in capability "mycap" of node template "plain" '
     'referenced from node template "plain"'),
    ("{get_property: [SELF, host, num_cpus]}", "property",  # Compute's, with no value
     'Property "num_cpus" was not found in capability "host" of node template "h" '
     'referenced from node template "plain"'),
]
IDS = [f"{where}-{i}" for i, (_, where, _) in enumerate(PROBES)]


@pytest.mark.parametrize(("probe", "where", "refused"), PROBES, ids=IDS)
def test_refused_where_unfurl_refuses_it_in_its_words(probe: str, where: str,
                                                      refused: str | None) -> None:
    found = [p.message for p in semantic_problems(parse(ensemble(probe, where), "e.yaml"),
                                                  "e.yaml")]
    if refused is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(refused), found


def test_validate_names_the_place_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble("{get_attribute: [SELF, unset]}",
                                                     "input"))
    proc = run_in_process(tmp_path, "validate", "ensemble.yaml")
    assert proc.returncode == 1
    output = proc.stdout + proc.stderr
    line = ensemble("{get_attribute: [SELF, unset]}", "input").splitlines().index(
        "                    probe: {get_attribute: [SELF, unset]}") + 1
    assert f"ensemble.yaml:{line}:" in output
    assert "Standard.operations.configure.inputs.probe" in output
    assert "attributes: {unset: {type: string, required: false}}" in output  # the hint


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("probe", "where", "refused"), PROBES, ids=IDS)
def test_unfurl_still_answers_so(tmp_path: Path, probe: str, where: str,
                                 refused: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(probe, where))
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == (0 if refused is None else 1), output
    if refused:
        assert refused in output.replace("\\'", "'"), output


HOSTS = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      Host:
        derived_from: tosca.nodes.Root
        properties:
          rack: {type: string, required: false}
        attributes:
          hattr: {type: string, required: false}
      Mid:
        derived_from: tosca.nodes.Root
      App:
        derived_from: tosca.nodes.Root
        properties:
          probe: {type: any, required: false}
        requirements:
          - host: {node: Host, occurrences: [0, 1]}
          - dependency: {node: tosca.nodes.Root, occurrences: [0, 1]}
    topology_template:
      node_templates:
        h: {type: Host}
        db: {type: tosca.nodes.Root}
        mid:
          type: Mid
          requirements:
            - host: h
        app:
          type: App
          properties:
            probe: PROBE
"""
HOST_FIRST = "          requirements:\n            - host: h\n"
#: (probe, app's requirements, Unfurl 1.2.0's words or None): tosca-parser follows the first
#: requirement the template writes, then its target's first, to a type that declares it
HOST_PROBES = [
    ("{get_attribute: [HOST, hattr]}", HOST_FIRST, None),
    ("{get_attribute: [HOST, hattr]}", "          requirements:\n            - host: mid\n",
     None),  # through mid's own host
    ("{get_attribute: [HOST, hattr]}", HOST_FIRST + "            - dependency: db\n", None),
    ("{get_attribute: [HOST, hattr]}", "          requirements:\n            - host: {node: "
     "Host}\n", None),  # a type named: its first template
    ("{get_property: [HOST, rack]}", HOST_FIRST, None),  # declared, though unset
    ("{get_attribute: [HOST, hattr]}", "          requirements:\n            - dependency: "
     "db\n            - host: h\n", '"get_attribute: [ HOST, ... ]" was used in node '
     'template "app" but "tosca.relationships.HostedOn" was not found in the relationship '
     'chain'),  # the first requirement leads to db
    ("{get_attribute: [HOST, hattr]}", "", '"get_attribute: [ HOST, ... ]" was used in node '
     'template "app" but "tosca.relationships.HostedOn" was not found'),  # its type's only
    ("{get_property: [HOST, nothing]}", HOST_FIRST,
     "Property 'nothing' not found on host when referenced from node template 'app'"),
    ("{get_attribute: [HOST, feature, nothing]}", HOST_FIRST,
     '"get_attribute: [ HOST, ... ]" was used in node template "app"'),
]
HOST_IDS = [f"host{i}" for i in range(len(HOST_PROBES))]


@pytest.mark.parametrize(("probe", "requirements", "refused"), HOST_PROBES, ids=HOST_IDS)
def test_host_is_searched_as_tosca_parser_searches_it(probe: str, requirements: str,
                                                      refused: str | None) -> None:
    text = HOSTS.replace("PROBE", probe) + requirements
    found = [p.message for p in semantic_problems(parse(text, "e.yaml"), "e.yaml")]
    if refused is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(refused), found


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("probe", "requirements", "refused"), HOST_PROBES, ids=HOST_IDS)
def test_unfurl_still_searches_host_so(tmp_path: Path, probe: str, requirements: str,
                                       refused: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(HOSTS.replace("PROBE", probe) + requirements)
    git(tmp_path, "init", "-q")
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == (0 if refused is None else 1), output
    if refused:
        assert refused in output, output
