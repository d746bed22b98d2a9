"""Hostile ensembles: each attempt fails with one clear message, exit 1, and no write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import Invoke, Project, ensemble_yaml, git, shell_node
from unfurl_lite.load.guard import MAX_DEPTH

HEAD = ensemble_yaml(shell_node("app", "%s"))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ ''.__class__.__mro__ }}", "not allowed by the sandbox"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "not allowed by the sandbox"),
        ("{{ joiner.__globals__ }}", "not allowed by the sandbox"),
        ("{{ cycler.__init__.__globals__.os.popen('id').read() }}", "not allowed"),
        ("{{ self.__init__.__globals__ }}", "not allowed by the sandbox"),
        ("{{ SELF.__class__ }}", "not allowed by the sandbox"),
        ("{{ ''|attr('__class__') }}", "not allowed by the sandbox"),
        ("{% include '/etc/passwd' %}", "no loader"),
        ("{% import 'os' as os %}{{ os.system('id') }}", "no loader"),
        ("{{ file('/etc/passwd') }}", "absolute path outside the project"),
        ("{{ file('../../../../etc/passwd') }}", "escapes the project directory"),
        ("{{ 'x' * 100000000 }}", "too large"),
        ("{{ 2 ** 100000 }}", "exponent"),
        ("{{ range(100000000) | list }}", "too large"),
        ("{{ SELF.attributes.update({'a': 1}) }}", "not allowed"),
    ],
)
def test_template_escape_fails_cleanly(
    project: Project, invoke: Invoke, template: str, expected: str
) -> None:
    project.write(HEAD % repr(template).replace("\\\\", "\\"))
    before = _snapshot(project.root)
    commits = project.commits()
    result = invoke("deploy", "--approve", "--no-commit")
    assert result.exit_code != 0
    assert expected in result.output
    assert "Traceback" not in result.output
    assert "root:" not in result.output  # nothing of /etc/passwd
    failed = [line for line in result.output.splitlines()
              if "failed" in line or "nothing was run" in line]
    assert failed, result.output
    # the failed task is recorded, but only in our own record files
    after = _snapshot(project.root)
    assert project.commits() == commits
    changed = {name for name in after if after[name] != before.get(name)}
    records = {n for n in after if n.startswith(("jobs/", "changes/"))}
    assert changed <= {"ensemble.yaml", "jobs.tsv"} | records


def test_a_refused_global_stops_the_job_before_it_runs(project: Project,
                                                       invoke: Invoke) -> None:
    """``lipsum`` (whose ``__globals__`` once led out of Jinja2's sandbox) is refused by
    name before anything runs."""
    project.write(HEAD % repr("{{ lipsum.__globals__ }}"))
    before = _snapshot(project.root)
    result = invoke("deploy", "--approve", "--no-commit")
    assert result.exit_code == 1
    assert "Jinja2's template global 'lipsum' is not supported" in result.output
    assert "Traceback" not in result.output
    assert _snapshot(project.root) == before


def test_file_reads_inside_the_project(project: Project, invoke: Invoke) -> None:
    (project.root / "conf").mkdir()
    (project.root / "conf" / "motd.txt").write_text("hello from a file")
    project.write(HEAD % "\"echo '{{ file(\\\"conf/motd.txt\\\") }}'\"")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    job = next((project.root / "jobs").glob("job2*.yaml")).read_text()
    assert "hello from a file" in job


def test_file_symlink_pointing_out_is_refused(project: Project, invoke: Invoke) -> None:
    os.symlink("/etc", project.root / "etc-link")
    project.write(HEAD % "\"{{ file('etc-link/passwd') }}\"")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 64  # the task failed; the job ran and recorded that
    assert "through a symlink" in result.output
    assert "root:" not in result.output


YAML_ATTACKS = {
    "alias bomb": "a: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
        for i in range(8)
    ),
    "deep flow nesting": "x: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep block nesting": "x:\n" + "".join("  " * i + f"k{i}:\n"
                                            for i in range(1, MAX_DEPTH + 50)),
    "non-string key": "spec:\n  1: x\n",
    "complex key": "? [a, b]\n: c\n",
    "duplicate key": "spec: {}\nspec: {}\n",
    "python tag": "spec: !!python/object/apply:os.system ['echo pwned']\n",
    "custom tag": "spec: !include /etc/passwd\n",
    "unknown field": "spec:\n  service_templat: {}\n",
    "wrong type": "spec:\n  service_template: 5\n",
}
EXPECTED = {
    "alias bomb": "alias bomb",
    "deep flow nesting": "levels deep",
    "deep block nesting": "levels deep",
    "non-string key": "not a string",
    "complex key": "not a string",
    "duplicate key": "duplicate key",
    "python tag": "unsupported YAML value",
    "custom tag": "unsupported YAML value",
    "unknown field": "did you mean 'service_template'",
    "wrong type": "expected an object",
}


@pytest.mark.parametrize("name", sorted(YAML_ATTACKS))
def test_hostile_yaml_is_refused_without_writing(
    project: Project, invoke: Invoke, name: str
) -> None:
    project.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\n" + YAML_ATTACKS[name])
    before = _snapshot(project.root)
    for command in ("validate", "plan", "deploy"):
        result = invoke(command, *(["--approve"] if command == "deploy" else []))
        assert result.exit_code == 1, (command, result.output)
        assert EXPECTED[name] in result.output
        assert "Traceback" not in result.output
    assert _snapshot(project.root) == before
    assert not (project.root / "pwned").exists()


@pytest.mark.parametrize(
    "content", [b"\x89PNG\r\n\x1a\n\x00\x00garbage", b"a: \xff\xfe\xfd", b"\x00" * 100]
)
def test_binary_garbage_is_refused(project: Project, invoke: Invoke, content: bytes) -> None:
    project.ensemble.write_bytes(content)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "UTF-8" in result.output or "binary" in result.output


def test_huge_file_is_refused(project: Project, invoke: Invoke) -> None:
    from unfurl_lite.load import yamlio

    with open(project.ensemble, "w") as handle:
        handle.write("apiVersion: unfurl/v1alpha1\nkind: Ensemble\n#")
        handle.truncate(yamlio.MAX_FILE_BYTES + 10)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "too large" in result.output


@pytest.mark.parametrize(
    "include", ["/etc/passwd", "../../../../etc/passwd", "../outside.yaml", "link/passwd"]
)
def test_include_cannot_leave_the_project(project: Project, invoke: Invoke, include: str) -> None:
    (project.root.parent / "outside.yaml").write_text("spec: {}\n")
    os.symlink("/etc", project.root / "link")
    project.write(
        "apiVersion: unfurl/v1alpha1\nkind: Ensemble\n"
        f"spec:\n  +include: {include}\n  service_template: {{}}\n"
    )
    result = invoke("validate")
    assert result.exit_code == 1
    assert "project" in result.output
    assert "root:" not in result.output


def test_jobs_log_outside_the_project_is_refused(project: Project, invoke: Invoke) -> None:
    outside = project.root.parent / "stolen.tsv"
    project.write((HEAD % "echo hi") + "jobsLog: ../stolen.tsv\n")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1
    assert "jobsLog '../stolen.tsv' escapes the project directory" in result.output
    assert "--allow-outside-paths" in result.output
    assert not outside.exists()
    assert "status" not in project.ensemble.read_text().split("jobsLog")[0].split("spec:")[0]


def test_committed_jobs_symlink_is_refused(project: Project, invoke: Invoke) -> None:
    elsewhere = project.root.parent / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, project.root / "jobs")
    git(project.root, "add", "jobs")
    project.write(HEAD % "echo hi")
    result = invoke("deploy", "--approve")
    assert result.exit_code == 1
    assert "the jobs folder 'jobs' escapes the project directory" in result.output
    assert list(elsewhere.iterdir()) == []
    assert not (project.root / "jobs.tsv").exists()


def test_shell_cwd_is_confined_unless_allowed(
    project: Project, invoke: Invoke, tmp_path: Path
) -> None:
    project.write(
        HEAD % "pwd"
        + "                    cwd: ..\n"
    )
    refused = invoke("deploy", "--approve", "--no-commit")
    assert refused.exit_code != 0
    assert "cwd '..' escapes the project directory" in refused.output
    allowed = invoke("deploy", "--approve", "--allow-outside-paths", "--dirty=ok")
    assert allowed.exit_code == 0, allowed.output
    job = sorted((project.root / "jobs").glob("job2*.yaml"))[-1].read_text()
    assert f"stdout: \"{project.root.parent.resolve()}\\n\"" in job


def test_include_with_nul_byte_is_an_error(project: Project, invoke: Invoke) -> None:
    """Found by the fuzz test: a NUL in an include name used to raise ValueError."""
    project.write('apiVersion: unfurl/v1alpha1\nkind: Ensemble\nspec:\n  +include: "a\\0b"\n')
    result = invoke("validate")
    assert result.exit_code == 1
    assert "NUL byte" in result.output
