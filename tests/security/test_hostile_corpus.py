"""Hostile ensembles (tests/data/hostile, and larger ones made here): alias bombs through
aliases and merge keys, deep nesting of every kind, include diamonds and cycles, huge
includes. Every command refuses each with a clean error naming what it found, before
anything runs or is written, and (in the slow run) within 300 MB."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT, ensemble_yaml
from tests.execution_helpers import run_measured

HOSTILE = ROOT / "tests" / "data" / "hostile"
CASES = sorted(p.name for p in HOSTILE.iterdir() if p.is_dir())
#: nodes (about 400 bytes each once composed) a hostile document may make us build
MEMORY_KB = 300 * 1024


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def _copy(case: str, project) -> str:
    for path in (HOSTILE / case).iterdir():
        if path.name != "expected.txt":
            shutil.copy(path, project.root / path.name)
    return (HOSTILE / case / "expected.txt").read_text().strip()


def test_the_corpus_is_there() -> None:
    assert {"billion-laughs", "merge-key-chain", "compact-nesting", "include-diamond"} <= \
        set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_every_command_refuses_a_hostile_ensemble_cleanly(project, invoke, case) -> None:
    expected = _copy(case, project)
    before, commits = _files(project.root), project.commits()
    for command in (("validate",), ("plan",), ("deploy", "--approve"), ("status",)):
        result = invoke(*command)
        assert result.exit_code == 1, (command, result.output)
        assert expected in result.output, (command, result.output)
        assert "Traceback" not in result.output
        assert "ensemble.yaml" in result.output or ".yaml:" in result.output  # where
    assert _files(project.root) == before and project.commits() == commits
    assert not (project.root / "ran.txt").exists()


@pytest.mark.slow  # 2,000 templates of 100 merged properties: about 3 s of CPU
def test_a_plain_document_just_under_the_limits_still_loads(project, invoke) -> None:
    """The limits refuse bombs, not large ensembles: 2,000 nodes with 100 properties each
    and a merge key each validate."""
    nodes = "".join(
        f"n{i}:\n  type: tosca.nodes.Root\n  metadata: {{<<: *common, i: '{i}'}}\n"
        for i in range(2000))
    text = ensemble_yaml(nodes).replace(
        "apiVersion:", "common: &common {" + ", ".join(f"k{j}: {j}" for j in range(100))
        + "}\napiVersion:")
    project.write(text)
    result = invoke("validate")
    assert result.exit_code == 0, result.output[-500:]
    assert "2000 templates" in result.output


def _big_include(root: Path) -> str:
    (root / "data.yaml").write_text(
        "values: [" + ",".join("1" for _ in range(250_000)) + "]\n")
    return "at most 200000 in all"


def _sparse_include(root: Path) -> str:
    with open(root / "data.yaml", "wb") as handle:
        handle.truncate(2 * 1024 ** 3)  # 2 GB that take no disk
    return "too large"


def _includes(*sizes: int) -> Callable[[Path], str]:
    """Includes of ``sizes`` values each: each file under the per-file limit, together over
    it (the last is refused)."""
    def write(root: Path) -> str:
        for i, size in enumerate(sizes):
            (root / f"part{i}.yaml").write_text(
                "values: [" + ",".join("1" for _ in range(size)) + "]\n")
        (root / "data.yaml").write_text(
            "".join(f"p{i}:\n  +include: part{i}.yaml\n" for i in range(len(sizes))))
        return "files read before it leave room for"
    return write


GENERATED = {"big-include": _big_include, "sparse-include": _sparse_include,
             # one small include read, then one the budget would take alone but not beside it
             # (the load sizes a file's includes from its last one: part1 is read first; in
             # the other order the test holds too, parsing 195,000 values first, ~10 s)
             "many-includes": _includes(195_000, 10_000)}
#: two includes of 90,000 values parsed before the third is refused: the most a load may
#: parse (about 20 s of CPU), for the memory bound in the slow run
AT_THE_BUDGET = {"includes-at-the-budget": _includes(90_000, 90_000, 90_000)}


@pytest.mark.parametrize("case", list(GENERATED))
def test_a_huge_include_is_refused_before_it_is_parsed(project, invoke, case) -> None:
    expected = GENERATED[case](project.root)
    project.write(ensemble_yaml("app:\n  type: tosca.nodes.Root\n").replace(
        "spec:\n", "spec:\n  +include: data.yaml\n"))
    result = invoke("validate")
    assert result.exit_code == 1, result.output
    assert expected in result.output, result.output


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES + list(GENERATED) + list(AT_THE_BUDGET))
def test_a_hostile_ensemble_is_refused_in_bounded_memory(project, case) -> None:
    generated = {**GENERATED, **AT_THE_BUDGET}
    if case in generated:
        expected = generated[case](project.root)
        project.write(ensemble_yaml("app:\n  type: tosca.nodes.Root\n").replace(
            "spec:\n", "spec:\n  +include: data.yaml\n"), commit=False)
    else:
        expected = _copy(case, project)
    code, output, peak = run_measured(project.root, "deploy", "--approve")
    assert code == 1 and expected in output, output[-800:]
    assert peak < MEMORY_KB, (case, peak)


@pytest.mark.slow
def test_a_plain_document_of_half_a_million_values_is_refused_in_bounded_memory(
        project) -> None:
    project.write(ensemble_yaml("app:\n  type: tosca.nodes.Root\n").replace(
        "spec:\n", "metadata: {values: [" + ",".join("1" for _ in range(600_000))
        + "]}\nspec:\n"), commit=False)
    code, output, peak = run_measured(project.root, "validate")
    assert code == 1 and "refused before parsing" in output, output[-800:]
    assert peak < MEMORY_KB
