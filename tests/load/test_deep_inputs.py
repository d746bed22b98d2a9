"""Long chains in an ensemble (hosts, a `HOST` search through requirements) end as
`validate`'s answer, never as a RecursionError traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml
from unfurl_lite.expressions.query import MAX_QUERY_BRACKETS
from unfurl_lite.load.imports import MAX_IMPORT_DEPTH
from unfurl_lite.load.merge import MAX_INCLUDE_DEPTH
from unfurl_lite.load.type_checks import MAX_HOST_CHAIN

UNFURL_WROTE = Path(__file__).parent.parent / "data" / "unfurl120" / "48-host-chain-137"

_OPERATIONS = "  interfaces:\n    Standard:\n      operations: {create: 'true', delete: 'true'}\n"


def _chain(count: int, requirement: str = "- host: t{next}", first: str = _OPERATIONS) -> str:
    """``count`` templates, each naming the next in ``requirement``; ``first`` ends the
    first template's body instead of its operations."""
    return "".join(
        f"t{i}:\n  type: tosca.nodes.Root\n"
        + ("  requirements:\n    " + requirement.replace("{next}", str(i + 1)) + "\n"
           if i + 1 < count else "")
        + (first if i == 0 else _OPERATIONS)
        for i in range(count))


@pytest.mark.parametrize("requirement", [
    "- host: t{next}",
    "- runs_on: {node: t{next}, relationship: tosca.relationships.HostedOn}",
])
def test_a_chain_of_too_many_hosts_is_refused_at_its_innermost_template(
        project: Project, invoke: Invoke, requirement: str) -> None:
    """The status nests each instance under its host's, two levels a host: past 140 hosts
    (Unfurl 1.2.0's own deploy fails at about 150 with "maximum recursion depth exceeded",
    tests/data/unfurl120/48-host-chain-137) the chain is refused where it starts."""
    project.write(ensemble_yaml(_chain(MAX_HOST_CHAIN + 2, requirement)))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert (f"ensemble.yaml:10:15: a chain of {MAX_HOST_CHAIN + 1} hosts above 't0' "
            f"(t0 -> t1 -> t2 -> ...) is longer than {MAX_HOST_CHAIN}") in output
    assert output.count("a chain of") == 1  # once, at the innermost template
    assert "Traceback" not in result.output
    project.write(ensemble_yaml(_chain(MAX_HOST_CHAIN + 1, requirement)))
    assert invoke("validate").exit_code == 0


def test_an_ensemble_unfurl_wrote_with_a_chain_of_137_hosts_is_read(
        project: Project, invoke: Invoke) -> None:
    """Unfurl 1.2.0 deployed it (its status 277 levels deep) though it cannot read it back
    itself: here it loads, and everything it deployed is already ok (it used to be refused
    as "nested more than 100 levels deep")."""
    for name in ("ensemble.yaml", "jobs.tsv"):
        project.write(gzip.decompress((UNFURL_WROTE / f"{name}.gz").read_bytes()).decode(),
                      name=name)
    result = invoke("plan")
    assert result.exit_code == 0, result.output
    assert "nothing to do" in result.output and result.output.count("already ok") == 137
    assert "valid (137 templates, 137 recorded instances)" in invoke("validate").output


@pytest.mark.slow
def test_the_longest_chain_of_hosts_is_deployed_read_back_and_undeployed(
        project: Project, invoke: Invoke) -> None:
    project.write(ensemble_yaml(_chain(MAX_HOST_CHAIN + 1)))
    for command in (("deploy", "--approve"), ("check",), ("undeploy", "--approve"),
                    ("validate",)):
        result = invoke(*command)
        assert result.exit_code == 0, (command, result.output)


@pytest.mark.slow
def test_a_host_search_through_2000_requirements_is_judged(
        project: Project, invoke: Invoke) -> None:
    """tosca-parser follows each template's first requirement to find HOST; through 2,000
    templates the search recursed once a template (a RecursionError traceback)."""
    reads = ("  interfaces:\n    Standard:\n      operations:\n        configure:\n"
             "          implementation: {className: Shell}\n"
             "          inputs: {command: 'true', x: {get_attribute: [HOST, nope]}}\n")
    project.write(ensemble_yaml(_chain(2000, "- dependency: t{next}", first=reads)))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert ('"get_attribute: [ HOST, ... ]" was used in node template "t0"'
            in " ".join(result.output.split()))


def _query_node(predicates: int) -> str:
    query = "::a" + "[.name]" * predicates
    return ("a:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n      operations:\n"
            "        create:\n          implementation: {className: Shell}\n"
            f"          inputs: {{command: 'true', x: {{eval: '{query}'}}}}\n")


def test_a_query_of_too_many_predicates_is_refused_and_the_most_are_deployed(
        project: Project, invoke: Invoke) -> None:
    """Each predicate after a step's first parses one level deeper: 2,000 of them printed a
    RecursionError traceback at `validate`; 500 passed it and aborted the job."""
    project.write(ensemble_yaml(_query_node(MAX_QUERY_BRACKETS + 1)))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert (f"more than {MAX_QUERY_BRACKETS} predicates ('[...]') in one query (at "
            "spec.service_template.topology_template.node_templates.a.interfaces.Standard."
            "operations.create.inputs.x.eval)") in " ".join(result.output.split())
    project.write(ensemble_yaml(_query_node(MAX_QUERY_BRACKETS)))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output


def _include_chain(project: Project, files: int) -> None:
    """The ensemble includes f1.yaml, which includes f2.yaml, ... up to ``files``."""
    for i in range(1, files + 1):
        (project.root / f"f{i}.yaml").write_text(
            f"T{i}:\n  derived_from: tosca.nodes.Root\n"
            + (f"+include: f{i + 1}.yaml\n" if i < files else ""))
    project.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
                  "    node_types:\n      +include: f1.yaml\n    topology_template:\n"
                  "      node_templates:\n        a: {type: T1}\n")


def test_a_chain_of_too_many_includes_is_refused_where_it_goes_too_far(
        project: Project, invoke: Invoke) -> None:
    """Each include is expanded inside the one including it: a chain of 300 files printed
    a RecursionError traceback from every command."""
    _include_chain(project, MAX_INCLUDE_DEPTH + 1)
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert (f"f{MAX_INCLUDE_DEPTH}.yaml:3:1: including 'f{MAX_INCLUDE_DEPTH + 1}.yaml' here "
            f"makes a chain of more than {MAX_INCLUDE_DEPTH} includes, each file included by "
            f"the one before (ensemble.yaml -> f1.yaml -> ... -> f{MAX_INCLUDE_DEPTH}.yaml -> "
            f"f{MAX_INCLUDE_DEPTH + 1}.yaml)") in " ".join(result.output.split())
    _include_chain(project, MAX_INCLUDE_DEPTH)
    result = invoke("validate")
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_a_chain_of_too_many_imports_is_refused_where_it_goes_too_far(
        project: Project, invoke: Invoke) -> None:
    """Each import is read inside the one importing it: a chain of 1,200 files hit Python's
    recursion limit, reported as some file "nested more than 100 levels deep"."""
    head = "tosca_definitions_version: tosca_simple_unfurl_1_0_0\n"
    for i in range(1, MAX_IMPORT_DEPTH + 2):
        (project.root / f"f{i}.yaml").write_text(
            head + (f"imports:\n  - file: f{i + 1}.yaml\n" if i <= MAX_IMPORT_DEPTH else "")
            + f"node_types:\n  T{i}:\n    derived_from: tosca.nodes.Root\n")
    project.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
                  "    imports:\n      - file: f1.yaml\n    topology_template:\n"
                  "      node_templates:\n        a: {type: T1}\n")
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    last = MAX_IMPORT_DEPTH
    assert (f"f{last}.yaml:3:5: importing 'f{last + 1}.yaml' here makes a chain of more than "
            f"{last} imports, each file imported by the one before (ensemble.yaml -> f1.yaml -> "
            f"... -> f{last}.yaml -> f{last + 1}.yaml)") in " ".join(result.output.split())
    (project.root / f"f{last}.yaml").write_text(
        head + f"node_types:\n  T{last}:\n    derived_from: tosca.nodes.Root\n")
    result = invoke("validate")
    assert result.exit_code == 0, result.output
