"""Files the tool rewrites keep their mode, and new ones get what a plain write gives:
a deploy must not turn a team's readable ensemble.yaml into a private file, while the
running job's journal stays private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import pytest

from tests.conftest import REFERENCE, Invoke, Project
from unfurl_lite.load import yamlio


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("before", [0o644, 0o640, 0o664])
def test_a_deploy_keeps_the_ensembles_mode(project: Project, invoke: Invoke, before: int,
                                           umask_022: None) -> None:
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    project.ensemble.chmod(before)
    assert invoke("deploy", "--approve").exit_code == 0
    assert mode(project.ensemble) == before
    job_files = list((project.root / "jobs").glob("job*.yaml"))
    assert job_files and all(mode(p) == 0o644 for p in job_files)


def test_export_to_a_new_file_gets_the_umasks_mode(project: Project, invoke: Invoke,
                                                   umask_022: None) -> None:
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    assert invoke("export", "--file", "out.json").exit_code == 0
    assert mode(project.root / "out.json") == 0o644


def test_a_private_write_is_0600_whatever_the_old_mode(tmp_path, umask_022: None) -> None:
    path = tmp_path / "journal.yaml"
    path.write_text("old\n")
    path.chmod(0o644)
    yamlio.atomic_write(path, "new\n", private=True)
    assert mode(path) == 0o600 and path.read_text() == "new\n"
