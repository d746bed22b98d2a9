"""ensemble.yaml is written whatever its layout (issue 26 §1): the byte-preserving writer
where it can, ruamel's round trip (said once) or the plain data where it cannot, never a
refusal after operations ran; values that are not valid text are recorded escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, git, run_in_process, run_unfurl
from unfurl_lite.load.jobslog import read_jobs_tsv
from unfurl_lite.record.statusfile import STATUS_SECTIONS, users_part

FLOW = ensemble_yaml("""\
    n: {type: tosca:Root, interfaces: {Standard: {create: echo hi}}}
    m: {type: tosca:Root, properties: {urls: [ https://, x ], c: { eval: ::root::inputs::cpus }},
        interfaces: {Standard: {create: "echo {{ SELF.c }}", delete: echo bye}}}
""").replace("      node_templates:", "      inputs:\n        cpus: {type: integer, default: 2}\n"
             "      node_templates:")


def test_flow_style_with_colons_is_recorded_and_kept_byte_for_byte(project: Project,
                                                                   invoke: Invoke) -> None:
    project.write(FLOW)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    text = project.ensemble.read_text()
    assert text.startswith(FLOW)
    assert project.local("n") == "ok" and project.local("m") == "ok"
    # the type as Unfurl records it: tosca:Root spelled out
    assert "on instance n (type tosca.nodes.Root, status ok)" in \
        (project.root / "jobs.tsv").read_text()
    again = invoke("deploy", "--approve")
    assert "Nothing to do" in again.output and again.exit_code == 0


def test_crlf_line_ends_are_kept_and_the_status_gets_them(project: Project,
                                                          invoke: Invoke) -> None:
    text = FLOW.replace("\n", "\r\n")
    project.ensemble.write_bytes(text.encode())
    git(project.root, "add", "ensemble.yaml")
    git(project.root, "commit", "-q", "-m", "crlf")
    assert invoke("deploy", "--approve").exit_code == 0
    written = project.ensemble.read_bytes()
    assert written.startswith(text.encode())
    assert b"\n" not in written.replace(b"\r\n", b"")  # every line ends CRLF
    assert project.local("n") == "ok"
    assert "Nothing to do" in invoke("deploy", "--approve").output


def test_a_byte_order_mark_is_kept_and_only_the_status_rewritten(
    project: Project, invoke: Invoke, caplog: pytest.LogCaptureFixture
) -> None:
    text = "\ufeff" + FLOW.replace("\n", "\r\n")  # as a Windows editor saves it
    project.ensemble.write_bytes(text.encode())
    git(project.root, "add", "ensemble.yaml")
    git(project.root, "commit", "-q", "-m", "bom")
    assert invoke("deploy", "--approve").exit_code == 0
    assert project.ensemble.read_bytes().startswith(text.encode())
    assert "rewritten" not in caplog.text
    assert project.local("m") == "ok"
    assert "Nothing to do" in invoke("deploy", "--approve").output


def test_a_layout_only_the_round_trip_writes_is_said_once(
    project: Project, invoke: Invoke, caplog: pytest.LogCaptureFixture
) -> None:
    project.write(FLOW + "status: {}  # the jobs write here\n")
    assert invoke("deploy", "--approve").exit_code == 0
    assert caplog.text.count("rewritten by ruamel's round trip") == 1
    assert project.local("m") == "ok"
    assert users_part(project.ensemble.read_text(), STATUS_SECTIONS) == \
        users_part(FLOW, STATUS_SECTIONS)
    caplog.clear()
    assert invoke("undeploy", "--approve").exit_code == 0
    assert "round trip" not in caplog.text  # the file is in ruamel's layout now
    assert project.local("m") == "absent"


def test_a_layout_ruamel_cannot_write_back_is_recorded_from_its_data(
    project: Project, invoke: Invoke, caplog: pytest.LogCaptureFixture
) -> None:
    """ruamel folds a long flow mapping inside a plain key ("key with\\n space:"), which
    no parser reads back: the data is written afresh instead."""
    long = ", ".join(f"'k{i}': \"{'é' * 12}\"" for i in range(4))
    text = ensemble_yaml(f"""\
        n: {{type: tosca:Root, properties: {{{long}, key with space: {{a: b}}}}, \
interfaces: {{Standard: {{create: echo hi}}}}}}
    """) + "status: {} # x\n"
    project.write(text)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.local("n") == "ok"
    assert users_part(project.ensemble.read_text(), STATUS_SECTIONS) == \
        users_part(text, STATUS_SECTIONS)
    assert "rewritten" in caplog.text


def test_preflight_refuses_before_anything_runs(project: Project, invoke: Invoke) -> None:
    project.write(ensemble_yaml("""\
        n: {type: tosca:Root, interfaces: {Standard: {create: touch ran}}}
    """))
    (project.root / "jobs.tsv").mkdir()
    result = run_in_process(project.root, "deploy", "--approve")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "jobsLog 'jobs.tsv' is a directory, not a file" in result.stderr
    assert not (project.root / "ran").exists()


OPS = '''\
def surrogate(ctx):
    return {"attributes": {"s": "x\\ud800y"}, "outputs": {"o": "\\udcff"}}


def fails(ctx):
    import os
    if not os.path.exists("fixed"):
        raise RuntimeError("not yet \\ud800")
'''


def test_lone_surrogates_are_recorded_escaped_also_on_resume(project: Project,
                                                             invoke: Invoke) -> None:
    project.write(OPS, name="ops.py")
    project.write(ensemble_yaml("""\
        a:
          type: tosca:Root
          properties: {p: "\\ud800"}
          interfaces: {Standard: {create: {implementation: {className: "ops:surrogate"}}}}
        b:
          type: tosca:Root
          requirements: [dependency: a]
          interfaces: {Standard: {create: {implementation: {className: "ops:fails"}}}}
    """))
    failed = invoke("deploy", "--approve")
    assert failed.exit_code == 64, failed.output
    text = project.ensemble.read_text()
    assert 's: "x\\uD800y"' in text
    job = next((project.root / "jobs").glob("job*.yaml")).read_text()
    assert '"\\uDCFF"' in job and '"x\\uD800y"' in job
    assert "not yet \\uD800" in job  # the failure's message too
    assert len(list(read_jobs_tsv(project.root / "jobs.tsv"))) == 3
    (project.root / "fixed").write_text("")
    resumed = invoke("resume")
    assert resumed.exit_code == 0, resumed.output
    assert project.local("a") == "ok" and project.local("b") == "ok"
    for path in [project.ensemble, project.root / "jobs.tsv",
                 *Path(project.root, "jobs").iterdir()]:
        path.read_bytes().decode("utf-8")  # every record is valid UTF-8


def test_binary_output_is_recorded_escaped(project: Project, invoke: Invoke) -> None:
    project.write(ensemble_yaml("""\
        n: {type: tosca:Root, interfaces: {Standard: {create: "printf 'ok \\\\377\\\\376 end'"}}}
    """))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    job = next((project.root / "jobs").glob("job*.yaml")).read_text()
    assert "ok \\xff\\xfe end" in job  # each byte that is not UTF-8 as \xNN


#: a locale that is not UTF-8 (as LANG=C gives Python without its UTF-8 mode)
ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


def test_a_locale_that_is_not_utf8_changes_nothing(project: Project) -> None:
    project.write(ensemble_yaml("""\
        n:
          type: tosca:Root
          properties: {p: "日本", q: "\\ud800"}
          interfaces:
            Standard:
              create:
                implementation: Shell
                inputs:
                  command: "echo café {{ SELF.p }} $GREETING"
                  env: {GREETING: "¡hola!"}
                  resultTemplate: {attributes: {out: "{{ stdout | trim }}"}}
    """))
    result = run_unfurl(project.root, "deploy", "--approve", env=ASCII_LOCALE)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert project.status()["n"]["attributes"]["out"] == "café 日本 ¡hola!"
    for command in (["status"], ["history"], ["deploy", "--approve"]):
        again = run_unfurl(project.root, *command, env=ASCII_LOCALE)
        assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert "Nothing to do" in again.stdout + again.stderr
