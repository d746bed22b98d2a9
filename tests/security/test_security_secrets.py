"""Secrets never written: the whole git history, every file and every line printed are
searched for each secret (and the forms jinja filters turn it into) after real jobs."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, git
from unfurl_lite.cli.main import COMMANDS

PASSWORD = "hunter2-PW-xyz"
API_KEY = "envsecret-QQQ-999"
PROP_SECRET = "tok-ABCDEF-123"  # a literal sensitive property: only the spec may hold it

ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      App:
        derived_from: tosca.nodes.Root
        properties:
          token:
            type: string
            metadata: {sensitive: true}
    topology_template:
      inputs:
        db_password:
          type: unfurl.datatypes.Sensitive
          default: {eval: {get_env: TEST_DB_PASSWORD}}
      node_templates:
        app:
          type: App
          properties:
            token: %(token)s
          interfaces:
            Standard:
              operations:
                create:
                  implementation: {className: Shell}
                  inputs:
                    command: >-
                      echo "pw={{ TOPOLOGY.inputs.db_password }}
                      {{ TOPOLOGY.inputs.db_password | upper }}
                      {{ TOPOLOGY.inputs.db_password | reverse }}";
                      echo "{{ SELF.token }}" >&2
                    resultTemplate: |
                      attributes:
                        seen: "{{ stdout | trim }}"
                configure:
                  implementation: {className: Shell}
                  inputs:
                    command: ["sh", "-c", "echo $API_KEY; echo key $API_KEY >&2; exit %(exit)s"]
                    env:
                      API_KEY: {eval: {get_env: TEST_API_KEY}}
            Install:
              operations:
                check:
                  implementation: {className: Shell}
                  inputs:
                    command: >-
                      echo {{ {'eval': 0} and TOPOLOGY.inputs.db_password | lower }};
                      echo "{{ SELF.token | title }}" | base64 >&2
"""

FORMS = [
    PASSWORD,
    PASSWORD.upper(),
    PASSWORD.lower(),
    PASSWORD[::-1],
    API_KEY,
    PROP_SECRET,
    PROP_SECRET.title(),
    base64.b64encode(PASSWORD.encode()).decode().rstrip("="),
]


def _history(root: Path) -> str:
    """Every version of every file ever committed, and every commit message."""
    log = git(root, "log", "--all", "-p", "--format=%H %s%n%b")
    revs = git(root, "rev-list", "--all").split()
    blobs = [
        subprocess.run(
            ["git", "grep", "-h", "-I", "-e", "", rev], cwd=root, capture_output=True, text=True
        ).stdout
        for rev in revs
    ]
    return log + "\n".join(blobs)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(errors="replace")
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def _spec_only(text: str) -> str:
    """ensemble.yaml's spec is the user's own text; everything after it is ours."""
    return text[text.index("\nstatus:") :] if "\nstatus:" in text else ""


def _assert_clean(where: str, text: str, forms: list[str]) -> None:
    for form in forms:
        assert form not in text, f"secret {form!r} leaked into {where}"


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_DB_PASSWORD", PASSWORD)
    monkeypatch.setenv("TEST_API_KEY", API_KEY)


def test_no_secret_in_history_files_or_output(
    project: Project, invoke: Invoke, secrets_env: None
) -> None:
    project.write(ENSEMBLE % {"token": PROP_SECRET, "exit": 0})
    printed: list[str] = []

    def run(*args: str) -> str:
        result = invoke(*args)
        printed.append(result.output)
        return result.output

    run("deploy", "--approve")
    assert project.local("app") == "ok"
    assert "<<REDACTED>>" in project.status()["app"]["attributes"]["seen"]
    run("check", "--approve")
    run("check", "--approve", "--json")
    # a failing deploy whose error message (from stderr) carries the secret
    project.write(ENSEMBLE % {"token": PROP_SECRET, "exit": 3})
    failed = run("deploy", "--approve", "--force", "--json")
    data = json.loads(failed[failed.index("{") :])
    assert data["state"] == "failed"
    assert any("key <<REDACTED>>" in (t["message"] or "") for t in data["tasks"])
    run("deploy", "--approve", "--force")
    for args in (["history"], ["history", "--json"], ["status"], ["status", "--json"]):
        if args[0] in COMMANDS:
            result = invoke(*args)
            assert result.exit_code == 0, result.output
            printed.append(result.output)
    if "show" in COMMANDS:
        for line in project.jobs_tsv():
            change_id = line.split("\t")[0]
            for args in (["show", change_id], ["show", change_id, "--json"]):
                result = invoke(*args)
                assert result.exit_code == 0, result.output
                printed.append(result.output)

    files = _files(project.root)
    assert any(name.startswith("changes/") for name in files)
    for name, text in files.items():
        if name == "ensemble.yaml":
            _assert_clean("ensemble.yaml status", _spec_only(text), FORMS)
            _assert_clean("ensemble.yaml", text, [f for f in FORMS if PROP_SECRET not in f])
        else:
            _assert_clean(name, text, FORMS)
    history = _history(project.root)
    _assert_clean("git history", history, [f for f in FORMS if PROP_SECRET not in f])
    _assert_clean("console output", "\n".join(printed), FORMS)


def test_the_command_still_gets_the_real_secret(
    project: Project, invoke: Invoke, secrets_env: None, tmp_path: Path
) -> None:
    out = tmp_path / "seen.txt"
    project.write(
        f"""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            topology_template:
              inputs:
                pw: {{type: string, metadata: {{sensitive: true}}, default: {{eval: {{get_env: TEST_DB_PASSWORD}}}}}}
              node_templates:
                app:
                  type: tosca.nodes.Root
                  interfaces:
                    Standard:
                      operations:
                        create: printf '%s' "{{{{ TOPOLOGY.inputs.pw }}}}" > {out}
        """  # noqa: E501
    )
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert out.read_text() == PASSWORD
    job_yaml = next((project.root / "jobs").glob("job2*.yaml")).read_text()
    assert "printf '%s' \"<<REDACTED>>\"" in job_yaml
