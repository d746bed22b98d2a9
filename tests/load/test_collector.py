"""What a load builds is kept out of the collector for the command that asked
(``collector.loads_frozen``: validate, plan, the job commands) and only for it: a library
caller's heap, and the heap after the command, are collected as before."""

from __future__ import annotations

import gc

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, shell_node
from unfurl_lite.load.collector import loads_frozen
from unfurl_lite.load.loader import load_ensemble


@pytest.fixture
def written(project: Project) -> Project:
    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b")))
    return project


def test_a_load_inside_is_frozen_until_the_command_ends(written: Project) -> None:
    assert gc.get_freeze_count() == 0
    with loads_frozen():
        ensemble = load_ensemble(written.ensemble)
        assert gc.get_freeze_count() > 0  # the model was moved out of the generations
        with loads_frozen():  # nested: the outer one ends it
            load_ensemble(written.ensemble)
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    assert set(ensemble.topology.templates) == {"a", "b"}


def test_a_library_load_and_a_disabled_collector_are_left_alone(written: Project) -> None:
    load_ensemble(written.ensemble)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    gc.disable()
    try:
        with loads_frozen():
            load_ensemble(written.ensemble)
            assert gc.get_freeze_count() == 0 and not gc.isenabled()  # the caller's choice
    finally:
        gc.enable()


@pytest.mark.parametrize("command", [["validate"], ["plan"],
                                     ["deploy", "--approve", "--dirty=ok", "-q"]])
def test_the_commands_leave_nothing_frozen(written: Project, invoke: Invoke,
                                           command: list[str]) -> None:
    result = invoke(*command)
    assert result.exit_code == 0, result.output
    assert gc.get_freeze_count() == 0 and gc.isenabled()
