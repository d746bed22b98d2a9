"""Each built-in workflow is declared once, and every layer takes what it needs of it from
the declaration: the planner's keywords, the CLI's commands and options, ``-p``, the
options a job records, the names a TOSCA workflow may not take."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Invoke, Project, ensemble_yaml, shell_node
from unfurl_lite.errors import PlanError
from unfurl_lite.model.builtin_workflows import (
    BY_NAME,
    PARAMETERS,
    RESERVED,
    WORKFLOWS,
    BuiltinWorkflow,
    workflow_of_command,
)
from unfurl_lite.run.options import JobOptions, PlanOptions, recorded_options


def _planner(workflow: BuiltinWorkflow) -> inspect.Signature:
    module, _, function = workflow.planner.partition(":")
    return inspect.signature(getattr(importlib.import_module(f"unfurl_lite.plan.{module}"),
                                     function))


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.name)
def test_the_planner_takes_what_the_declaration_says_with_its_defaults(workflow):
    signature = _planner(workflow)
    taken = [name for name in signature.parameters if name != "ensemble"]
    assert taken == list(workflow.planner_takes)
    for parameter in workflow.parameters:
        default = signature.parameters[parameter.keyword or parameter.name].default
        if parameter.default is not None:
            assert default == parameter.default, parameter.name
        if parameter.required:
            assert default in (inspect.Parameter.empty, None), parameter.name


def test_one_name_is_one_kind_in_every_workflow():
    kinds: dict[str, set[str]] = {}
    for workflow in WORKFLOWS:
        for parameter in workflow.parameters:
            kinds.setdefault(parameter.name, set()).add(parameter.kind)
    assert {name: found for name, found in kinds.items() if len(found) > 1} == {}


def test_the_cli_offers_each_workflow_under_each_spelling():
    from unfurl_lite.cli.main import COMMANDS, cli

    for workflow in WORKFLOWS:
        for spelling in workflow.commands:
            assert spelling in COMMANDS
            assert workflow_of_command(spelling) is workflow
            command = cli.get_command(None, spelling)  # type: ignore[arg-type]
            assert command is not None
            options = {o for p in command.params for o in getattr(p, "opts", [])}
            for parameter in workflow.parameters:
                if parameter.flag:
                    assert parameter.flag in options, (spelling, parameter.name)
            assert ("-p" in options) == workflow.takes_cloudify_parameters


def test_a_tosca_workflow_may_replace_deploy_and_undeploy_only():
    for workflow in WORKFLOWS:
        assert (workflow.name in RESERVED) != workflow.replaceable
        for spelling in workflow.commands:
            assert spelling in RESERVED or spelling == workflow.name


@given(st.sampled_from(sorted(PARAMETERS)), st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8),
    st.lists(st.text(max_size=4), max_size=3), st.dictionaries(st.text(max_size=4),
                                                               st.integers(), max_size=2)))
def test_plan_options_take_a_value_of_the_declared_type_or_refuse_it(name, value):
    kind = PARAMETERS[name].kind
    fits = {
        "flag": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "text": isinstance(value, str | int | bool),
        "names": isinstance(value, str | list),
        "argv": isinstance(value, list),
        "mapping": isinstance(value, dict),
    }[kind]
    if value is None:
        assert PlanOptions(**{name: value}).given() == {}
    elif fits:
        taken = PlanOptions(**{name: value}).get(name)
        assert taken is not None
        if kind == "names" and isinstance(value, str):
            assert taken == tuple(v.strip() for v in value.split(",") if v.strip())
    else:
        with pytest.raises(PlanError, match=name):
            PlanOptions(**{name: value})


def test_plan_options_name_what_the_workflow_takes():
    with pytest.raises(PlanError) as refused:
        PlanOptions(scale_compte=True)
    assert "unknown plan option(s): scale_compte" in refused.value.message
    with pytest.raises(PlanError) as wrong:
        PlanOptions(scale_compute=True).for_workflow("heal")
    assert "heal does not take the option(s) scale_compute" in wrong.value.message
    assert PlanOptions(scale_compute=True, delta=2).for_workflow("scale") == {
        "scale_compute": True, "delta": 2}
    assert BY_NAME["scale"].parameter("scale_compute") is not None


def test_recorded_options_follow_the_declarations():
    options = JobOptions(jobs=2, dryrun=True)
    assert recorded_options(options, PlanOptions(instance_names=["a"], force=True), "ok") == {
        "dryrun": True, "commit": True, "dirty": "ok", "instances": ["a"], "force": True,
        "jobs": 2}
    assert recorded_options(JobOptions(), PlanOptions()) == {"commit": True}


def _last_job_options(project: Project) -> dict:
    from ruamel.yaml import YAML

    return dict(YAML(typ="safe").load(project.ensemble.read_text())["lastJob"]["options"])


def test_the_same_job_records_the_same_options_through_the_cli_and_the_api(
        project: Project, invoke: Invoke, tmp_path: Path, template_repo: Path) -> None:
    import shutil

    from unfurl_lite import api

    text = ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b"))
    project.write(text)
    result = invoke("deploy", "--approve", "-j", "2", "-i", "a", "--dirty", "ok")
    assert result.exit_code == 0, result.output
    through_cli = _last_job_options(project)
    other = Project(tmp_path / "other")
    shutil.copytree(template_repo, other.root, symlinks=True)
    other.write(text)
    done = api.run_job(api.JobRequest(other.ensemble, "deploy",
                                      plan_options=api.PlanOptions(instance_names=["a"]),
                                      options=api.JobOptions(jobs=2), dirty="ok"))
    assert done is not None and done.state == "succeeded"
    assert _last_job_options(other) == through_cli == {
        "commit": True, "dirty": "ok", "instances": ["a"], "jobs": 2}
