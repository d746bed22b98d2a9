"""The order Unfurl 1.2.0 plans instances in, which decides each task's changeId:
check, discover and deploy go template by template (its ``order_templates``: the spec's
order, each template after the templates its requirements name, depth first); undeploy
visits from each top-level instance what depends on it first, then itself (its
``select_dependents``). tests/data/unfurl-cases/121-opt-destroyunmanaged and
157-test-delete-dependent-node are the recorded cases."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Project, ensemble_yaml, examples, run_in_process, safe_load
from unfurl_lite.load.builder import build
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model.ensemble import Ensemble
from unfurl_lite.plan.deploy import plan_check
from unfurl_lite.plan.topology import instance_graph, planned_instances, removal_order


def node(name: str, needs: list[tuple[str, str]]) -> str:
    reqs = "".join(f"\n    - {kind}: {target}" for kind, target in needs)
    return (f"{name}:\n  type: tosca.nodes.Root\n"
            + (f"  requirements:{reqs}\n" if reqs else "")
            + "  interfaces:\n    Standard:\n      create: 'true'\n      delete: 'true'\n"
            "    Install:\n      check: {implementation: Template, inputs: {done: {status: ok}}}\n")


@st.composite
def topologies(draw: st.DrawFn) -> list[tuple[str, list[tuple[str, str]]]]:
    """Templates in a random spec order, each requiring (host, dependency) templates of a
    lower random rank: acyclic, but not in the spec's order."""
    count = draw(st.integers(1, 7))
    names = [f"t{i}" for i in range(count)]
    rank = draw(st.permutations(names))
    spec = []
    for name in names:
        below = list(rank[: rank.index(name)])
        host = draw(st.sampled_from([None, *below])) if below else None
        others = draw(st.lists(st.sampled_from(below), unique=True, max_size=2)) if below else []
        needs = ([("host", host)] if host else []) + [
            ("dependency", n) for n in others if n != host]
        spec.append((name, needs))
    return spec


def load(text: str) -> Ensemble:
    folder = Path(tempfile.mkdtemp())
    (folder / "ensemble.yaml").write_text(text)
    return load_ensemble(folder / "ensemble.yaml")


def unfurl_template_order(spec: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    """Unfurl's order_templates and get_ancestor_templates, recursively, as it writes them
    (a template's requirements are a mapping by name there: a name given twice keeps its
    first place and its last target)."""
    needs = dict(spec)
    seen: list[str] = []

    def ancestors(stack: list[str]) -> list[str]:
        found = []
        for target in dict(needs[stack[-1]]).values():
            if target not in stack:
                found += ancestors([*stack, target])
        return [*found, stack[-1]]

    for name, _ in spec:
        for template in ancestors([name]):
            if template not in seen:
                seen.append(template)
    return seen


@settings(max_examples=examples(60))
@given(topologies())
def test_check_plans_templates_in_unfurls_order(spec) -> None:
    ensemble = load(ensemble_yaml("".join(node(n, needs) for n, needs in spec)))
    targets = [t.target for t in plan_check(ensemble).tasks]
    assert targets == unfurl_template_order(spec)


def unfurl_removal_order(top: list[str], dependents: dict[str, list[str]]) -> list[str]:
    """Unfurl's select_dependents from the root, recursively, first visits kept."""
    order: list[str] = []

    def visit(name: str) -> None:
        for dep in dependents[name]:
            visit(dep)
        if name not in order:
            order.append(name)

    for name in top:
        visit(name)
    return order


@settings(max_examples=examples(60))
@given(topologies())
def test_removal_visits_dependents_first_as_unfurl(spec) -> None:
    ensemble = load(ensemble_yaml("".join(node(n, needs) for n, needs in spec)))
    instances = planned_instances(ensemble)
    deps = instance_graph(ensemble, instances)
    order = removal_order(ensemble, instances, deps)
    assert sorted(order) == sorted(instances)
    for name, needed in deps.items():  # what depends on an instance goes before it
        assert all(order.index(name) < order.index(d) for d in needed)
    hosts = {n: next((t for k, t in needs if k == "host"), None) for n, needs in spec}
    needs = dict(spec)
    dependents = {n: [s for s in instances if any(t == n and k != "host" for k, t in needs[s])]
                  + [s for s in instances if hosts[s] == n] for n in instances}
    top = [n for n in instances if hosts[n] is None]
    assert order == unfurl_removal_order(top, dependents)


def deployed(project: Project, nodes: str) -> None:
    project.write(ensemble_yaml(nodes))
    proc = run_in_process(project.root, "deploy", "--approve", "--dirty=ok")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def changes(project: Project, operation: str) -> list[str]:
    """The targets of the last job's ``operation`` tasks, in changeId order."""
    rows = [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            | {"id": line.split("\t")[0]} for line in project.jobs_tsv()]
    found = [r for r in rows if r.get("operation") == operation]
    return [r["target"].lstrip(":") for r in sorted(found, key=lambda r: r["id"])]


def test_check_numbers_its_tasks_template_by_template(project: Project) -> None:
    """As case 157: a hosted instance recorded under its host is still checked in the
    spec's order, after a template declared before it."""
    deployed(project, node("host", []) + node("deletable", []) + node("dependent",
                                                                      [("host", "host")]))
    proc = run_in_process(project.root, "check", "--dirty=ok")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert changes(project, "check") == ["host", "deletable", "dependent"]


def test_undeploy_deletes_unrelated_instances_in_recorded_order(project: Project) -> None:
    """As case 121: nothing depends on either, so the first recorded goes first."""
    deployed(project, node("first", []) + node("second", []) + node("app",
                                                                  [("dependency", "first")]))
    proc = run_in_process(project.root, "undeploy", "--approve", "--dirty=ok")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert changes(project, "delete") == ["app", "first", "second"]


def checked(name: str, found: str) -> str:
    return (f"{name}:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
            f"      create: 'true'\n      configure: 'true'\n    Install:\n"
            f"      check: {{implementation: Template, inputs: {{done: {{status: {found}}}}}}}\n")


@pytest.mark.parametrize("found", [
    ["ok", "absent", "ok"], ["absent", "ok"], ["ok", "ok", "absent", "absent"], ["ok"],
])
def test_deploy_check_numbers_only_the_tasks_it_runs(project: Project, found) -> None:
    """As case 101: `deploy --check` skips what a check found ok; a skipped task takes no
    changeId number, so the job's changeIds follow one another without a gap."""
    names = [f"n{i}" for i in range(len(found))]
    project.write(ensemble_yaml("".join(checked(n, f) for n, f in zip(names, found, strict=True))))
    proc = run_in_process(project.root, "deploy", "--approve", "--dirty=ok", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line.split("\t")[0] for line in project.jobs_tsv()]
    expected = [(n, op) for n, f in zip(names, found, strict=True)
                for op in (["check"] if f == "ok" else ["check", "create", "configure"])]
    rows = [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            for line in project.jobs_tsv()[1:]]
    assert [(r["target"].lstrip(":"), r["operation"]) for r in rows] == expected
    assert [int(i[-4:]) for i in ids] == list(range(len(ids)))


def test_a_requirement_name_given_twice_orders_by_its_last_target(project: Project) -> None:
    """As unfurl-cases 468: wordpress lists plugins seo then cache; Unfurl plans cache,
    wordpress, then seo (its requirements by name keep the last), and runs them so."""
    deployed(project, node("wordpress", [("dependency", "seo"), ("dependency", "cache")])
             + node("seo", []) + node("cache", []))
    assert changes(project, "create") == ["cache", "wordpress", "seo"]


def test_a_long_chain_of_hosts_is_planned_outermost_first() -> None:
    """1,500 templates each hosted on the next, written innermost first: each gets its
    instance after its host's (the walk up the hosts keeps no recursion). Built without
    validation, which refuses a chain of more than 40 hosts (its status would nest too deep)."""
    count = 1500
    spec = "".join(f"t{i}:\n  type: tosca.nodes.Root\n"
                   + (f"  requirements:\n    - host: t{i + 1}\n" if i + 1 < count else "")
                   for i in range(count))
    text = ensemble_yaml(spec)
    instances = planned_instances(build(Path("ensemble.yaml"), text, safe_load(text)))
    assert list(instances) == [f"t{i}" for i in reversed(range(count))]
