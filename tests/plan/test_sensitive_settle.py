"""Sensitive inputs settle: right after a deploy, with nothing changed, no command sees a
change, however the secret is given and however an operation uses it (digests of secrets
are compared as digests, never as redacted text)."""

from __future__ import annotations

import json
import textwrap

import pytest

from unfurl_lite.api.overview import status as status_report

SOURCES = {
    "literal": "default: s3cr3t-value",
    "environment": "default: {eval: {get_env: [SETTLE_PW, env-s3cr3t]}}",
    "sensitive": "default: {eval: {sensitive: wrapped-s3cr3t}}",
    "spec-input": "",  # given under spec.inputs
}
USES = {
    "concat": 'command: {concat: ["echo ", {get_input: pw}, " | wc -c > out.txt"]}',
    "jinja": 'command: "echo {{ TOPOLOGY.inputs.pw }} | wc -c > out.txt"',
    "input": 'command: "echo {{ inputs.p }} | wc -c > out.txt"\np: {get_input: pw}',
    "property": 'command: "echo {{ SELF.secret }} | wc -c > out.txt"',
    "concat-sep": 'command: {eval: {concat: ["echo", {get_input: pw}, "| wc -c > out.txt"], '
                  'sep: " "}}',  # (TOSCA's join is not Unfurl's: refused by name)
    "eval-filter": "command: \"echo {{ {'get_input': 'pw'} | eval }} | wc -c > out.txt\"",
    "env": 'command: "printenv PW | wc -c > out.txt"\nenv: {PW: {get_input: pw}}',
    "sensitive-filter": 'command: "echo {{ \'x-\' ~ (TOPOLOGY.inputs.pw | sensitive) }} '
                        '| wc -c > out.txt"',
}


def ensemble(source: str, use: str) -> str:
    inputs = textwrap.indent(USES[use], " " * 20)
    given = "  inputs:\n    pw: spec-s3cr3t\n" if source == "spec-input" else ""
    return f"""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
{given}  service_template:
    topology_template:
      inputs:
        pw:
          type: string
          metadata: {{sensitive: true}}
          {SOURCES[source]}
      node_templates:
        db:
          type: tosca.nodes.Root
          properties:
            secret: {{get_input: pw}}
          interfaces:
            Standard:
              operations:
                create: echo created
                configure:
                  implementation: Shell
                  inputs:
{inputs}
"""


def nothing_changed(project, invoke) -> None:
    plan = invoke("plan")
    assert "nothing to do" in plan.output, plan.output
    report = status_report(project.root)  # what `status` and the dashboard show
    assert all(not row["drift"]["drifted"] for row in report["instances"]), report
    status = json.loads(invoke("status", "--json").output)
    assert all(not row["drift"]["changes"] for row in status["instances"])
    assert "inputs changed" not in invoke("status").output
    preview = invoke("update", "--preview")
    assert "nothing to do" in preview.output, preview.output


def _pairs() -> list[object]:
    """Every source with every use; the default run takes each use once and each source
    twice (a diagonal through the table), CI's slow pass the rest: a regression in how a
    secret is given or used shows in the default run, one in a rare pairing in CI."""
    sources = list(SOURCES)
    return [pytest.param(source, use, id=f"{source}-{use}",
                         marks=() if source == sources[i % len(sources)] else pytest.mark.slow)
            for i, use in enumerate(USES) for source in sources]


@pytest.mark.parametrize(("source", "use"), _pairs())
def test_a_deploy_after_a_deploy_plans_nothing(project, invoke, source, use) -> None:
    project.write(ensemble(source, use))
    assert invoke("deploy", "--approve").exit_code == 0
    commits = project.commits()
    nothing_changed(project, invoke)
    for _ in range(2):
        assert "Nothing to do" in invoke("deploy", "--approve").output
        assert "Nothing to do" in invoke("update", "--approve").output
        nothing_changed(project, invoke)
    assert project.commits() == commits
    secret = {"literal": "s3cr3t-value", "environment": "env-s3cr3t",
              "sensitive": "wrapped-s3cr3t", "spec-input": "spec-s3cr3t"}[source]
    written = ensemble(source, use).count(secret)  # the spec itself is the user's text
    assert project.ensemble.read_text().count(secret) == written
    assert all(secret not in p.read_text(errors="replace") for p in project.root.rglob("*")
               if p.is_file() and ".git" not in p.parts and p != project.ensemble)


def test_the_bundled_secrets_example_settles(tmp_path, invoke_in) -> None:
    assert invoke_in(tmp_path, "init", "demo", "--from", "secrets").exit_code == 0
    demo = tmp_path / "demo"
    assert invoke_in(demo, "deploy", "--approve").exit_code == 0
    status = invoke_in(demo, "status").output
    assert "inputs changed" not in status
    assert "nothing to do" in invoke_in(demo, "update", "--preview").output
    update = invoke_in(demo, "update", "--approve")
    assert "Nothing to do" in update.output and "delete" not in update.output


def test_a_changed_plain_input_beside_a_secret_is_still_seen(project, invoke) -> None:
    """Settling must not blind change detection: a plain value the command reads
    (concatenated with the secret) changing reconfigures."""
    text = ensemble("literal", "input").replace(
        "p: {get_input: pw}", "p: {get_input: pw}\nq: one".replace("\n", "\n" + " " * 20))
    text = text.replace("echo {{ inputs.p }}", "echo {{ inputs.q }} {{ inputs.p }}")
    project.write(text)
    assert invoke("deploy", "--approve").exit_code == 0
    nothing_changed(project, invoke)
    project.write(project.ensemble.read_text().replace("q: one", "q: two"))
    assert "reconfigure" in invoke("plan").output
