"""docs/workflows.md has a section per workflow naming every option its --help has, with an
example; the options all job commands share are in one table."""

from __future__ import annotations

import re

import click
import pytest

from tests.conftest import ROOT
from unfurl_lite.cli.main import cli

DOC = (ROOT / "docs" / "workflows.md").read_text()
SECTIONS = {
    m.group(1): m.group(2)
    for m in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", DOC, flags=re.S | re.M)
}
WORKFLOW_SECTIONS = {
    "deploy": "deploy",
    "undeploy": "undeploy",
    "install": "install, uninstall",
    "uninstall": "install, uninstall",
    "check": "check",
    "discover": "discover",
    "run": "run",
    "execute-operation": "execute-operation",
    "start": "start",
    "stop": "stop",
    "restart": "restart",
    "heal": "heal",
    "scale": "scale",
    "update": "update",
    "install-new-agents": "install-new-agents",
}
SHARED = "Options every job command takes"
#: deploy's own options (its section names them), not shared by the other job commands
DEPLOY_ONLY = {"--force", "--template", "--check", "--repair", "--skip-new",
               "--change-detection", "--prune", "--upgrade", "--destroyunmanaged",
               "--destroy-discovered"}


def long_options(command: click.Command) -> set[str]:
    """The options a command shows (hidden ones are Unfurl's it refuses by name)."""
    names = set()
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            names |= {o for o in param.opts if o.startswith("--")}
    return names - {"--help"}


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None
    return found


def test_shared_options_are_all_in_the_table():
    shared = long_options(command("deploy")) - DEPLOY_ONLY
    table = SECTIONS[SHARED]
    assert not {o for o in shared if f"`{o}" not in table}


@pytest.mark.parametrize("name", sorted(WORKFLOW_SECTIONS))
def test_each_workflow_section_names_its_options_and_has_an_example(name):
    section = SECTIONS[WORKFLOW_SECTIONS[name]]
    shared = long_options(command("deploy")) - DEPLOY_ONLY
    own = long_options(command(name)) - shared
    assert not {o for o in own if o not in section}, f"## {WORKFLOW_SECTIONS[name]}"
    assert re.search(rf"^    unfurl {re.escape(name)}\b.*--approve|^    unfurl {name} ",
                     section, flags=re.M)


@pytest.mark.parametrize("workflow", sorted(
    ["execute_operation", "start", "stop", "restart", "heal", "scale", "update", "undeploy",
     "install_new_agents"]
))
def test_each_cloudify_parameter_is_documented_in_both_spellings(workflow):
    from unfurl_lite.model.builtin_workflows import BY_NAME

    name = {"execute_operation": "execute-operation", "undeploy": "uninstall",
            "install_new_agents": "install-new-agents"}.get(
        workflow, workflow
    )
    section = SECTIONS[WORKFLOW_SECTIONS[name]]
    options = long_options(command(name))
    for parameter in BY_NAME[workflow].cloudify_names:
        assert f"`{parameter}`" in section, (name, parameter)
        dashed = "--" + parameter.replace("_", "-")
        if dashed in options:
            assert f"`{dashed}" in section, (name, dashed)


def test_parameter_options_are_documented():
    section = SECTIONS["Cloudify parameters (-p, --parameters)"]
    assert "`-p`, `--parameter NAME=VALUE`" in section and "`--parameters FILE`" in section


def test_every_test_the_seed_table_names_exists():
    """The table of the seeds' behaviours names real tests (and real modules)."""
    table = SECTIONS["The seeds, behaviour by behaviour"]
    rows = [line for line in table.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert len(rows) >= 70
    last_file = None
    for row in rows:
        test_column = row.rstrip(" |").rsplit(" | ", 1)[-1]
        for path, name in re.findall(r"`((?:plan|run|record)/test_\w+\.py)?(?:::(\w+))?`",
                                     test_column):
            if path:
                last_file = ROOT / "tests" / path
                assert last_file.exists(), row
            if name:
                assert last_file is not None and f"def {name}(" in last_file.read_text(), row
    for module in set(re.findall(r"`((?:plan|run|record|model|load|api|cli|expressions)"
                                 r"/[\w/]+\.py)`", table)):
        assert (ROOT / "unfurl_lite" / module).exists() or (ROOT / "tests" / module).exists(), \
            module
