"""``unfurl plan [ENSEMBLE]`` answered without click (``cli/quick.py``): the same output,
errors and exit code as click's road gives the same command line (``plan -q ENSEMBLE``:
``-q`` is accepted and changes nothing), for valid and broken ensembles, paths that are
missing or directories, and generated ensembles; any other command line goes to click."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ensemble_yaml, entry_point, shell_node, suppressed
from unfurl_lite.cli import quick


def both_roads(capsys: pytest.CaptureFixture[str], args: list[str],
               slow: list[str] | None = None) -> tuple[Any, Any]:
    """(exit code, stdout, stderr) of the quick road for ``args``, and of click's for the
    same command line (``slow`` when it is spelled otherwise to reach click)."""
    assert quick.answers(args)
    capsys.readouterr()
    code = quick.run(args)
    fast = (code or 0, *capsys.readouterr())
    code = entry_point(slow if slow is not None else list(args))
    return fast, (code or 0, *capsys.readouterr())


def write_chain(tmp_path: Path, names: list[str], command: str,
                targets: list[str | None]) -> Path:
    """A fresh folder under ``tmp_path`` (hypothesis reuses it) holding an ensemble of Shell
    nodes, each but the first requiring ``targets[index]`` when that is not None."""
    nodes = ""
    for index, name in enumerate(names):
        nodes += shell_node(name, command)
        if index and targets[index] is not None:
            nodes += f"  requirements:\n    - dependency: {targets[index]}\n"
    folder = tmp_path / f"e{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "ensemble.yaml").write_text(ensemble_yaml(nodes))
    return folder


def _both(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[Any, Any]:
    """The two roads of a plan (``plan -q ENSEMBLE`` is click's road: ``-q`` changes nothing)."""
    return both_roads(capsys, args, [args[0], "-q", *args[1:]])


ENSEMBLES = {
    "valid": ensemble_yaml("".join(shell_node(f"n{i}", "exit 0") for i in range(3))),
    "an unknown type": ensemble_yaml("    n1:\n      type: tosca.nodes.Nowhere\n"),
    "not YAML": "apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec: [unclosed\n",
    "not a mapping": "- a list\n",
    "an unknown key": ensemble_yaml(shell_node("n1", "true")) + "surprise: 1\n",
}


@pytest.mark.parametrize("case", sorted(ENSEMBLES))
def test_the_quick_road_says_what_clicks_says(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ensemble.yaml").write_text(ENSEMBLES[case])
    monkeypatch.chdir(tmp_path)
    for args in (["plan", "ensemble.yaml"], ["plan"], ["plan", str(tmp_path)]):
        fast, slow = _both(capsys, args)
        assert fast == slow
        if case in ("valid", "an unknown type", "not YAML"):
            assert (fast[0] == 0) == (case == "valid"), fast
        assert ("Plan for deploy:" in fast[1]) == (case in ("valid", "an unknown key"))


@pytest.mark.parametrize("command", ["plan", "validate"])
def test_a_missing_ensemble_is_refused_alike(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in ([command, "nowhere.yaml"], [command], [command, "a dir/"]):
        fast, slow = both_roads(capsys, args)
        assert fast == slow and fast[0] == 1 and "not found" in fast[2]


@settings(max_examples=10,
          suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))
@given(names=st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True),
                      min_size=1, max_size=6, unique=True),
       command=st.sampled_from(["true", "exit 1", "echo 'a: b' # c"]),
       after=st.booleans())
def test_generated_ensembles_plan_alike(
        names: list[str], command: str, after: bool, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    targets = [names[i - 1] if after and i else None for i in range(len(names))]
    monkeypatch.chdir(write_chain(tmp_path, names, command, targets))
    fast, slow = _both(capsys, ["plan", "ensemble.yaml"])
    assert fast == slow


@pytest.mark.parametrize(("args", "answered"), [
    (["plan"], True), (["plan", "ensemble.yaml"], True), (["plan", "some dir"], True),
    (["plan", "-q", "ensemble.yaml"], False), (["plan", "--json"], False),
    (["plan", "--"], False), (["plan", "-"], False), (["plan", ""], False),
    (["plan", "a.yaml", "b.yaml"], False), (["deploy", "--json"], False), ([], False),
    (["--verbose", "plan"], False), (["validate", "ensemble.yaml"], True),
])
def test_only_a_plan_with_every_option_at_its_default_takes_the_quick_road(
        args: list[str], answered: bool) -> None:
    assert quick.answers(args) is answered


def test_shell_completion_and_terminals_go_to_click(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_UNFURL_COMPLETE", "bash_complete")
    assert not quick.answers(["plan"])
    monkeypatch.delenv("_UNFURL_COMPLETE")

    class Terminal:
        encoding = "utf-8"

        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdout", Terminal())
    assert not quick.answers(["plan"])  # rich's tree, as click's road draws it
