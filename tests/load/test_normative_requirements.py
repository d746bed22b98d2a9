"""The requirements TOSCA's normative node types declare required are matched and judged
as a type's own are, as Unfurl 1.2.0 does (probed with it: "Node template app is missing
requirements: host" for a Database, WebApplication, Container.Application or Port alone;
a SoftwareComponent's host is optional; unfurl-cases 489 deploys a Database whose host
is matched to the one DBMS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, run_in_process


def ensemble(templates: str) -> str:
    return ("apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  service_template:\n"
            "    topology_template:\n      node_templates:\n" + templates)


def template(name: str, type_name: str) -> str:
    return (f"        {name}:\n          type: {type_name}\n          interfaces:\n"
            f"            Standard:\n              create: echo {name}\n")


@pytest.mark.parametrize(("type_name", "missing"), [
    ("tosca.nodes.Database", "host"), ("tosca.nodes.WebApplication", "host"),
    ("tosca.nodes.Container.Application", "host, storage, network"),
    ("tosca.nodes.network.Port", "binding, link"), ("tosca.nodes.SoftwareComponent", None)])
def test_a_normative_template_alone_is_refused_where_unfurl_refuses_it(
        tmp_path: Path, type_name: str, missing: str | None) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(template("app", type_name)))
    git(tmp_path, "init", "-q")
    result = run_in_process(tmp_path, "plan")
    if missing is None:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode != 0
        assert f"node template 'app' is missing requirements: {missing}" in result.stderr


def test_a_database_is_hosted_on_the_one_dbms_there_is(tmp_path: Path) -> None:
    (tmp_path / "ensemble.yaml").write_text(ensemble(
        template("db", "tosca.nodes.Database") + template("dbms", "tosca.nodes.DBMS")))
    git(tmp_path, "init", "-q")
    result = run_in_process(tmp_path, "plan")
    assert result.returncode == 0, result.stderr
    # the DBMS first: the Database is hosted on it
    assert result.stdout.index("dbms (add)") < result.stdout.index("db (add)"), result.stdout
