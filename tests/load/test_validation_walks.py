"""Validation reads each template's requirements once, however many checks ask for them,
and gives the same answers as reading them anew (issue 29 goal 3: validate at N=10,000)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ENSEMBLE_HEAD, Invoke, Project, ensemble_yaml, shell_node
from unfurl_lite.load import name_checks, type_checks, validate

FILE = "ensemble.yaml"


def document(templates: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "unfurl/v1alpha1", "kind": "Ensemble",
            "spec": {"service_template": {"topology_template": {
                "node_templates": templates}}}}


def layered(count: int) -> dict[str, Any]:
    templates: dict[str, Any] = {"n0": {"type": "tosca.nodes.Root"}}
    for i in range(1, count):
        templates[f"n{i}"] = {
            "type": "tosca.nodes.Root",
            "requirements": [{"dependency": f"n{i - 1}"},
                             {"host": {"node": f"n{i // 2}",
                                       "relationship": {"type": "tosca.relationships.HostedOn"}}}],
            "interfaces": {"Standard": {"operations": {"create": "true"}}},
        }
    return document(templates)


def test_each_templates_requirements_are_read_once_by_all_the_checks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Five checks walk the requirements (targets, cycles, interface owners, relationship
    owners, Cloudify's sides): a template's list is read once per validation."""
    reads: list[int] = []
    named = type_checks._named
    monkeypatch.setattr(type_checks, "_named", lambda body: reads.append(id(body)) or named(body))
    doc = layered(60)
    assert validate.check(doc, FILE) == []
    assert len(reads) == 60 and len(set(reads)) == 60
    assert type_checks._read == {}  # nothing kept once the validation is over


def test_what_the_checks_find_through_the_requirements_is_unchanged() -> None:
    """A requirement naming no template, and a cycle, are still found and located."""
    doc = layered(5)
    templates = doc["spec"]["service_template"]["topology_template"]["node_templates"]
    templates["n0"]["requirements"] = [{"dependency": "n3"}, {"db": "nowhere"}]
    messages = [p.message for p in validate.check(doc, FILE)]
    assert any("names unknown node template 'nowhere'" in m for m in messages)
    assert any(m.startswith("requirement cycle: ") for m in messages)


targets = st.sampled_from(["a", "b", "c", "", "tosca.nodes.Root"])
requirement_values = st.one_of(
    targets, st.none(), st.integers(),
    st.fixed_dictionaries({"node": st.one_of(targets, st.integers(), st.none())}),
    st.dictionaries(st.sampled_from(["relationship", "capability"]), targets, max_size=2),
    st.fixed_dictionaries({"node": targets, "relationship": st.one_of(
        targets, st.none(), st.dictionaries(st.sampled_from(["type", "interfaces"]), targets,
                                            max_size=2))}))
requirement_items = st.one_of(
    st.dictionaries(st.sampled_from(["host", "dependency", "db"]), requirement_values,
                    min_size=1, max_size=2),
    targets, st.none())
bodies = st.one_of(
    st.fixed_dictionaries({"type": st.just("tosca.nodes.Root")},
                          optional={"requirements": st.one_of(
                              st.lists(requirement_items, max_size=4), targets, st.none())}),
    st.none(), targets)


@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), bodies, max_size=4))
def test_read_once_gives_what_reading_anew_gives(templates: dict[str, Any]) -> None:
    """Inside the validation's block, a template's requirements are what a fresh read
    gives; an equal body that is not the document's own (another document's) is read for
    itself, not answered with the document's."""
    doc = document(templates)
    fresh = {name: list(type_checks.requirements_of(body)) for name, body in templates.items()}
    related = {name: [(index, req, body["requirements"][index][req]["relationship"])
                      for index, req, _ in fresh[name]
                      if isinstance(body["requirements"][index][req], dict)
                      and isinstance(body["requirements"][index][req].get("relationship"), dict)]
               for name, body in templates.items()}
    strangers = {name: copy.deepcopy(body) for name, body in templates.items()}
    with type_checks.requirements_read_once(doc):
        for name, body in templates.items():
            assert list(type_checks.requirements_of(body)) == fresh[name]
            assert list(type_checks.requirements_of(strangers[name])) == fresh[name]
            assert list(type_checks.relationships_of(body)) == related[name]
            assert list(type_checks.relationships_of(strangers[name])) == related[name]
            if isinstance(body, dict) and isinstance(body.get("requirements"), list):
                before = list(type_checks.requirements_of(body))
                strangers[name]["requirements"].append({"extra": "a"})
                assert list(type_checks.requirements_of(strangers[name])) == \
                    [*before, (len(body["requirements"]), "extra", "a")]
    assert type_checks._read == {}


def test_artifact_properties_are_judged_only_where_there_are_artifacts() -> None:
    """The artifact check still finds an undeclared property on a node type and on a
    template among many templates without artifacts."""
    doc = layered(30)
    service = doc["spec"]["service_template"]
    service["artifact_types"] = {"my.A": {"derived_from": "tosca.artifacts.Root",
                                          "properties": {"known": {"type": "string"}}}}
    service["node_types"] = {"T": {"derived_from": "tosca.nodes.Root", "artifacts": {
        "t": {"type": "my.A", "file": "x", "properties": {"odd": 1}}}}}
    templates = service["topology_template"]["node_templates"]
    templates["n7"]["artifacts"] = {"x": {"type": "my.A", "file": "x",
                                          "properties": {"known": "k", "other": 2}}}
    found = [(p.path, p.message) for p in validate.check(doc, FILE)
             if "not declared by its type" in p.message]
    assert [path for path, _ in found] == [
        "spec.service_template.node_types.T.artifacts.t.properties.odd",
        "spec.service_template.topology_template.node_templates.n7.artifacts.x.properties.other",
    ]


def test_an_ensemble_without_templates_is_not_scanned_for_names(
        project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a template reads names: an ensemble read from a text with no template marker
    (and no escape that could spell one) has no value to scan, for validate and for the
    job's check before it runs anything."""
    def walked(*args: object, **kwargs: object) -> None:
        raise AssertionError("a value was scanned")

    monkeypatch.setattr(name_checks, "_in_value", walked)
    node = shell_node("a", "echo '{ {not one} }'", "x: '%{y}'")
    project.write(ensemble_yaml(node.replace("  type: tosca.nodes.Root\n",
                                             "  type: tosca.nodes.Root\n  properties:\n"
                                             "    p: {q: [plain]}\n", 1)))
    assert invoke("validate").exit_code == 0
    deployed = invoke("deploy", "--approve")
    assert deployed.exit_code == 0, deployed.output


@pytest.mark.parametrize("spelled", [
    'command: "echo {{ SELF.nope }}"',
    'command: "echo \\x7b\\x7b SELF.nope }}"',  # an escape spells the marker
    'command: "echo {% if SELF.nope %}x{% endif %}"',
])
def test_a_template_reading_a_missing_name_is_still_refused(
        project: Project, invoke: Invoke, spelled: str) -> None:
    project.write(ensemble_yaml(shell_node("a", "true").replace("command: true", spelled)))
    validated = invoke("validate")
    assert validated.exit_code == 1 and "'nope'" in validated.output, validated.output
    refused = invoke("deploy", "--approve")
    assert refused.exit_code == 64 and "nothing was run" in refused.output


def test_a_template_from_an_included_file_is_still_refused(
        project: Project, invoke: Invoke) -> None:
    """The ensemble's own text holds no marker; what it includes does."""
    (project.root / "ops.yaml").write_text(shell_node("a", '"echo {{ SELF.nope }}"'))
    project.write(ENSEMBLE_HEAD + "        +include: ops.yaml\n")
    validated = invoke("validate")
    assert validated.exit_code == 1 and "'nope'" in validated.output, validated.output


def test_the_checks_still_see_every_owner_that_declares_interfaces() -> None:
    """Owners without interfaces are left out of the walk (most requirements have no
    relationship of their own); each kind of owner that has some is still checked: a node
    type, a template, a relationship template's two sides, and an inline relationship's."""
    doc = layered(4)
    service = doc["spec"]["service_template"]
    topology = service["topology_template"]
    service["node_types"] = {"T": {"derived_from": "tosca.nodes.Root", "interfaces": {
        "Standard": {"operations": {"craete": "true"}}}}}
    topology["relationship_templates"] = {"r": {
        "type": "tosca.relationships.ConnectsTo",
        "interfaces": {"Configure": {"operations": {"post_configure_sourse": "true"}}},
        "target_interfaces": {"Standard": {"operations": {"create": "true"}}}}}
    templates = topology["node_templates"]
    templates["n1"]["interfaces"] = {"cloudify.interfaces.cloudify_agent": {"create": "x"}}
    templates["n2"]["requirements"][1]["host"]["relationship"] = {
        "type": "tosca.relationships.HostedOn",
        "interfaces": {"Configure": {"operations": {"add_targte": "true"}}},
        "target_interfaces": {"Install": {"operations": {"check": "true"}}}}
    messages = sorted(p.message for p in validate.check(doc, FILE))
    assert "unknown operation 'craete' on interface 'Standard'" in messages
    assert "unknown operation 'post_configure_sourse' on interface 'Configure'" in messages
    assert "unknown operation 'add_targte' on interface 'Configure'" in messages
    assert any(m.startswith("Cloudify's agent interface 'cloudify.interfaces.cloudify_agent'")
               for m in messages)
    assert messages.count("interface 'Standard' in `target_interfaces` is not supported") == 1
    assert messages.count("interface 'Install' in `target_interfaces` is not supported") == 1


def test_a_long_requirement_chain_written_dependents_first_is_valid() -> None:
    """3,000 templates, each requiring the next: the cycle check walks the chain without
    recursion (it failed with RecursionError, a traceback for `validate` and `plan`)."""
    templates = {f"n{i}": {"type": "tosca.nodes.Root",
                           "requirements": [{"dependency": f"n{i + 1}"}]} for i in range(2999)}
    templates["n2999"] = {"type": "tosca.nodes.Root"}
    assert validate.check(document(templates), FILE) == []
