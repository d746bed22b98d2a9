"""Secrets attacked: an instance name derived from a secret is refused (a name is a key of
the status, never redacted); ``export`` redacts sensitive inputs, from an included,
git-ignored file too; base64 of a secret is redacted at any alignment."""

from __future__ import annotations

import base64
import json
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples, git
from unfurl_lite.security.redaction import REDACTED, redact_text

SECRET = "Zq9-hidden-s3cret"

NAMED = textwrap.dedent("""\
    apiVersion: unfurl/v1alpha1
    kind: Ensemble
    spec:
      service_template:
        topology_template:
          inputs:
            pw: {{type: string, metadata: {{sensitive: true}}, default: {secret}}}
          node_templates:
            app:
              type: tosca.nodes.Root
              interfaces:
                Standard:
                  operations:
                    create:
                      implementation: {implementation}
                      inputs:
                        command: {command}
                        resultTemplate:
                          - name: {name}
                            template: app
    """)

NAMES = {
    "tainted": ("Shell", "echo hi", '"vm-{{ TOPOLOGY.inputs.pw | upper }}"'),
    "from-stdout": ("Shell", f"echo {SECRET}", '"{{ stdout | trim }}"'),
    "reversed": ("Shell", "echo hi", '"{{ TOPOLOGY.inputs.pw | reverse | join }}"'),
    "b64-of-output": ("Shell", f"echo {base64.b64encode(SECRET.encode()).decode()}",
                      '"{{ stdout | trim }}"'),
}


def _records(project, since: int) -> str:
    """Everything jobs wrote: the records, the status, and the commits after ``since``."""
    files = [p for p in project.root.rglob("*") if p.is_file()
             and p.relative_to(project.root).parts[0] in ("jobs", "changes", "jobs.tsv")]
    text = "".join(p.read_text(errors="replace") for p in files)
    status = project.ensemble.read_text().partition("\nstatus:")[2]
    new = len(project.commits()) - since
    log = git(project.root, "log", "-p", f"-{new}") if new else ""
    return text + status + log


@pytest.mark.parametrize("how", list(NAMES))
def test_an_instance_name_derived_from_a_secret_is_refused(project, invoke, how) -> None:
    implementation, command, name = NAMES[how]
    project.write(NAMED.format(secret=SECRET, implementation=implementation,
                               command=command, name=name))
    since = len(project.commits())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64
    assert "may not be derived from a secret" in result.output
    shown = "".join(invoke(*c).output for c in (("status",), ("plan",), ("graph",),
                                                  ("status", "--json"), ("history",)))
    for leaked in (SECRET, SECRET.upper(), SECRET[::-1]):
        assert leaked not in result.output + shown
        assert leaked not in _records(project, since)
    assert set(project.status()) == {"app"}


def test_a_plain_name_from_a_resulttemplate_is_still_recorded(project, invoke) -> None:
    project.write(NAMED.format(secret=SECRET, implementation="Shell", command="echo vm-7",
                               name='"{{ stdout | trim }}"'))
    assert invoke("deploy", "--approve").exit_code == 0
    assert "vm-7" in project.status()


def test_a_python_operation_reporting_a_secret_name_is_refused(project, invoke) -> None:
    (project.root / "discover_op.py").write_text(textwrap.dedent(f"""\
        def run(ctx):
            return {{"resources": [{{"name": "db-{SECRET}", "template": "app"}}]}}
        """))
    project.write(NAMED.format(secret=SECRET, implementation="{className: 'discover_op:run'}",
                               command="unused", name="ignored").replace(
        "                    resultTemplate:\n"
        "                      - name: ignored\n                        template: app\n", ""))
    since = len(project.commits())
    result = invoke("deploy", "--approve")
    assert "may not be derived from a secret" in result.output, result.output
    assert SECRET not in _records(project, since)


def test_export_redacts_a_sensitive_input_from_an_ignored_include(project, invoke) -> None:
    (project.root / ".gitignore").write_text("secrets.yaml\n")
    (project.root / "secrets.yaml").write_text(f"inputs:\n  db_password: {SECRET}\n")
    project.write(textwrap.dedent(f"""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          +include: secrets.yaml
          service_template:
            node_types:
              Db:
                derived_from: tosca.nodes.Root
                properties:
                  admin: {{type: string, metadata: {{sensitive: true}}}}
            topology_template:
              inputs:
                db_password: {{type: string, metadata: {{sensitive: true}}}}
                pin: {{type: integer, metadata: {{sensitive: true}}, default: 987654}}
                region: {{type: string, default: eu-west}}
              node_templates:
                db:
                  type: Db
                  properties:
                    admin: literal-admin-pw
                    url: "db://u:{{{{ TOPOLOGY.inputs.db_password }}}}@host"
                    note: mentions {SECRET} in passing
        """))
    for fmt in ("yaml", "json"):
        result = invoke("export", "--format", fmt)
        assert result.exit_code == 0, result.output
        for leaked in (SECRET, "987654", "literal-admin-pw"):
            assert leaked not in result.output
        assert REDACTED in result.output and "eu-west" in result.output
        assert "TOPOLOGY.inputs.db_password" in result.output  # an expression is kept
    exported = json.loads(invoke("export", "--format", "json").output)
    assert exported["spec"]["inputs"]["db_password"] == REDACTED


def test_export_redacts_a_sensitive_map_or_list_whole_and_a_credentials_secrets(
        project, invoke) -> None:
    project.write(textwrap.dedent(f"""\
        apiVersion: unfurl/v1alpha1
        kind: Ensemble
        spec:
          service_template:
            node_types:
              App:
                derived_from: tosca.nodes.Root
                properties:
                  conn: {{type: map, metadata: {{sensitive: true}}}}
                  keys: {{type: list, metadata: {{sensitive: true}}}}
                  login: {{type: tosca.datatypes.Credential}}
                  fetched: {{type: map, metadata: {{sensitive: true}}}}
                  pointed: {{type: map, metadata: {{sensitive: true}}}}
            topology_template:
              node_templates:
                app:
                  type: App
                  properties:
                    conn: {{user: admin, password: map-{SECRET}}}
                    keys: [list-{SECRET}]
                    login: {{user: carol, token: cred-{SECRET}}}
                    fetched: {{password: {{get_env: DB_PASSWORD}}}}
                    pointed: {{password: {{ref: "::vault::password"}}}}
        """))
    result = invoke("export", "--format", "json")
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    properties = json.loads(result.output)["spec"]["service_template"][
        "topology_template"]["node_templates"]["app"]["properties"]
    assert properties["conn"] == REDACTED and properties["keys"] == REDACTED
    assert properties["login"] == {"user": "carol", "token": REDACTED}
    assert properties["fetched"] == {"password": {"get_env": "DB_PASSWORD"}}  # where, not what
    assert properties["pointed"] == {"password": {"ref": "::vault::password"}}


@settings(max_examples=examples(300))
@given(secret=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                      min_size=8, max_size=40),
       prefix=st.binary(max_size=9), suffix=st.binary(max_size=9),
       urlsafe=st.booleans())
def test_base64_of_a_secret_is_redacted_at_any_alignment(secret, prefix, suffix,
                                                         urlsafe) -> None:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    raw = secret.encode("utf-8")
    encoded = encode(prefix + raw + suffix).decode()
    redacted = redact_text(f"Authorization: Basic {encoded}", {secret})
    assert REDACTED in redacted
    left, _, right = redacted.removeprefix("Authorization: Basic ").partition(REDACTED)
    # what is left besides the marker encodes at most the edges: the prefix (and suffix)
    # and the one group each side it shares with the secret
    assert len(left) <= len(encode(prefix).decode()) + 4
    assert len(right) <= len(encode(suffix).decode()) + 8
    inner = raw[2:-2]
    assert len(inner) < 3 or inner not in base64.b64decode(
        left[: len(left) // 4 * 4].replace("-", "+").replace("_", "/") or "")


def test_http_basic_auth_of_a_password_is_redacted() -> None:
    password = "s3cr3t-Passw0rd!"
    header = base64.b64encode(f"user:{password}".encode()).decode()
    text = redact_text(f"curl -H 'Authorization: Basic {header}'", {password})
    assert header not in text and REDACTED in text
