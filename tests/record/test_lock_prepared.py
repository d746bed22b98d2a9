"""A job writes its lock's file before it loads and plans, forced to disk meanwhile, and
links it when it takes the lock: the same lock, taken the same way, with no file left
behind whether it is taken, refused or not needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ensemble_yaml, shell_node
from unfurl_lite.errors import LockError
from unfurl_lite.record import lock


def _temporary_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_prepared_lock_is_taken_with_its_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNFURL_LITE_FSYNC", "on")  # (forced in its own thread)
    ensemble = tmp_path / "ensemble.yaml"
    ensemble.write_text("apiVersion: unfurl/v1alpha1\n")
    prepared = lock.Prepared(ensemble, "deploy")
    assert _temporary_files(tmp_path) != []  # written before the lock is taken
    with lock.held(ensemble, "deploy", prepared=prepared) as path:
        info = lock.read_lock(path)
        assert info is not None and info.pid == os.getpid() and info.command == "deploy"
        assert _temporary_files(tmp_path) == []
    prepared.discard()
    assert not path.exists() and _temporary_files(tmp_path) == []


def test_a_prepared_lock_another_job_holds_is_refused_and_leaves_nothing(
        tmp_path: Path) -> None:
    ensemble = tmp_path / "ensemble.yaml"
    ensemble.write_text("apiVersion: unfurl/v1alpha1\n")
    with lock.held(ensemble, "undeploy") as path:
        prepared = lock.Prepared(ensemble, "deploy")
        with pytest.raises(LockError, match="already running"):
            lock.acquire(ensemble, "deploy", prepared=prepared)
        prepared.discard()
        assert _temporary_files(tmp_path) == []
        holder = lock.read_lock(path)
        assert holder is not None and holder.command == "undeploy"


def test_a_job_that_takes_no_lock_leaves_no_lock_file(project, invoke, monkeypatch) -> None:
    monkeypatch.setenv("UNFURL_LITE_CACHE", "off")  # (planned afresh, not remembered)
    project.write(ensemble_yaml(shell_node("app", "echo app")))
    assert invoke("deploy", "--approve").exit_code == 0
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0 and "Nothing to do." in again.output
    assert _temporary_files(project.root) == []
    assert not lock.lock_path(project.ensemble).exists()
