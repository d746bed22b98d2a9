"""The loader never crashes: random bytes and random YAML give an Ensemble or one
UnfurlLiteError, never a traceback."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, suppressed
from unfurl_lite.errors import UnfurlLiteError
from unfurl_lite.load import yamlio
from unfurl_lite.load.loader import load_ensemble

SETTINGS = settings(
    max_examples=examples(50),
    suppress_health_check=suppressed(HealthCheck.function_scoped_fixture),
)

KEYS = st.sampled_from(
    ["apiVersion", "kind", "spec", "service_template", "topology_template", "node_templates",
     "app", "type", "interfaces", "Standard", "operations", "create", "implementation",
     "inputs", "properties", "requirements", "status", "instances", "readyState", "+include",
     "+/spec", "+*a", "+%", "lastJob", "jobsLog", "node_types", "derived_from", "metadata"]
) | st.text(max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(
    max_size=12
)
TREES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=30,
)


def _load(path: Path) -> None:
    try:
        load_ensemble(path)
    except UnfurlLiteError as exc:
        assert exc.format()


@SETTINGS
@given(data=st.binary(max_size=400))
def test_random_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "ensemble.yaml"
    path.write_bytes(data)
    _load(path)


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#?,.+%\n ")), max_size=200))
def test_random_yaml_punctuation(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ensemble.yaml"
    path.write_text(text)
    _load(path)


@SETTINGS
@given(tree=st.dictionaries(KEYS, TREES, max_size=6))
def test_random_ensemble_shapes(tmp_path: Path, tree: dict) -> None:
    document = {"apiVersion": "unfurl/v1alpha1", "kind": "Ensemble", **tree}
    path = tmp_path / "ensemble.yaml"
    path.write_text(yamlio.dump(document))
    _load(path)


@SETTINGS
@given(
    template=st.dictionaries(
        st.sampled_from(["type", "properties", "interfaces", "requirements", "metadata",
                         "directives", "capabilities"]),
        TREES,
        max_size=4,
    ),
    status=TREES,
)
def test_random_node_templates_and_status(tmp_path: Path, template: dict, status: object) -> None:
    document = {
        "apiVersion": "unfurl/v1alpha1",
        "kind": "Ensemble",
        "spec": {"service_template": {"topology_template": {"node_templates": {"app": template}}}},
        "status": {"instances": {"app": status}},
    }
    path = tmp_path / "ensemble.yaml"
    path.write_text(yamlio.dump(document))
    _load(path)
