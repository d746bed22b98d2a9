"""A malformed ``-p`` is refused with an example the same command takes: spelled from the
workflow's own declared parameters (no layer above the declaration names one)."""

from __future__ import annotations

import shlex

import click
import pytest

from unfurl_lite.cli.commands.parameters import example, workflow_parameters
from unfurl_lite.model.builtin_workflows import WORKFLOWS, BuiltinWorkflow

TAKING_P = [w for w in WORKFLOWS if w.takes_cloudify_parameters]


@pytest.mark.parametrize("workflow", TAKING_P, ids=lambda w: w.name)
def test_a_malformed_p_shows_an_example_the_workflow_accepts(workflow: BuiltinWorkflow):
    with pytest.raises(click.BadParameter) as refused:
        workflow_parameters(workflow, ("oops",), None)
    shown = example(workflow)
    assert f"give NAME=VALUE, e.g. {shown}" in refused.value.message
    if not workflow.cloudify_names:  # deploy and undeploy take -p but no Cloudify name
        assert shown == "-p NAME=VALUE"
        return
    option, item = shlex.split(shown)  # as a shell hands it over
    name = item.partition("=")[0]
    assert option == "-p" and name in workflow.cloudify_names
    assert list(workflow_parameters(workflow, (item,), None)) == [name]


def test_scale_s_example_is_its_delta():
    scale = next(w for w in WORKFLOWS if w.name == "scale")
    assert example(scale) == "-p delta=2"
