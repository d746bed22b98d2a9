"""The suite runs in a fresh clone: no test reads a path outside the repository."""

from __future__ import annotations

import re

from tests.conftest import REFERENCE, ROOT

#: the folder beside the checkout that only the developers' machines have, and the paths
#: that lead to it
_BESIDE = "shared"
OUTSIDE = re.compile(rf"\.\./{_BESIDE}/|{_BESIDE}/reference|/work/|ROOT\.parent\b")


def test_no_test_names_a_path_outside_the_repository():
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "test_hermetic.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)


def test_the_reference_outputs_are_part_of_the_repository():
    assert REFERENCE.is_relative_to(ROOT / "tests" / "data")
    for name in ("ensemble.before.yaml", "ensemble.after.yaml", "changes-job.yaml", "jobs.tsv",
                 "jobs.after-undeploy.tsv", "status.after-undeploy.yaml", "README.md"):
        assert (REFERENCE / name).is_file(), name
