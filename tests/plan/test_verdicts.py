"""A redeploy with nothing to do is answered from the plan remembered for exactly the
ensemble's text (plan/verdicts.py), without building the model; and never when the text,
the options, the records or the environment could make the plan differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Invoke, Project, ensemble_yaml, shell_node, suppressed
from unfurl_lite.load import builder, loader


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every model built from plain data while the test runs (its file's name)."""
    built: list[str] = []
    real = builder.build

    def counting(file: Path, text: str, data: dict) -> object:
        built.append(file.name)
        return real(file, text, data)

    monkeypatch.setattr(loader, "build", counting)
    return built


def remembered(parse_cache: Path) -> list[Path]:
    return sorted(parse_cache.glob("plan-*.marshal"))


THREE = ensemble_yaml(shell_node("a", "exit 0") + shell_node("b", "exit 0")
                      + shell_node("c", "exit 0"))


def test_a_redeploy_after_a_deploy_answers_without_building_the_model(
    project: Project, invoke: Invoke, parse_cache: Path, builds: list[str]
) -> None:
    project.write(THREE)
    first = invoke("deploy", "--approve")
    assert first.exit_code == 0, first.output
    assert remembered(parse_cache)  # the deploy planned the next one on what it wrote
    builds.clear()
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0
    assert builds == []
    assert "Nothing to do." in again.output
    for name in "abc":
        assert f"{name}: skipped: already ok" in again.output
    for entry in remembered(parse_cache):
        entry.unlink()
    planned = invoke("deploy", "--approve")  # the same, found the long way
    assert builds == ["ensemble.yaml"]
    assert planned.output == again.output


def test_an_edited_status_is_planned_again(
    project: Project, invoke: Invoke, builds: list[str]
) -> None:
    project.write(THREE)
    assert invoke("deploy", "--approve").exit_code == 0
    text = project.ensemble.read_text()
    edited = text.replace("local: ok\n        state: created", "local: absent\n"
                          "        state: deleted", 1)  # as if someone removed it
    assert edited != text
    project.ensemble.write_text(edited)
    builds.clear()
    result = invoke("deploy", "--approve", "--dirty=ok")
    assert builds == ["ensemble.yaml"]
    assert "a (missing)" in result.output
    assert "Nothing to do." not in result.output


def test_other_options_are_planned_for_themselves(
    project: Project, invoke: Invoke, builds: list[str]
) -> None:
    project.write(THREE)
    assert invoke("deploy", "--approve").exit_code == 0
    builds.clear()
    forced = invoke("deploy", "--approve", "--force")
    assert builds == ["ensemble.yaml"]
    assert "Nothing to do." not in forced.output
    assert project.commits()[0].startswith("Updating status for job")


def test_a_failed_job_leaves_nothing_remembered(
    project: Project, invoke: Invoke, parse_cache: Path, builds: list[str]
) -> None:
    project.write(ensemble_yaml(shell_node("a", "exit 0") + shell_node("b", "exit 1")))
    assert invoke("deploy", "--approve").exit_code == 64  # --jobexitcode's default: error
    assert remembered(parse_cache) == []
    builds.clear()
    again = invoke("deploy", "--approve")
    assert builds == ["ensemble.yaml"]
    assert "Nothing to do." not in again.output


CONFIGURED = ensemble_yaml("""\
web:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      configure:
        implementation: Shell
        inputs:
          command: "echo {{ inputs.region }}"
          region: {eval: {get_env: VERDICT_REGION}}
""")


def test_a_plan_that_renders_inputs_is_never_remembered(
    project: Project, invoke: Invoke, parse_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Change detection renders a configure's inputs now: what they read (here an
    environment variable) can change while the text does not."""
    monkeypatch.setenv("VERDICT_REGION", "north")
    project.write(CONFIGURED)
    assert invoke("deploy", "--approve").exit_code == 0
    assert "Nothing to do." in invoke("deploy", "--approve").output
    assert remembered(parse_cache) == []
    monkeypatch.setenv("VERDICT_REGION", "south")
    result = invoke("deploy", "--approve")
    assert "Nothing to do." not in result.output
    assert "web (reconfigure)" in result.output


def test_a_merged_ensemble_is_never_remembered(
    project: Project, invoke: Invoke, parse_cache: Path
) -> None:
    project.write("properties: {size: 1}\n", name="extra.yaml")
    project.write(ensemble_yaml(shell_node("a", "exit 0").replace(
        "  type: tosca.nodes.Root\n", "  type: tosca.nodes.Root\n  +include: extra.yaml\n")))
    assert invoke("deploy", "--approve").exit_code == 0
    assert "Nothing to do." in invoke("deploy", "--approve").output
    assert remembered(parse_cache) == []


def test_a_damaged_entry_is_ignored(
    project: Project, invoke: Invoke, parse_cache: Path, builds: list[str]
) -> None:
    project.write(THREE)
    assert invoke("deploy", "--approve").exit_code == 0
    for entry in remembered(parse_cache):
        entry.write_bytes(b"\x00garbage")
    builds.clear()
    result = invoke("deploy", "--approve")
    assert builds == ["ensemble.yaml"]
    assert "Nothing to do." in result.output


#: each node: its operation's exit code in the first deploy
_OUTCOMES = st.lists(st.sampled_from(["exit 0", "exit 1"]), min_size=1, max_size=4)


@settings(max_examples=4,
          suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))
@given(outcomes=_OUTCOMES, force=st.booleans())
def test_a_remembered_plan_is_what_planning_finds(
    outcomes: list[str], force: bool, tmp_path_factory: pytest.TempPathFactory,
    template_repo: Path, invoke_in: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the first job did, the next deploy's output is the same whether it was
    answered from memory or planned from the loaded ensemble (the property behind the
    shortcut: a few examples of a few jobs each, about a second and a half)."""
    import shutil

    root = tmp_path_factory.mktemp("verdict") / "project"
    shutil.copytree(template_repo, root, symlinks=True)
    cache = root.parent / "cache"
    monkeypatch.setenv("UNFURL_LITE_CACHE", str(cache))
    project = Project(root)
    project.write(ensemble_yaml("".join(
        shell_node(f"n{i}", command) for i, command in enumerate(outcomes))))
    run = invoke_in  # type: ignore[assignment]
    run(root, "deploy", "--approve")  # type: ignore[operator]
    args = ["deploy", "--approve", "--dryrun", *(["--force"] if force else [])]
    first = run(root, *args)  # type: ignore[operator]
    second = run(root, *args)  # type: ignore[operator]
    shutil.rmtree(cache)
    planned = run(root, *args)  # type: ignore[operator]
    assert _plan_part(first.output) == _plan_part(second.output) == _plan_part(planned.output)
    assert ("Nothing to do." in second.output) == (not force and "exit 1" not in outcomes)


def _plan_part(output: str) -> list[str]:
    """The plan as shown, and whether there was nothing to do (a job's lines name it)."""
    shown = []
    for line in output.splitlines():
        if line.startswith(("Job ", "[")):
            break
        shown.append(line)
    return shown


def hook(project: Project, name: str, body: str) -> None:
    path = project.root / ".git" / "hooks" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_the_next_deploy_is_planned_while_git_commits_the_job(
    project: Project, invoke: Invoke, parse_cache: Path, builds: list[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's commit is another process's work: the next deploy's plan is made meanwhile,
    in a thread of its own. The pre-commit hook lets the commit go on only once the plan
    has been made (it gives up after a minute, failing the commit, so an overlap that does
    not happen fails the test instead of hanging it); it is remembered once committed."""
    from unfurl_lite.plan import verdicts

    planned = project.root.parent / "planned"
    real = verdicts.next_plan
    threads: list[str] = []

    def next_plan(*args: object) -> object:
        import threading

        threads.append(threading.current_thread().name)
        try:
            return real(*args)  # type: ignore[arg-type]
        finally:
            planned.write_text("done")

    monkeypatch.setattr(verdicts, "next_plan", next_plan)
    project.write(THREE)
    hook(project, "pre-commit", f"i=0\nwhile [ ! -e '{planned}' ]; do\n"
         "  i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1\ndone\n")
    first = invoke("deploy", "--approve")
    assert first.exit_code == 0, first.output
    assert threads == ["unfurl-next-plan"]
    assert project.commits()[0].startswith("Updating status for job")
    assert remembered(parse_cache)
    builds.clear()
    again = invoke("deploy", "--approve")
    assert builds == [] and "Nothing to do." in again.output


def test_the_recorded_ensemble_is_kept_in_the_parse_cache_whether_the_commit_succeeds_or_not(
    project: Project, invoke: Invoke, parse_cache: Path
) -> None:
    """A job keeps its new ensemble.yaml in the parse cache while git commits it (not
    before git starts): the next command reads it warm, also when the commit failed."""
    from unfurl_lite.load import parsecache

    path = project.root / "ensemble.yaml"
    project.write(THREE)
    done = invoke("deploy", "--approve")
    assert done.exit_code == 0, done.output
    assert parsecache.get(path, path.read_text()) is not None
    project.write(ensemble_yaml("".join(shell_node(n, "exit 0") for n in "abcd")))
    hook(project, "pre-commit", "echo 'refused by the hook' >&2\nexit 1\n")
    failed = invoke("deploy", "--approve")
    assert failed.exit_code != 0 and "refused by the hook" in failed.output
    kept = parsecache.get(path, path.read_text())
    assert kept is not None and "d" in kept["data"]["status"]["instances"]


def test_a_job_whose_commit_fails_remembers_nothing(
    project: Project, invoke: Invoke, parse_cache: Path, builds: list[str]
) -> None:
    """The plan made during a commit that fails is dropped: the next deploy plans the
    long way (and so sees the records git does not have yet, as before)."""
    project.write(THREE)
    hook(project, "pre-commit", "echo 'refused by the hook' >&2\nexit 1\n")
    failed = invoke("deploy", "--approve")
    assert failed.exit_code != 0
    assert "git commit failed" in failed.output and "refused by the hook" in failed.output
    assert remembered(parse_cache) == []
    (project.root / ".git" / "hooks" / "pre-commit").unlink()
    builds.clear()
    again = invoke("deploy", "--approve", "--dirty=ok")
    assert builds == ["ensemble.yaml"]
    assert "Nothing to do." in again.output
