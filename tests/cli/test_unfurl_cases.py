"""The real-Unfurl corpus (tests/data/unfurl-cases/): our side of each case against what
Unfurl 1.2.0 did, as benchmarks/side_by_side.py captured it (no Unfurl needed here).

Each case must run as Unfurl ran it, or be refused by name at validate. A case the
capture found DIFFERENT is an expected failure (strict: once it matches, its verdict.json
must be re-captured with ``side_by_side.py --replay --capture``). The default run (the loop
while working) validates every case whose validate matches, a third of the corpus's CPU;
the ``slow`` run (CI's second pass) runs every step (validate, deploy, plan, a second
deploy, check, undeploy) of every case, the DIFFERENT ones and those Unfurl itself refuses
too (so one that starts to match is noticed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.side_by_side import (
    EXTRA_STEPS,
    STEPS,
    all_cases,
    case_settings,
    case_steps,
    classify,
    load_expected,
    run_case,
    snapshots,
)
from tests.conftest import run_in_process

DEFAULT_STEPS = ("validate",)
CAPTURED = [p for p in all_cases() if (p / "expected" / "verdict.json").exists()]


def verdict(case: Path) -> dict[str, Any]:
    return json.loads((case / "expected" / "verdict.json").read_text())


def lite(repo: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
    proc = run_in_process(repo, *args, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def params(steps: tuple[str, ...], *marks: pytest.MarkDecorator,
           matching_only: bool = False) -> list[Any]:
    """One parameter per captured case; expected to fail when the capture recorded a
    difference in one of ``steps`` (or at validate). ``matching_only``: leave out the cases
    that differ in those steps (the default run's budget goes to catching regressions)."""
    out = []
    for case in CAPTURED:
        recorded = verdict(case)
        differs = [line for line in recorded["differences"]
                   if line.split(":", 1)[0] in steps]
        case_marks = list(marks)
        if matching_only and recorded["verdict"] == "refused by Unfurl":
            continue
        if recorded["verdict"] == "DIFFERENT" and differs:
            if matching_only:
                continue
            case_marks.append(pytest.mark.xfail(strict=True, reason="; ".join(differs[:3])))
        out.append(pytest.param(case, id=case.name, marks=case_marks))
    return out


def check_case(case: Path, steps: tuple[str, ...], scratch: Path) -> None:
    steps = tuple(s for s in case_steps(case) if s in steps)
    theirs = {step: raw for step, raw in load_expected(case).items() if step in steps}
    ours = run_case(case, lite, scratch, steps)
    for step, raw in ours.items():
        assert "Traceback" not in raw["console"], f"{step}: {raw['console']}"
    compare = case_settings(case).get("compare") or ()
    result, found = classify(snapshots(theirs, compare), snapshots(ours, compare), steps)
    if result == "refused by Unfurl":
        assert all(raw["exit"] in (0, 1, 64) for raw in ours.values())
        return
    assert result in ("same", "refused here"), "\n".join([result, *found])
    if result == "refused here":
        assert list(ours) == ["validate"]
        assert not (scratch / case.name / "jobs.tsv").exists()


def test_the_corpus_is_big_enough_and_captured() -> None:
    cases = all_cases()
    assert len(cases) >= 150
    assert len(CAPTURED) == len(cases), "run benchmarks/side_by_side.py --capture"


@pytest.mark.parametrize("case", params(DEFAULT_STEPS, matching_only=True))
def test_case_validates_as_in_unfurl(case: Path, tmp_path: Path) -> None:
    check_case(case, DEFAULT_STEPS, tmp_path)


@pytest.mark.parametrize("case", params(STEPS + EXTRA_STEPS, pytest.mark.slow))
def test_case_runs_as_in_unfurl_every_step(case: Path, tmp_path: Path) -> None:
    check_case(case, STEPS + EXTRA_STEPS, tmp_path)


def test_what_labels_make_of_volatile_values_is_normalised() -> None:
    """``to_dns_label`` of get_ensemble_metadata turns a changeId, a commit and the scratch
    path into labels (lower case, 8 digits with an x first when they start with a number):
    the same tokens as the values, so two runs compare (unfurl-cases 80); a word or an
    8-digit value that is no commit of the step is left alone."""
    from benchmarks.side_by_side import Normaliser

    norm = Normaliser(Path("/tmp/side-by-side-x/case/lite"))
    norm.step = "deploy"
    norm.commits = {"2315705a", "d18b337f"}
    assert norm.text("A6BQ44Re0000") == "deploy:0000"
    assert norm.text("a6bq44re0001") == "deploy:0001"
    assert norm.text("x2315705a d18b337f") == "<commit> <commit>"
    assert norm.text("tmpside-by-side-1lbt2j480-doc--80-docs-get") == "<repo-label>"
    assert norm.text("abcdef12 attributes00 application1") == \
        "abcdef12 attributes00 application1"


@pytest.mark.parametrize("scratch", [
    "/tmp/pytest-of-root/pytest-0/popen-gw0/test_case_runs_as_in_unfurl_ev-84/lite",
    "/tmp/tmp.lb8bBYCUVd/pytest-of-root/pytest-0/popen-gw0/test_case_runs_as_in_unfurl_ev-84",
    "/tmp/t.x_y/short", "/9tmp/a.b",
])
def test_the_scratch_repositorys_label_is_known_whatever_the_temporary_folder(
        scratch: str) -> None:
    """unfurl-cases 80 compares get_ensemble_metadata's ``unfurlproject`` label of the
    scratch repository; the harness must know that label under any TMPDIR (``mktemp -d``
    names one ``/tmp/tmp.XXXXXXXXXX``), as to_dns_label makes it."""
    from benchmarks.side_by_side import repo_label
    from unfurl_lite.expressions.labels import label
    from unfurl_lite.run.metadata import project_path

    made = label("to_dns_label", project_path(scratch), {})
    assert repo_label(Path(scratch)).sub("<repo-label>", f"'{made}'") == "'<repo-label>'"
