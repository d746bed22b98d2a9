"""The ensemble format reference documents only keys the schema knows."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import ROOT


def schema_keys(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                found.update(value)
            found |= schema_keys(value)
    elif isinstance(node, list):
        for item in node:
            found |= schema_keys(item)
    return found


def test_every_documented_key_is_in_the_schema():
    schema = json.loads((ROOT / "unfurl_lite" / "schema" / "ensemble.schema.json").read_text())
    known = schema_keys(schema)
    doc = (ROOT / "docs" / "ensemble-format.md").read_text()
    section = doc.split("## Merge directives")[0]
    documented = set(re.findall(r"^\| `([A-Za-z_]+)` \|", section, flags=re.M))
    assert len(documented) > 30
    assert documented - known == set()


# ------------------------------------------- what the docs say the program does, it does

IDENTITY = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"}


def _doc(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text().split())


def test_diff_of_one_changeid_shows_what_that_job_changed(project, invoke):
    from tests.conftest import ensemble_yaml, shell_node

    assert "`unfurl diff CHANGEID` shows what that job changed" in _doc("status-and-history.md")
    project.write(ensemble_yaml(shell_node("db", "echo db") + shell_node("app", "echo app")))
    assert invoke("deploy", "--approve", "--instance", "db").exit_code == 0
    assert invoke("deploy", "--approve").exit_code == 0
    first, second = sorted(j["changeId"] for j in json.loads(invoke("history", "--json").output))
    own = json.loads(invoke("diff", first, "--json").output)
    assert [c["instance"] for c in own["instances"]] == ["db"]  # not app, deployed later
    assert own["to"] == first
    text = invoke("diff", first).output
    assert f"What job {first} changed:" in text and "db: (none) -> ok/created" in text
    since = json.loads(invoke("diff", first, "now", "--json").output)
    assert [c["instance"] for c in since["instances"]] == ["app"]
    between = json.loads(invoke("diff", first, second, "--json").output)
    assert between["instances"] == since["instances"]


def test_every_init_puts_the_lock_file_in_gitignore(tmp_path, monkeypatch):
    from tests.conftest import run_in_process

    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    assert "`unfurl init` puts the lock file in `.gitignore`" in _doc("execution-model.md")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "ensemble.yaml").write_text(
        (ROOT / "unfurl_lite" / "examples" / "secrets" / "ensemble.yaml").read_text())
    (mine / ".gitignore").write_text("state/")  # its own, without the lock file
    for name, args in (("plain", ()), ("named", ("--from", "three-tier")),
                       ("path", ("--from", str(mine)))):
        result = run_in_process(tmp_path, "init", name, *args)
        assert result.returncode == 0, result.stderr
        ignored = (tmp_path / name / ".gitignore").read_text().splitlines()
        assert ".unfurl-lite.lock" in ignored, (name, ignored)
    assert "state/" in (tmp_path / "path" / ".gitignore").read_text().splitlines()


def test_scaled_instances_are_named_as_workflows_md_says(project, invoke):
    from tests.conftest import ensemble_yaml

    doc = _doc("workflows.md")
    assert "New instances are named `<template>_<n>` (first free n ≥ 1); the first " \
           "instance keeps the template's name." in doc
    project.write(ensemble_yaml("""\
    web:
      type: tosca.nodes.Root
      capabilities:
        scalable:
          properties: {default_instances: 3, max_instances: 5}
      interfaces:
        Standard:
          create: echo web
    """))
    assert invoke("deploy", "--approve").exit_code == 0
    assert sorted(project.status()) == ["web", "web_1", "web_2"]
    assert invoke("scale", "web", "--delta", "1", "--approve").exit_code == 0
    assert sorted(project.status()) == ["web", "web_1", "web_2", "web_3"]


def test_plan_takes_approve_and_quiet_as_the_docs_say(project, invoke):
    from tests.conftest import ensemble_yaml, shell_node

    assert "`check`/`discover`/`plan` with `--approve` | rejected | accepted and ignored" \
        in _doc("differences-from-unfurl.md")
    assert "Both work before the command (`unfurl -q deploy`) or after it" in _doc("terminal.md")
    project.write(ensemble_yaml(shell_node("db", "touch created")))
    for args in (("plan", "--approve"), ("plan", "-a"), ("plan", "-q"), ("-q", "plan"),
                 ("plan", "-v"), ("check", "--approve"), ("discover", "--approve")):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
    assert "1. Standard.create [add]" in invoke("plan", "--approve", "-q").output
    assert not (project.root / "created").exists()


def test_the_documented_python_operation_runs_as_documented(project, invoke):
    text = (ROOT / "docs" / "ensemble-format.md").read_text()
    section = text.split("### Python operations", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    template = re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1)
    (project.root / "ops.py").write_text(code)
    from tests.conftest import ENSEMBLE_HEAD

    project.write(ENSEMBLE_HEAD + template)
    assert "def create_bucket(ctx):" in code
    for key in ("target", "operation", "inputs", "properties", "attributes", "dryrun",
                "task_id"):
        assert f"`{key}`" in section
    dry = invoke("deploy", "--approve", "--dryrun")
    assert dry.exit_code == 0 and not (project.root / "demo-bucket.bucket").exists()
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.status()["bucket"]["attributes"]["bucket"] == "demo-bucket"
    assert (project.root / "demo-bucket.bucket").read_text() == "eu-west-1"
    job_files = "".join(p.read_text() for p in (project.root / "jobs").glob("job*.yaml"))
    assert "created: demo-bucket" in job_files
