"""What the model's build and validation make once for templates that declare the same
thing (issue 29 goal 3: a generated ensemble declares its templates' operations alike) is
what they would make for each template alone."""

from __future__ import annotations

import copy
import datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.load import builder, validate
from unfurl_lite.load.interfaces import interfaces_of, merge_interfaces


def document(templates: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "unfurl/v1alpha1", "kind": "Ensemble",
            "spec": {"service_template": {"topology_template": {
                "node_templates": templates}}}}


def shell(value: Any) -> dict[str, Any]:
    return {"type": "tosca.nodes.Root", "interfaces": {"Standard": {"operations": {
        "create": {"implementation": {"className": "Shell"},
                   "inputs": {"command": "true", "x": value}}}}}}


def alone(template: dict[str, Any]) -> dict[str, Any]:
    """The template's operations as built for it alone."""
    return merge_interfaces({}, interfaces_of(template.get("interfaces") or {}))


def x_of(built: Any, name: str) -> Any:
    return built.topology.templates[name].interfaces["Standard"]["create"].inputs["x"]


def test_equal_interfaces_are_built_once_and_values_python_calls_equal_are_not() -> None:
    """1, True and 1.0 are equal in Python, not in YAML: each keeps its own type; a date
    (which the build cannot key) is built for its template."""
    values = [1, 1, True, 1.0, 0, False, "1", datetime.date(2026, 11, 27), 1]
    templates = {f"t{i}": shell(value) for i, value in enumerate(values)}
    built = builder.build(Path("ensemble.yaml"), "", document(templates))  # type: ignore[arg-type]
    for name, value in zip(templates, values, strict=True):
        found = x_of(built, name)
        assert type(found) is type(value) and found == value
        assert built.topology.templates[name].interfaces == alone(templates[name])
    create = {name: t.interfaces["Standard"]["create"]
              for name, t in built.topology.templates.items()}
    assert create["t0"] is create["t1"] is create["t8"]  # made once
    assert create["t2"] is not create["t0"] and create["t3"] is not create["t0"]
    # each template's own mappings: one template's interfaces are not another's
    first, second = (built.topology.templates[name].interfaces for name in ("t0", "t1"))
    assert first is not second and first["Standard"] is not second["Standard"]


scalars = st.one_of(st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, -0.0]),
                    st.sampled_from(["1", "true", "", "x"]), st.none())


@given(st.lists(st.one_of(scalars, st.lists(scalars, max_size=2),
                          st.dictionaries(st.sampled_from(["a", "b"]), scalars, max_size=2)),
                min_size=1, max_size=6))
def test_every_template_has_the_operations_it_would_have_alone(values: list[Any]) -> None:
    templates = {f"t{i}": shell(value) for i, value in enumerate(values)}
    built = builder.build(Path("ensemble.yaml"), "", document(templates))  # type: ignore[arg-type]
    for name, template in templates.items():
        found = x_of(built, name)
        assert repr(found) == repr(template["interfaces"]["Standard"]["operations"]["create"]
                                   ["inputs"]["x"])
        assert built.topology.templates[name].interfaces == alone(template)


def test_each_template_with_equal_refused_interfaces_is_refused_where_it_is() -> None:
    """Interfaces judged once for the templates that declare the same: a refusal is still
    said for each of them, at its own path; an equal clean one beside them says nothing."""
    refused = {"type": "tosca.nodes.Root", "interfaces": {"Standard": {"operations": {
        "create": {"implementation": {"className": "Shell", "operation_host": "x"},
                   "inputs": {"command": "true"}}}}}}
    templates = {"ok1": shell(1), "bad1": refused, "ok2": shell(1),
                 "bad2": copy.deepcopy(refused), "ok3": shell(1)}
    paths = [p.path for p in validate.check(document(templates), "ensemble.yaml")
             if "operation_host" in p.message]
    base = "spec.service_template.topology_template.node_templates"
    assert paths == [f"{base}.{name}.interfaces.Standard.operations.create.implementation"
                     for name in ("bad1", "bad2")]


def test_an_operation_one_type_declares_is_refused_on_another_with_equal_interfaces() -> None:
    """Whether an operation a well-known interface lacks is declared depends on the
    template's type: equal interfaces on two types are each judged."""
    custom = {"Standard": {"type": "my.Standard", "operations": {"extra": "true"}}}
    service = {"interface_types": {"my.Standard": {
                   "derived_from": "tosca.interfaces.node.lifecycle.Standard",
                   "operations": {"extra": {}}}},
               "node_types": {"Typed": {"derived_from": "tosca.nodes.Root", "interfaces": {
                   "Standard": {"type": "my.Standard"}}}},
               "topology_template": {"node_templates": {
                   "typed": {"type": "Typed", "interfaces": copy.deepcopy(custom)},
                   "typed2": {"type": "Typed", "interfaces": {
                       "Standard": {"operations": {"extra": "true"}}}},
                   "plain": {"type": "tosca.nodes.Root", "interfaces": {
                       "Standard": {"operations": {"extra": "true"}}}}}}}
    doc = {"apiVersion": "unfurl/v1alpha1", "kind": "Ensemble",
           "spec": {"service_template": service}}
    unknown = [p.path for p in validate.check(doc, "ensemble.yaml")
               if p.message.startswith("unknown operation 'extra'")]
    assert unknown == ["spec.service_template.topology_template.node_templates.plain"
                       ".interfaces.Standard.operations.extra"]
