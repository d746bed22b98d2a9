"""Issue 16, items 1-4 and 12: records that survive a crash without leaking, secrets
derived by templates, hostile templates and documents, exceptions and exits inside
operations, and the environment operations see."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Invoke, Project, ensemble_yaml, git, run_unfurl, shell_node
from tests.execution_helpers import kill9, start_unfurl, wait_for
from tests.security.test_security_secrets import _files, _history

PW = "hunter2-PW-xyz"
TOKEN = "ghp-TOKEN-4242abcd"


def _all_text(root: Path) -> str:
    return "\n".join(_files(root).values()) + _history(root)


# --- 1. kill -9 and resume: the journal never holds a secret, and is private


#: an ensemble whose input ``pw`` is a secret read from $TEST_PW
SECRET_PW_HEAD = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      inputs:
        pw:
          type: string
          metadata: {sensitive: true}
          default: {eval: {get_env: TEST_PW}}
"""


KILLED = SECRET_PW_HEAD + """\
        token:
          type: unfurl.datatypes.Sensitive
          default: {eval: {get_env: TEST_TOKEN}}
      node_templates:
        first:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                configure:
                  implementation: {className: Shell}
                  inputs:
                    command: >-
                      echo "pw={{ TOPOLOGY.inputs.pw }}"; echo "tok={{ get_env('TEST_TOKEN') }}" >&2
                    resultTemplate: |
                      attributes:
                        said: "{{ stdout | trim }}"
        second:
          type: tosca.nodes.Root
          requirements:
            - dependency: first
          interfaces:
            Standard:
              operations:
                configure: 'echo "{{ TOPOLOGY.inputs.pw }}"; touch %(marks)s/second.start; sleep 60'
"""


@pytest.mark.slow  # a real process, signalled or killed
def test_kill9_then_resume_commits_no_secret_and_the_journal_is_private(
    project: Project, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    project.write(KILLED % {"marks": marks})
    env = {"TEST_PW": PW, "TEST_TOKEN": TOKEN}
    os.environ.update(env)
    try:
        job = start_unfurl(project.root, "deploy", "--approve")
        try:
            wait_for(lambda: (marks / "second.start").exists(), job)
            jobs = project.root / "jobs"
            journals = sorted(jobs.glob("journal*"))
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [jobs, *journals]}
            texts = {p.name: p.read_text() for p in journals}
        finally:
            kill9(job)
        assert any(name.endswith(".events") for name in texts), "the running job keeps a journal"
        assert set(modes.values()) <= {0o700, 0o600}, modes
        for name, text in texts.items():
            assert PW not in text and TOKEN not in text, f"secret in {name} while running"
        # as an older version left it: resume must know the secrets without the journal
        [events] = (project.root / "jobs").glob("journal*.events")
        assert "<<REDACTED>>" in events.read_text()
        events.write_text(events.read_text().replace("<<REDACTED>>", PW))
        result = run_unfurl(project.root, "resume", env=env)
        assert result.returncode in (0, 64), result.stdout + result.stderr
        assert "Recording interrupted job" in "\n".join(project.commits())
    finally:
        for key in env:
            os.environ.pop(key, None)
    everything = _all_text(project.root)
    for secret in (PW, TOKEN, PW[::-1], TOKEN.upper()):
        assert secret not in everything


# --- 2. secrets derived by templates


DERIVED = SECRET_PW_HEAD + """\
      node_templates:
        app:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create:
                  implementation: {className: Shell}
                  inputs:
                    command: "true"
                    resultTemplate: |
                      attributes:
                        joined: "{{ TOPOLOGY.inputs.pw | list | join('-') }}"
                        sliced: "{{ TOPOLOGY.inputs.pw[2:9] }}"
                        length: {{ TOPOLOGY.inputs.pw | length }}
                configure:
                  implementation: {className: Shell}
                  inputs:
                    command: "true"
                    resultTemplate: "{{ ('{' ~ TOPOLOGY.inputs.pw[2:9] ~ '}').format() }}"
        printer:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create: >-
                  echo "{{ TOPOLOGY.inputs.pw | list | join('-') }}
                  {{ TOPOLOGY.inputs.pw[2:9] }} {{ TOPOLOGY.inputs.pw.replace('h', 'H')[1:] }}
                  {{ '%s' % TOPOLOGY.inputs.pw[1:6] }}"
"""


def test_values_derived_from_a_secret_are_redacted_everywhere(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_PW", PW)
    project.write(DERIVED)
    result = invoke("deploy", "--approve")
    assert "Traceback" not in result.output
    attributes = project.status()["app"]["attributes"]
    assert attributes["joined"] == "<<REDACTED>>"
    assert attributes["sliced"] == "<<REDACTED>>"
    job = sorted((project.root / "jobs").glob("job2*.yaml"))[-1].read_text()
    assert "KeyError" in job  # the template's error is the task's failure
    everything = _all_text(project.root) + result.output
    assert project.local("printer") == "ok"
    for piece in ("-".join(PW), PW[2:9], PW, PW.replace("h", "H")[1:], PW[1:6]):
        assert piece not in everything, piece


def test_get_env_in_templates_obeys_the_allow_list(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    project.write(ensemble_yaml(
        shell_node("app", "\"echo {{ get_env('GITHUB_TOKEN') | reverse }}\"")
        + shell_node("ok", "\"echo home={{ get_env('HOME') }}\"")
    ))
    result = invoke("deploy", "--approve")
    assert "Traceback" not in result.output
    assert "GITHUB_TOKEN" in result.output and "not passed to operations" in result.output
    # as Unfurl, a template that cannot render aborts the job before anything runs
    assert "Aborting job" in result.output
    assert project.status() == {} and project.jobs_tsv() == []
    everything = _all_text(project.root) + result.output
    assert TOKEN[::-1] not in everything and TOKEN not in everything


def test_get_env_of_a_variable_the_ensemble_declares_is_allowed(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TEST_PW", PW)
    out = tmp_path / "seen"
    command = f"\"printf %s {{{{ get_env('TEST_PW') }}}} > {out}\""
    nodes = "        " + shell_node("app", command).replace("\n", "\n        ")
    project.write(DERIVED.split("      node_templates:")[0] + "      node_templates:\n" + nodes)
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert out.read_text() == PW


@pytest.mark.parametrize("path", [".git/config", "./.git/../.git/config", ".git-credentials",
                                  ".netrc", "sub/.ssh/id_rsa"])
def test_file_refuses_git_and_credential_stores(
    project: Project, invoke: Invoke, path: str
) -> None:
    git(project.root, "config", "remote.origin.url", f"https://user:{TOKEN}@example.com/r.git")
    for name in (".git-credentials", ".netrc", "sub/.ssh/id_rsa"):
        target = project.root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"secret {TOKEN}\n")
    project.write(ensemble_yaml(shell_node("app", f"[\"echo\", \"{{{{ file('{path}') }}}}\"]")))
    result = invoke("deploy", "--approve", "--no-commit")
    assert "Traceback" not in result.output
    assert "credential" in result.output
    written = {n: t for n, t in _files(project.root).items()
               if n.startswith(("jobs", "changes", "ensemble"))}
    assert written
    assert TOKEN not in "\n".join(written.values()) + result.output


# --- 3. hostile templates and documents

BOMBS = {
    "indent": "{{ ('a\\n' * 500000) | indent(999999) }}",
    "center": "{{ ('a' * 900000) | center(999999) ~ ('a' * 900000) | center(999999) }}",
    "replace": "{{ ('a' * 900000) | replace('a', 'b' * 999999) }}",
    "percent": "{{ '%9999999999s' % 'a' }}",
    "format": "{{ '{:999999}{:999999}'.format('a', 'b') * 1 }}",
    "bigint": "{{ ((10 ** 1000) ** 1000) ** 1000 }}",
    "loop": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "output": "{% for i in range(100000) %}{{ 'x' * 999999 }}{% endfor %}",
    "mapped": "{{ ('a ' * 499999).split() | map('center', 999999) | list | length }}",
}


def _limited() -> None:
    limit = 1536 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_template_bombs_fail_their_task_with_bounded_memory(project: Project) -> None:
    nodes = "".join(shell_node(name, repr(f"echo {bomb}")) for name, bomb in BOMBS.items())
    nodes = nodes.replace("implementation: {className: Shell}\n          inputs:\n"
                          "            command: 'echo {% for i",
                          "implementation: {className: Shell}\n          timeout: 1\n"
                          "          inputs:\n            command: 'echo {% for i")
    project.write(ensemble_yaml(nodes))
    result = subprocess.run(
        [sys.executable, "-m", "unfurl_lite", "deploy", "--approve", "--json", "--jobs", "2"],
        cwd=project.root, capture_output=True, text=True, timeout=300, preexec_fn=_limited,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert "MemoryError" not in result.stdout + result.stderr
    import json

    report = json.loads(result.stdout[result.stdout.index("{"):])
    # as Unfurl, the job is aborted by its render errors before anything runs
    messages = {e.split(" ", 1)[0]: e for e in report["renderErrors"]}
    for name in BOMBS:
        assert any(w in messages[name] for w in ("too large", "too much", "longer than")), name
    assert all(t["state"] == "pending" for t in report["tasks"])
    assert project.status() == {} and project.jobs_tsv() == []


def test_string_anchor_repeated_by_aliases_is_refused_at_validate(project: Project) -> None:
    # 3000 copies of 64 KiB: ~4 times the loader's 50-million-character limit once expanded
    # (a bigger anchor only makes the YAML scanner slower, not the bomb more telling)
    big = "x" * (64 * 1024)
    aliases = ", ".join(["*big"] * 3000)
    text = ensemble_yaml(shell_node("app", "true")).replace(
        "spec:\n", f"metadata:\n  blob: &big {big}\n  copies: [{aliases}]\nspec:\n", 1)
    project.ensemble.write_text(text)
    result = run_unfurl(project.root, "validate", timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "characters" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_include_diamond_is_refused_quickly(project: Project) -> None:
    filler = "\n".join(f"  key{i}: value-{i}-{'v' * 40}" for i in range(80))
    for level in range(7):
        includes = "" if level == 6 else "".join(
            f"  +include-{n}: inc{level + 1}.yaml\n" for n in range(10))
        (project.root / f"inc{level}.yaml").write_text(f"data{level}:\n{includes}{filler}\n")
    text = ensemble_yaml(shell_node("app", "true")).replace(
        "spec:\n", "spec:\n  +include: inc0.yaml\n", 1)
    project.ensemble.write_text(text)
    result = run_unfurl(project.root, "validate", timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "expands to more than" in result.stdout + result.stderr


# --- 4. exceptions and exits inside templates and operations


def test_template_exception_aborts_the_job_and_the_next_job_runs_once(
    project: Project, invoke: Invoke, tmp_path: Path
) -> None:
    """As Unfurl: an exception while rendering aborts the job before anything runs (the
    render phase); fixed, the next deploy runs each task once."""
    counter = tmp_path / "ran"
    good = shell_node("good", f"\"echo x >> {counter}\"")
    project.write(ensemble_yaml(good + shell_node("bad", "\"echo {{ '{0}'.format() }}\"")))
    result = invoke("deploy", "--approve")
    assert "Traceback" not in result.output
    assert "IndexError" in result.output and "Aborting job" in result.output
    assert not counter.exists() and project.jobs_tsv() == []
    project.write(ensemble_yaml(good + shell_node("bad", "\"echo fixed\"")))
    assert invoke("deploy", "--approve").exit_code == 0
    invoke("deploy", "--approve")
    assert counter.read_text() == "x\n"  # the task that ran is never run again


PROBES = """\
import os
import sys


def leave(ctx):
    sys.exit(3)


def interrupt(ctx):
    raise KeyboardInterrupt


def environment(ctx):
    return {"attributes": {"aws": os.environ.get("AWS_SECRET_ACCESS_KEY", "none"),
            "unfurl": sorted(k for k in os.environ if k.startswith("UNFURL_"))}}
"""


def _python_node(name: str, function: str) -> str:
    return (f"{name}:\n  type: tosca.nodes.Root\n  interfaces:\n    Standard:\n"
            f"      operations:\n        create:\n"
            f"          implementation: {{className: \"probes:{function}\"}}\n")


def test_sys_exit_in_a_python_operation_fails_its_task_only(
    project: Project, invoke: Invoke, tmp_path: Path
) -> None:
    (project.root / "probes.py").write_text(PROBES)
    git(project.root, "add", "probes.py")
    counter = tmp_path / "ran"
    project.write(ensemble_yaml(
        shell_node("good", f"\"echo x >> {counter}\"")
        + _python_node("leaver", "leave") + _python_node("interrupter", "interrupt")
    ))
    result = invoke("deploy", "--approve")
    assert "Traceback" not in result.output
    assert "SystemExit" in result.output
    assert project.local("good") == "ok"
    assert project.local("leaver") == "unknown"  # it may have done something first
    assert project.local("interrupter") == "unknown"
    assert "KeyboardInterrupt" in result.output
    invoke("deploy", "--approve")
    assert counter.read_text() == "x\n"


# --- 12. the environment operations see


def test_only_the_projects_unfurl_variables_reach_operations(
    project: Project, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNFURL_CALLER_SECRET", "caller-value-777")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-value-888")
    (project.root / "probes.py").write_text(PROBES)
    git(project.root, "add", "probes.py")
    project.write(ensemble_yaml(
        shell_node("sh", "[\"sh\", \"-c\", \"env | grep ^UNFURL_ | sort\"]")
        + _python_node("py", "environment")
    ))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    job = sorted((project.root / "jobs").glob("job2*.yaml"))[-1].read_text()
    assert "UNFURL_JOB=" in job and "UNFURL_CHANGEID=" in job and "UNFURL_WORKER=" in job
    assert "caller-value-777" not in _all_text(project.root)
    py = project.status()["py"]["attributes"]
    assert py["aws"] == "none"
    assert py["unfurl"] == ["UNFURL_CHANGEID", "UNFURL_ENSEMBLE", "UNFURL_JOB", "UNFURL_WORKER"]
