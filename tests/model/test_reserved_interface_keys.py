"""The keys of an interface that are not operations: one list, read alike by loading,
validation and planning. ``Standard: {metadata: ...}`` used to load as an operation named
"metadata" (three lists had drifted apart)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model.entities import RESERVED_INTERFACE_KEYS
from unfurl_lite.plan.registry import build

#: a value of each reserved key that the schema accepts
VALUES = {
    "type": "tosca.interfaces.node.lifecycle.Standard",
    "description": "how the app is managed",
    "inputs": "{shared: 1}",
    "outputs": "{url: x}",
    "notifications": "{ready: {implementation: {className: Shell}}}",
    "implementation": "{className: Shell}",
    "requirements": "[unfurl.relationships.ConnectsTo.K8sCluster]",
    "derived_from": "tosca.interfaces.Root",
    "metadata": "{owner: ops, version: 2}",
    "defaults": "{inputs: {timeout: 5}}",
}
KEYS = sorted(RESERVED_INTERFACE_KEYS - {"operations"})


def _spec(key: str) -> str:
    return ensemble_yaml(f"""\
        app:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              {key}: {VALUES[key]}
              configure:
                implementation: {{className: Shell}}
                inputs: {{command: echo configured}}
        """)


def test_unfurls_reserved_words_are_all_reserved() -> None:
    # tosca-parser's INTERFACE_DEF_RESERVED_WORDS, which Unfurl 1.2.0 skips as operations
    unfurl = {"type", "inputs", "operations", "notifications", "description", "implementation",
              "requirements", "derived_from", "metadata"}
    assert unfurl <= RESERVED_INTERFACE_KEYS
    assert {"defaults", "outputs"} <= RESERVED_INTERFACE_KEYS
    assert set(VALUES) == RESERVED_INTERFACE_KEYS - {"operations"}


def test_the_schema_allows_exactly_the_reserved_keys_beside_operations() -> None:
    schema = json.loads(
        (Path(__file__).parents[2] / "unfurl_lite/schema/ensemble.schema.json").read_text())
    interface = next(s for s in schema["$defs"]["interface"]["anyOf"] if s["type"] == "object")
    assert set(interface["properties"]) == RESERVED_INTERFACE_KEYS


@pytest.mark.parametrize("key", KEYS)
def test_a_reserved_key_is_never_an_operation(project: Project, key: str) -> None:
    path = project.write(_spec(key), commit=False)
    ensemble = load_ensemble(path)
    assert set(ensemble.topology.templates["app"].interfaces["Standard"]) == {"configure"}
    plan = build(ensemble, "deploy", {})
    assert [t.operation.name for t in plan.tasks if t.operation] == ["configure"]


@pytest.mark.parametrize("key", ["metadata", "requirements", "derived_from", "defaults"])
def test_validate_accepts_a_reserved_key_and_names_no_operation(
    project: Project, invoke: Invoke, key: str
) -> None:
    project.write(_spec(key))
    result = invoke("validate")
    assert result.exit_code == 0, result.output
    assert "unknown operation" not in result.output


def test_running_a_reserved_key_as_an_operation_is_refused(
    project: Project, invoke: Invoke
) -> None:
    project.write(_spec("metadata"))
    result = invoke("run", "--instance", "app", "--operation", "metadata", "--approve")
    assert result.exit_code != 0
    assert "metadata" in result.output
