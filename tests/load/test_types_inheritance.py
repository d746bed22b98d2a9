"""``derived_from`` as a list (Unfurl's multiple inheritance), against what Unfurl 1.2.0 did
(tests/data/unfurl120/15-imports-types/multi-inherit*)."""

from __future__ import annotations

import re
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import InvokeIn, Project, safe_load
from tests.load.test_imports import CAPTURED, HEAD, case
from unfurl_lite.load import yamlio
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model.lineage import ancestry


def unfurl_stdout(name: str) -> list[str]:
    console = (CAPTURED / name / "deploy" / "console.txt").read_text()
    return re.findall(r"'stdout': '([^']*)\\n'", console)


def test_the_first_parent_wins_and_inputs_merge_as_in_unfurl(project: Project,
                                                            invoke_in: InvokeIn) -> None:
    root = case(project, "multi-inherit-inputs")
    file = CAPTURED / "multi-inherit-inputs" / "deploy" / "ensemble.after.yaml"
    outputs = yamlio.to_plain(yamlio.parse(file.read_text(), str(file)))["status"]["outputs"]
    template = load_ensemble(root).topology.templates["a"]
    assert {k: template.properties[k] for k in outputs} == outputs  # shared: from-left
    assert template.is_a("Left") and template.is_a("Right")
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    (job,) = (root / "jobs").glob("job*.yaml")
    ran = [c["result"]["stdout"].rstrip("\n")
           for c in safe_load(job.read_text())["changes"] if c.get("target") == "::a"]
    # create-left; configure-left left-x right-z (Right's input z merged); start-right
    assert ran == unfurl_stdout("multi-inherit-inputs")[:3]


def test_ancestors_are_depth_first_in_listed_order_each_once() -> None:
    parents = {"Both": ("Left", "Right"), "Left": ("Base",), "Right": ("Base",), "Base": ()}
    assert ancestry("Both", lambda t: parents.get(t, ())) == ["Both", "Left", "Base", "Right"]


def _problems(project: Project, invoke_in: InvokeIn, types: str) -> str:
    project.write(HEAD + "spec:\n  service_template:\n    node_types:\n"
                  + textwrap.indent(textwrap.dedent(types), "      ")
                  + "    topology_template:\n      node_templates:\n        a: {type: A}\n")
    result = invoke_in(project.root, "validate")
    assert result.exit_code == 1
    return " ".join(result.output.split())


@pytest.mark.parametrize(("types", "message", "where"), [
    ("A: {derived_from: [tosca.nodes.Root, Nope]}\n", "node type 'A' has unknown type 'Nope'",
     "node_types.A.derived_from[1]"),
    ("A: {derived_from: [tosca.nodes.Root, B]}\nB: {derived_from: [A]}\n",
     "derived_from cycle: A -> B -> A", "node_types.A.derived_from"),
])
def test_a_bad_parent_in_a_list_is_located(project: Project, invoke_in: InvokeIn,
                                           types: str, message: str, where: str) -> None:
    output = _problems(project, invoke_in, types)
    assert message in output and where in output, output


def test_an_interface_declared_by_the_second_parent_is_usable(project: Project,
                                                             invoke_in: InvokeIn) -> None:
    project.write(HEAD + textwrap.dedent("""\
        spec:
          service_template:
            node_types:
              Left: {derived_from: tosca.nodes.Root}
              Right:
                derived_from: tosca.nodes.Root
                interfaces:
                  Lifecycle: {type: cloudify.interfaces.lifecycle}
              Both: {derived_from: [Left, Right]}
            topology_template:
              node_templates:
                a:
                  type: Both
                  interfaces:
                    Lifecycle:
                      create: echo made
        """))
    result = invoke_in(project.root, "validate")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", ["template-op-inputs-only", "derived-op-inputs-only"])
def test_an_operation_redeclared_without_implementation_inherits_none(
    project: Project, invoke_in: InvokeIn, name: str
) -> None:
    """Unfurl 1.2.0: "no artifact or className set on operation" and the operation does not
    run; a template's ``interfaces: defaults`` implementation fills it instead."""
    root = case(project, name)
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    expected = CAPTURED / name / "deploy"
    unfurl_ran = [line.split("\t")[3:5] for line in
                  (expected / "jobs.tsv").read_text().splitlines()[1:]] if (
        expected / "jobs.tsv").exists() else []
    ours = [line.split("\t")[3:5] for line in project.jobs_tsv()[1:]]
    assert ours == unfurl_ran  # [] and [[target=::withdefaults, operation=start]]
    if unfurl_ran:
        (job,) = (root / "jobs").glob("job*.yaml")
        stdout = [c["result"]["stdout"] for c in safe_load(job.read_text())["changes"]
                  if "result" in c]
        assert stdout == ["from-defaults 2\n"] and "from-defaults 2" in (
            expected / "console.txt").read_text()


def test_a_relationship_type_inherits_its_ancestors_operations(project: Project,
                                                              invoke_in: InvokeIn) -> None:
    """Unfurl 1.2.0 planned BaseLink's pre_configure_source for a DerivedLink requirement
    (its relationship operations then blocked, a difference docs/differences-from-unfurl.md
    lists: here they run after the source)."""
    console = (CAPTURED / "relationship-inherit" / "deploy" / "console.txt").read_text()
    assert "- operation pre_configure_source (reason: add)" in console
    root = case(project, "relationship-inherit")
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    (job,) = (root / "jobs").glob("job*.yaml")
    stdout = {c["result"]["stdout"] for c in safe_load(job.read_text())["changes"]
              if "result" in c}
    assert {"base-pre-configure-source\n", "derived-add-target\n"} <= stdout
    assert "base-add-target\n" not in stdout


def test_a_cloudify_operation_overridden_by_its_inputs_keeps_the_types_implementation(
    project: Project, invoke_in: InvokeIn
) -> None:
    project.write(HEAD + textwrap.dedent("""\
        spec:
          service_template:
            node_types:
              App:
                derived_from: cloudify.nodes.Root
                interfaces:
                  cloudify.interfaces.lifecycle:
                    create: echo create {{ inputs.w | default('no-w') }}
            topology_template:
              node_templates:
                app:
                  type: App
                  interfaces:
                    cloudify.interfaces.lifecycle:
                      create:
                        inputs: {w: given}
        """))
    result = invoke_in(project.root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    (job,) = (project.root / "jobs").glob("job*.yaml")
    stdout = [c["result"]["stdout"] for c in safe_load(job.read_text())["changes"]
              if "result" in c]
    assert stdout == ["create given\n"]


def test_what_a_type_gives_is_worked_out_once_however_many_templates_have_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear in N: a type's inheritance (lineage, merged interfaces, definitions) is
    computed once per type, not once per template; each template still gets its own
    copies (one template's properties changed leave the others' alone)."""
    from pathlib import Path

    from unfurl_lite.load import builder

    calls: list[str] = []
    inherit = builder._inherit
    monkeypatch.setattr(builder, "_inherit",
                        lambda name, types: calls.append(name) or inherit(name, types))
    types = "".join(f"      T{k}:\n        derived_from: tosca.nodes.Root\n"
                    f"        properties:\n          p: {{type: string, default: d{k}}}\n"
                    for k in range(3))
    templates = "".join(f"        n{i}:\n          type: T{i % 3}\n" for i in range(300))
    text = (HEAD + "spec:\n  service_template:\n    node_types:\n" + types
            + "    topology_template:\n      node_templates:\n" + templates)
    data = yamlio.parse_plain(text)
    built = builder.build(Path("ensemble.yaml"), text, data).topology.templates
    assert sorted(calls) == ["T0", "T1", "T2"]
    assert built["n0"].properties == {"p": "d0"} and built["n4"].properties == {"p": "d1"}
    built["n0"].properties["p"] = "changed"
    assert built["n3"].properties == {"p": "d0"}


@pytest.mark.parametrize(("declared", "inherits"), [
    ("configure: echo from-type", False),
    ("configure: {implementation: echo from-type}", True),
    ("configure: {implementation: Template, inputs: {run: 1}}", True),
    ("configure: {implementation: {className: Shell}, inputs: {command: echo x}}", True),
])
def test_an_override_inherits_a_mapping_operations_implementation_not_a_commands(
        project: Project, declared: str, inherits: bool) -> None:
    """toscaparser merges a template's (or a derived type's) redeclared operation over the
    type's only when the type declares it as a mapping: an override of inputs alone then
    runs the type's implementation (unfurl-cases 327-330, ``tweaked``); over a bare command
    it inherits none (tests/data/unfurl120/15-imports-types/template-op-inputs-only)."""
    project.write(f"""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            node_types:
              T:
                derived_from: tosca.nodes.Root
                interfaces:
                  Standard:
                    {declared}
              D:
                derived_from: T
                interfaces:
                  Standard:
                    configure: {{inputs: {{extra: 2}}}}
            topology_template:
              node_templates:
                a:
                  type: T
                  interfaces:
                    Standard:
                      configure: {{inputs: {{extra: 1}}}}
                b: {{type: D}}
        """)
    topology = load_ensemble(project.root).topology
    for name, extra in (("a", 1), ("b", 2)):
        op = topology.templates[name].interfaces["Standard"]["configure"]
        assert (op.implementation is not None) is inherits
        assert op.inputs["extra"] == extra


def _ancestry_by_recursion(name: str, parents: dict[str, tuple[str, ...]]) -> list[str]:
    """ancestry as it was first written (recursive): the reference for its order."""
    chain: list[str] = []

    def visit(current: str) -> None:
        chain.append(current)
        for parent in parents.get(current, ()):
            if parent not in chain:
                visit(parent)

    visit(name)
    return chain


_TYPES = st.sampled_from(["A", "B", "C", "D", "E", "F"])


@given(st.dictionaries(_TYPES, st.lists(_TYPES, max_size=4).map(tuple)), _TYPES)
def test_ancestors_are_those_of_the_recursive_walk(parents: dict[str, tuple[str, ...]],
                                                   start: str) -> None:
    """Multiple parents, shared ancestors, repeats and cycles: the walk with its own stack
    lists the same types in the same order as the recursive one did."""
    assert ancestry(start, lambda t: parents.get(t, ())) == _ancestry_by_recursion(start, parents)


@pytest.mark.slow
def test_a_derived_from_chain_of_2000_types_is_validated_and_planned(
        project: Project, invoke_in: InvokeIn) -> None:
    """Each node type derived from the next, 2,000 of them, the last defining the operation:
    `validate` printed a RecursionError traceback (the walk up the types recursed once a
    type); now the template is valid and plans the inherited operation."""
    count = 2000
    types = "".join(f"T{i}: {{derived_from: T{i + 1}}}\n" for i in range(count - 1))
    types += (f"T{count - 1}:\n  derived_from: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
              "      operations: {create: 'true'}\n")
    project.write(HEAD + "spec:\n  service_template:\n    node_types:\n"
                  + textwrap.indent(types, "      ")
                  + "    topology_template:\n      node_templates:\n        a: {type: T0}\n")
    result = invoke_in(project.root, "validate")
    assert result.exit_code == 0, result.output
    result = invoke_in(project.root, "plan")
    assert result.exit_code == 0, result.output
    assert "Standard.create" in result.output
