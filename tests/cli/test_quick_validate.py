"""``unfurl validate [ENSEMBLE]`` answered without click (``cli/quick.py``): the same
verdict, warnings, errors and exit code as click's road gives the same command line, for
valid ensembles, ensembles with warnings, broken ones and generated ensembles (missing
paths and directories: tests/cli/test_quick_plan.py); an option (``--json``, ``-e``)
takes click's road."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.test_quick_plan import both_roads, write_chain
from tests.conftest import ensemble_yaml, shell_node, suppressed
from unfurl_lite.cli import quick

#: a requirement the type declares that no template matches: valid, with a warning
UNMATCHED = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      App:
        derived_from: tosca.nodes.Root
        requirements:
          - db:
              capability: tosca.capabilities.Endpoint
              relationship: tosca.relationships.ConnectsTo
    topology_template:
      node_templates:
        app:
          type: App
"""

ENSEMBLES = {
    "valid": ensemble_yaml("".join(shell_node(f"n{i}", "exit 0") for i in range(3))),
    "a missing requirement": UNMATCHED,
    "an unknown type": ensemble_yaml("    n1:\n      type: tosca.nodes.Nowhere\n"),
    "not YAML": "apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec: [unclosed\n",
    "not a mapping": "- a list\n",
    "an unknown key": ensemble_yaml(shell_node("n1", "true")) + "surprise: 1\n",
    "a missing name": ensemble_yaml(shell_node("n1", "echo {{ SELF.nowhere }}")),
}


@pytest.mark.parametrize("case", sorted(ENSEMBLES))
def test_the_quick_road_validates_as_click_does(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ensemble.yaml").write_text(ENSEMBLES[case])
    monkeypatch.chdir(tmp_path)
    for args in (["validate", "ensemble.yaml"], ["validate"], ["validate", str(tmp_path)]):
        fast, slow = both_roads(capsys, args)
        assert fast == slow
        valid = case in ("valid", "a missing requirement", "an unknown key")
        assert (fast[0] == 0) == valid, fast
        assert (": valid (" in fast[1]) == valid
        assert ("warning: node template 'app' is missing requirements" in fast[2]) == (
            case == "a missing requirement")


@settings(max_examples=10,
          suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))
@given(names=st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True),
                      min_size=1, max_size=6, unique=True),
       command=st.sampled_from(["true", "exit 1", "echo {{ SELF.x }}", "echo 'a: b'"]),
       link=st.sampled_from(["none", "previous", "missing"]))
def test_generated_ensembles_validate_alike(
        names: list[str], command: str, link: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    targets = [None if link == "none" or not i else names[i - 1] if link == "previous"
               else "nowhere" for i in range(len(names))]
    monkeypatch.chdir(write_chain(tmp_path, names, command, targets))
    fast, slow = both_roads(capsys, ["validate", "ensemble.yaml"])
    assert fast == slow


@pytest.mark.parametrize(("args", "answered"), [
    (["validate"], True), (["validate", "ensemble.yaml"], True),
    (["validate", "--json"], False), (["validate", "-e", "ensemble.yaml"], False),
    (["validate", "--"], False), (["validate", ""], False),
    (["validate", "a.yaml", "b.yaml"], False), (["--no-color", "validate"], False),
])
def test_only_a_bare_validate_takes_the_quick_road(args: list[str], answered: bool) -> None:
    assert quick.answers(args) is answered
